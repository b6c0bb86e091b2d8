// Deterministic CUDA C++ (with inline PTX) for a lowered warp GEMM. Identical plan + target =>
// byte-identical source; every operation's lines are recorded in an op-id -> line-range map.
#pragma once

#include <string>

#include "compiler/lowering.h"
#include "compiler/targets.h"
#include "plan.h"

namespace cake::compiler {

// The source (headed by the lowering `version`), symbol, source map and dynamic shared bytes
// (the launch and forms are the lowering's, lowering.cc).
LoweredKernel EmitWarpGemm(const WarpGemmPlan& plan, const TargetInfo& target,
                           const std::string& schedule_hash, absl::string_view version);

}  // namespace cake::compiler
