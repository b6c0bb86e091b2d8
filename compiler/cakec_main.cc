// cakec: the compiler's command line. Data (reports, receipts, source) to stdout; messages to
// stderr. Exit codes: 0 verified / compiled, 1 rejected or unknown (diagnostics printed),
// 2 usage or input error (malformed schedule, unknown target, missing toolchain).
#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

#include "CLI/CLI.hpp"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "analysis.h"
#include "artifact_store.h"
#include "compiler.h"
#include "portfolio.h"
#include "targets.h"

namespace cc = cake::compiler;
namespace report = cake::report;

namespace {

constexpr int kExitOk = 0;
constexpr int kExitRejected = 1;
constexpr int kExitInput = 2;

std::vector<std::string> FileLines(const std::string& path) {
  std::ifstream in(path);
  std::vector<std::string> lines;
  std::string line;
  while (std::getline(in, line)) lines.push_back(line);
  return lines;
}

// Ninja/clang style: FILE:LINE:COL: severity: CODE: message, the source line and a caret.
void PrintDiagnostic(const report::Diagnostic& d, const std::vector<std::string>& lines) {
  const auto& s = d.span();
  if (!s.file().empty()) std::cerr << s.file() << ":" << s.line() << ":" << s.column() << ": ";
  std::cerr << cc::SeverityName(d.severity()) << ": " << report::DiagId_Name(d.id()) << ": "
            << d.message();
  if (!d.op_id().empty()) std::cerr << " [op " << d.op_id() << "]";
  std::cerr << "\n";
  if (s.line() >= 1 && s.line() <= static_cast<int>(lines.size())) {
    std::cerr << "  " << lines[s.line() - 1] << "\n  "
              << std::string(std::max(0, s.column() - 1), ' ') << "^\n";
  }
  if (!d.resource().empty()) std::cerr << "  resource: " << d.resource() << "\n";
  if (!d.role().empty()) std::cerr << "  role: " << d.role() << "\n";
  if (!d.condition().empty()) std::cerr << "  condition: " << d.condition() << "\n";
  if (!d.evidence().empty()) std::cerr << "  evidence: " << d.evidence() << "\n";
  for (const std::string& r : d.repair()) std::cerr << "  repair: " << r << "\n";
}

std::string VerdictName(report::Verdict v) {
  switch (v) {
    case report::VERIFIED:
      return "verified";
    case report::REJECTED:
      return "rejected";
    case report::UNDETERMINED:
      return "unknown";
    default:
      return "not run";
  }
}

void PrintReport(const report::AnalysisReport& r, const std::string& file) {
  const auto lines = FileLines(file);
  for (const report::Diagnostic& d : r.diagnostics()) PrintDiagnostic(d, lines);
  std::cout << "schedule " << r.schedule_hash() << "\n";
  std::cout << "target   " << r.target() << " (PTX " << r.ptx_version() << ")\n";
  std::cout << "verdict  " << VerdictName(r.verdict()) << "\n";
  for (const report::PassResult& p : r.passes())
    std::cout << "  " << p.pass() << ": " << VerdictName(p.verdict()) << " ("
              << p.conditions_checked() << " checked, " << p.conditions_unknown() << " unknown)\n";
  const auto& res = r.resources();
  std::cout << "resources: shared " << res.shared_bytes() << " / " << res.shared_limit_bytes()
            << " B, threads " << res.threads_per_cta() << ", registers/thread estimate "
            << res.registers_per_thread_estimate() << " / " << res.registers_per_thread_limit()
            << "\n";
}

void PrintReceipt(const report::LoweringReceipt& r) {
  std::cout << "receipt  " << (r.outcome() == report::LoweringReceipt::PASS ? "PASS" : "FAIL")
            << " (cache " << (r.cache() == report::LoweringReceipt::HIT ? "hit" : "miss") << ")\n";
  std::cout << "kernel   " << r.kernel_symbol() << "\n";
  std::cout << "ptx      required " << r.ptx_version_required() << ", emitted "
            << r.ptx_version_emitted() << " (.target " << r.ptx_target_emitted() << ")\n";
  std::cout << "nvcc     " << r.toolchain().nvcc_path() << " (" << r.toolchain().nvcc_version()
            << ")\n";
  const auto& u = r.resources();
  std::cout << "usage    " << u.registers() << " registers, " << u.shared_dynamic_bytes()
            << " B dynamic shared, " << u.stack_frame_bytes() << " B stack, "
            << u.spill_store_bytes() << "/" << u.spill_load_bytes() << " B spill st/ld\n";
  for (const auto& f : r.selected_forms())
    std::cout << "  form " << f.op_id() << ": " << f.ptx() << " -> " << f.expected_sass() << " x"
              << f.observed_count() << "\n";
  std::cout << "cubin    sha256 " << r.cubin_sha256() << "\n";
  std::cout << "witness  " << r.witness() << "\n";
  std::cout << "artifact " << r.artifact_dir() << "\n";
  for (const auto& d : r.failures()) PrintDiagnostic(d, {});
}

// Resolves --target, or the module's declared arch when --target is absent.
bool ResolveTarget(const std::string& flag, const cc::ParsedModule& m, const cc::TargetInfo** out) {
  if (flag.empty()) {
    const cc::TargetInfo* t = cc::FindTarget(m.module.target().arch());
    if (t == nullptr) {
      std::cerr << "cakec: no --target given and the schedule declares none; admitted targets: "
                << cc::AdmittedTargetList() << "\n";
      return false;
    }
    *out = t;
    return true;
  }
  auto t = cc::TargetByName(flag);
  if (!t.ok()) {
    std::cerr << "cakec: " << t.status().message() << "\n";
    return false;
  }
  *out = *t;
  return true;
}

// Exit 0 when the manifest is complete, 1 when a member failed (each named on stderr), 2 for
// input errors.
int RunPortfolio(const std::string& path, const std::string& target_name,
                 const std::string& store) {
  auto p = cc::ParsePortfolioFile(path);
  if (!p.ok()) {
    std::cerr << "cakec: " << p.status().message() << "\n";
    return kExitInput;
  }
  auto target = cc::TargetByName(target_name);
  if (!target.ok()) {
    std::cerr << "cakec: " << target.status().message() << "\n";
    return kExitInput;
  }
  cc::CompileOptions opts;
  opts.store_root = store;
  auto r = cc::CompilePortfolio(*p, std::filesystem::path(path).parent_path(), **target, opts);
  if (!r.ok()) {
    std::cerr << "cakec: " << path << ": " << r.status().message() << "\n";
    return kExitInput;
  }
  for (const cc::PortfolioMemberResult& m : r->members) {
    if (m.error.empty()) {
      std::cerr << "member " << m.name << " (" << m.file << "): compiled, schedule "
                << m.receipt->schedule_hash().substr(0, 12) << "\n";
      continue;
    }
    std::cerr << "member " << m.name << " (" << m.file << "): " << m.error << "\n";
    for (const report::Diagnostic& d : m.analysis.diagnostics())
      if (d.severity() == report::ERROR || d.severity() == report::UNKNOWN)
        PrintDiagnostic(d,
                        FileLines((std::filesystem::path(path).parent_path() / m.file).string()));
  }
  std::cout << cc::ToJson(r->manifest) << "\n";
  return r->complete ? kExitOk : kExitRejected;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"cakec: Consumer CAKE schedule compiler (analyze, emit, compile, portfolio)"};
  app.set_version_flag("--version", std::string("cakec ") + CAKE_VERSION);
  app.require_subcommand(1);
  std::string file, target_name, store, output = "table";
  bool json = false;

