// Analysis: runs the passes in fixed order over a parsed module for one target and assembles the
// report. The worst verdict wins (rejected > unknown > verified). Construction errors stop the
// later passes, which are then reported as not run. Pure: no clock, no I/O, no randomness.
#pragma once

#include <memory>
#include <optional>
#include <vector>

#include "absl/status/statusor.h"
#include "cake/report.pb.h"
#include "graph.h"
#include "parse.h"
#include "passes.h"
#include "targets.h"

namespace cake::compiler {

struct AnalyzeOptions {
  // The PTX ISA version the pinned toolchain emits, when known (compile sets it).
  std::optional<PtxVersion> toolchain_ptx;
  // Passes to leave unrun, by name. Test-only: the rule proofs force an illegal schedule through
  // lowering to show on a GPU what a rule prevents. caked and cakec never set it; a pass left
  // unrun keeps verdict UNSPECIFIED in the report.
  std::vector<std::string> unchecked_passes;
};

struct Analysis {
  report::AnalysisReport report;
  PassContext context;  // owns the typed graphs (used by lowering)
};

std::unique_ptr<Analysis> Analyze(const ParsedModule& parsed, const TargetInfo& target,
                                  const AnalyzeOptions& options = {});

}  // namespace cake::compiler
