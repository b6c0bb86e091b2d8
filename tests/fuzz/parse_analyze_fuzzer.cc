// libFuzzer entry point: parse -> analyze on every target -> emit, with oracles, not only crash
// catching. Aborts (a finding, saved by libFuzzer) when:
//   * a module passes analysis while one of its names breaks the name rule;
//   * a report states negative or overflowed resources, or a rejected report has no error;
//   * a verified module's emitted source fails the emission audit (emission_audit.h): a
//     directive beyond the fixed ones, a byte that is not printable ASCII, a token that depends
//     on a schedule's names, or launch shared bytes other than analysis' figure.
// Build with `cmake -DCAKE_FUZZ=ON -DCMAKE_CXX_COMPILER=clang++` (scripts/fuzz.sh); CTest replays
// the committed corpus through the same function.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "compiler/compiler.h"
#include "compiler/emission_audit.h"
#include "compiler/schedule_names.h"
#include "tests/fuzz/quiet_init.h"

namespace {

[[noreturn]] void Finding(const std::string& what, const std::string& text) {
  std::fprintf(stderr, "parse_analyze oracle: %s\n--- input ---\n%s\n", what.c_str(),
               text.substr(0, 4000).c_str());
  std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  namespace cc = cake::compiler;
  const std::string text(reinterpret_cast<const char*>(data), size);
  auto parsed = cc::ParseModuleText(text, "fuzz.textproto");
  if (!parsed.ok()) return 0;
  const bool names_ok = cc::FindNameViolations(parsed->module).empty();
  for (const auto& t : cc::AllTargets()) {
    const cc::EmitResult e = cc::Emit(*parsed, t);
    const cake::report::AnalysisReport& r = e.analysis;
    bool error = false;
    for (const auto& d : r.diagnostics()) error |= d.severity() == cake::report::ERROR;
    if ((r.verdict() == cake::report::REJECTED) != error)
      Finding("a report's verdict disagrees with its errors", text);
    if (!names_ok && r.verdict() != cake::report::REJECTED)
      Finding("a module with an invalid name was not rejected", text);
    if (r.resources().shared_bytes() < 0 || r.resources().registers_per_thread_estimate() < 0)
      Finding("negative resources in a report", text);
    if (r.verdict() == cake::report::VERIFIED &&
        r.resources().shared_bytes() > r.resources().shared_limit_bytes())
      Finding("verified with shared bytes over the limit", text);
    if (!e.source) continue;
    const auto problems = cc::AuditEmittedSource(*parsed, t, {}, r, *e.source);
    if (!problems.empty()) Finding(problems.front(), text);
  }
  return 0;
}