  CLI::App* targets = app.add_subcommand("targets", "List admitted targets and their limits");
  auto add_common = [&](CLI::App* sub, bool with_json) {
    sub->add_option("FILE", file, "Schedule in protobuf text format")->required();
    sub->add_option("--target,-t", target_name,
                    "sm_120a | sm_121a | sm_120f | sm_120 | sm_90 (default: the schedule's)");
    if (with_json) {
      sub->add_option("-o,--output", output, "table (for people) or json")
          ->check(CLI::IsMember({"table", "json"}))
          ->capture_default_str();
      sub->add_flag("--json", json, "The same as -o json");
    }
  };
  CLI::App* analyze = app.add_subcommand("analyze", "Run the analysis passes and print the report");
  add_common(analyze, true);
  CLI::App* emit =
      app.add_subcommand("emit", "Print the generated CUDA C++ for a verified schedule");
  add_common(emit, false);
  CLI::App* compile =
      app.add_subcommand("compile", "Compile with nvcc, inspect SASS, print the lowering receipt");
  add_common(compile, true);
  compile->add_option("--store", store, "Artifact store (default: $CAKE_STORE or ~/.cache/cake)");
  int repeat = 1;
  compile
      ->add_option("--repeat", repeat,
                   "Compile N times in this process and print the first call's time and the "
                   "median of the rest (artifact-cache hits): a benchmark of the cache path")
      ->check(CLI::Range(1, 10000));

