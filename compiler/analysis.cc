#include "analysis.h"

#include "absl/algorithm/container.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "canonical.h"
#include "lowering.h"
#include "schedule_limits.h"

namespace cake::compiler {
namespace {

struct PassEntry {
  const char* name;
  PassFn fn;
};

constexpr PassEntry kPasses[] = {
    {"construction", RunConstructionPass},
    {"admission", RunAdmissionPass},
    {"fragments", RunFragmentPass},
    {"bounds_alignment", RunBoundsPass},
    {"memory_effects", RunMemoryEffectsPass},
    {"convergence", RunConvergencePass},
    {"roles", RunRolePass},
    {"pipelines", RunPipelinePass},
    {"resources", RunResourcePass},
    {"program", RunProgramPass},
};

}  // namespace

std::unique_ptr<Analysis> Analyze(const ParsedModule& parsed, const TargetInfo& target,
                                  const AnalyzeOptions& options) {
  auto a = std::make_unique<Analysis>();
  PassContext& ctx = a->context;
  ctx.module = &parsed.module;
  ctx.target = &target;
  ctx.toolchain_ptx = options.toolchain_ptx;
  if (auto v = ParsePtxVersion(parsed.module.target().ptx_version())) {
    ctx.ptx = *v;
    ctx.ptx_known = true;
  }
  for (int i = 0; i < parsed.module.kernels_size(); ++i)
    ctx.graphs.push_back(BuildKernelGraph(parsed.module.kernels(i), i));

  report::AnalysisReport& r = a->report;
  r.set_schedule_hash(ScheduleHash(parsed.module));
  r.set_target(std::string(target.name));
  r.set_ptx_version(parsed.module.target().ptx_version());

  DiagnosticSink sink;
  Verdict overall = report::VERIFIED;
  bool stopped = false;
  for (const PassEntry& pass : kPasses) {
    report::PassResult* pr = r.add_passes();
    pr->set_pass(pass.name);
    if (stopped) continue;  // verdict stays UNSPECIFIED: not run
    if (absl::c_linear_search(options.unchecked_passes, pass.name)) continue;
    const size_t first = sink.size();
    CheckCounter checks;
    pass.fn(ctx, sink, checks);
    const Verdict v = VerdictSince(sink, first);
    pr->set_verdict(v);
    pr->set_conditions_checked(checks.checked);
    int unknowns = 0;
    for (size_t i = first; i < sink.size(); ++i)
      if (sink.diagnostics()[i].severity() == report::UNKNOWN) ++unknowns;
    pr->set_conditions_unknown(unknowns);
    overall = Worst(overall, v);
    if (pass.fn == RunConstructionPass && v == report::REJECTED) stopped = true;
  }
  if (stopped) overall = report::REJECTED;

  // Lowering coverage: a legal schedule this compiler cannot lower yet is unknown, said plainly.
  report::PassResult* lower = r.add_passes();
  lower->set_pass("lowering_coverage");
  if (!stopped && !ctx.graphs.empty()) {
    const size_t first = sink.size();
    std::string why_not;
    const Lowering* lowering = MatchLowering(parsed.module, *ctx.graphs[0], &why_not);
    lower->set_conditions_checked(1);
    r.set_lowering_supported(lowering != nullptr);
    if (lowering != nullptr) {
      r.set_lowering(lowering->name());
      r.set_operation(lowering->operation());
    } else {
      std::string known;
      for (const Lowering* l : AllLowerings())
        absl::StrAppend(&known, known.empty() ? "lowerings today: " : "; ", l->summary());
      sink.Unknown(report::DIAG_LOWERING_UNSUPPORTED)
          .Path(ctx.graphs[0]->path)
          .Condition("a lowering exists for every construct in the schedule")
          .Evidence(why_not)
          .Repair(known)
          .Message("this schedule analyzes but does not lower yet");
      lower->set_conditions_unknown(1);
    }
    lower->set_verdict(VerdictSince(sink, first));
    overall = Worst(overall, lower->verdict());

    const KernelGraph& g = *ctx.graphs[0];
    report::ResourceEstimate* res = r.mutable_resources();
    res->set_shared_bytes(PlanShared(g).total_bytes);
    res->set_shared_limit_bytes(target.shared_per_block_optin);
    res->set_threads_per_cta(g.kernel->launch().threads_per_cta());
    res->set_registers_per_thread_estimate(EstimateRegistersPerThread(g));
    res->set_registers_per_thread_limit(target.max_registers_per_thread);
  }
  r.set_verdict(overall);
  // A report is bounded whatever the schedule: the first kMaxDiagnostics are kept (errors and
  // unknowns before warnings and hints), the rest are counted.
  std::vector<Diagnostic>& all = sink.mutable_diagnostics();
  if (all.size() > static_cast<size_t>(kMaxDiagnostics))
    std::stable_partition(all.begin(), all.end(), [](const Diagnostic& d) {
      return d.severity() == report::ERROR || d.severity() == report::UNKNOWN;
    });
  const size_t kept = std::min(all.size(), static_cast<size_t>(kMaxDiagnostics));
  for (size_t i = 0; i < kept; ++i) {
    Diagnostic& d = all[i];
    if (!d.path().empty()) *d.mutable_span() = parsed.source_map.Lookup(d.path());
    *r.add_diagnostics() = std::move(d);
  }
  if (all.size() > kept) {
    Diagnostic* note = r.add_diagnostics();
    note->set_id(report::DIAG_DIAGNOSTICS_TRUNCATED);
    note->set_severity(report::WARNING);
    note->set_condition(absl::StrCat("a report keeps at most ", kMaxDiagnostics, " diagnostics"));
    note->set_message(absl::StrCat(all.size() - kept, " more diagnostics were not kept"));
  }
  return a;
}

}  // namespace cake::compiler
