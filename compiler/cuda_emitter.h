// Deterministic CUDA C++ (with inline PTX) for a lowered warp GEMM. Identical plan + target ⇒
// byte-identical source; every operation's lines are recorded in an op-id -> line-range map.
#pragma once

#include <string>
#include <vector>

#include "cake/report.pb.h"
#include "targets.h"
#include "warp_gemm_plan.h"

namespace cake::compiler {

struct EmittedSource {
  std::string text;
  std::string kernel_symbol;
  std::vector<report::SourceRange> op_lines;  // sorted by first line
  // Kernel ABI, in argument order.
  std::vector<std::string> abi;
  int64_t dynamic_shared_bytes = 0;
};

EmittedSource EmitWarpGemm(const WarpGemmPlan& plan, const TargetInfo& target,
                           const std::string& schedule_hash);

}  // namespace cake::compiler