  std::string portfolio_file;
  CLI::App* portfolio_cmd = app.add_subcommand(
      "portfolio",
      "Verify and compile every member of a portfolio under its guard (and the fallback for "
      "every shape); print the dispatcher manifest as JSON");
  portfolio_cmd->add_option("FILE", portfolio_file, "Portfolio in protobuf text format")
      ->required();
  portfolio_cmd
      ->add_option("--target,-t", target_name, "sm_120a | sm_121a | sm_120f | sm_120 | sm_90")
      ->required();
  portfolio_cmd->add_option("--store", store,
                            "Artifact store (default: $CAKE_STORE or ~/.cache/cake)");

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? kExitOk : kExitInput;
  }

  json = json || output == "json";
  if (targets->parsed()) {
    for (const cc::TargetInfo& t : cc::AllTargets())
      std::cout << t.name << "  min PTX " << t.min_ptx.ToString() << ", shared/block "
                << t.shared_per_block_optin << " B, " << t.witness << "\n";
    return kExitOk;
  }

  if (portfolio_cmd->parsed()) return RunPortfolio(portfolio_file, target_name, store);

  auto parsed = cc::ParseModuleFile(file);
  if (!parsed.ok()) {
    std::cerr << parsed.status().message() << "\n";
    return kExitInput;
  }
  const cc::TargetInfo* target = nullptr;
  if (!ResolveTarget(target_name, *parsed, &target)) return kExitInput;

  if (analyze->parsed()) {
    auto a = cc::Analyze(*parsed, *target);
    if (json) {
      std::cout << cc::ToJson(a->report) << "\n";
    } else {
      PrintReport(a->report, file);
    }
    return a->report.verdict() == report::VERIFIED ? kExitOk : kExitRejected;
  }
  if (emit->parsed()) {
    cc::EmitResult e = cc::Emit(*parsed, *target);
    if (!e.source) {
      PrintReport(e.analysis, file);
      return kExitRejected;
    }
    std::cout << e.source->text;
    return kExitOk;
  }
  // compile
  cc::CompileOptions opts;
  opts.store_root = store;
  std::vector<double> ms;
  absl::StatusOr<cc::CompileResult> c;
  for (int i = 0; i < repeat; ++i) {
    const auto start = std::chrono::steady_clock::now();
    c = cc::Compile(*parsed, *target, opts);
    ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
                     .count());
    if (!c.ok()) {
      std::cerr << "cakec: " << c.status().message() << "\n";
      return kExitInput;
    }
  }
  if (repeat > 1) {
    const bool first_hit =
        ms.size() > 1 && c->receipt && c->receipt->cache() == report::LoweringReceipt::HIT;
    std::vector<double> rest(ms.begin() + 1, ms.end());
    std::nth_element(rest.begin(), rest.begin() + rest.size() / 2, rest.end());
    std::cerr << absl::StrFormat(
        "compile x%d: first %.2f ms, then median %.3f ms over %d calls%s\n", repeat, ms[0],
        rest[rest.size() / 2], static_cast<int>(rest.size()),
        first_hit ? " (artifact-cache hits)" : " (no receipt: analysis only)");
  }
  if (!c->receipt) {
    if (json) {
      std::cout << cc::ToJson(c->analysis) << "\n";
    } else {
      PrintReport(c->analysis, file);
    }
    return kExitRejected;
  }
  if (json) {
    std::cout << cc::ToJson(*c->receipt) << "\n";
  } else {
    PrintReport(c->analysis, file);
    PrintReceipt(*c->receipt);
  }
  return c->receipt->outcome() == report::LoweringReceipt::PASS ? kExitOk : kExitRejected;
}
