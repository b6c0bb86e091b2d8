// The compiler's public interface: Parse -> Analyze -> Lower/Emit -> Compile (receipt).
// Each step returns StatusOr; a rejected schedule is a successful analysis whose report carries
// the diagnostics. Compile never launches a kernel and never claims runtime validation.
#pragma once

#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "analysis.h"
#include "cake/report.pb.h"
#include "lowering.h"
#include "parse.h"
#include "targets.h"
#include "toolchain.h"

namespace cake::compiler {

struct EmitResult {
  report::AnalysisReport analysis;
  std::optional<LoweredKernel> source;  // set when analysis verified the schedule
  const Lowering* lowering = nullptr;   // the lowering that produced it
};

// Analyzes and, if verified, lowers with the registered lowering that matches.
EmitResult Emit(const ParsedModule& parsed, const TargetInfo& target,
                const AnalyzeOptions& options = {});

struct CompileOptions {
  std::string store_root;                     // empty = DefaultStoreRoot()
  std::vector<std::string> unchecked_passes;  // test-only; see AnalyzeOptions
};

struct CompileResult {
  report::AnalysisReport analysis;
  std::optional<report::LoweringReceipt> receipt;  // set when analysis verified the schedule
};

// FailedPrecondition when the toolchain is missing; otherwise the analysis and, for a verified
// schedule, the lowering receipt (from the artifact store on a hit).
absl::StatusOr<CompileResult> Compile(const ParsedModule& parsed, const TargetInfo& target,
                                      const CompileOptions& options = {});

}  // namespace cake::compiler
