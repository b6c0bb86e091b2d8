// Lowering recognizer for the warp-tiled GEMM (C = A * B^T, A [M,K], B [N,K], BF16 inputs or
// 8-bit E4M3/E5M2 ones, FP32 accumulate, BF16/F32 out): matches the schedule's structure exactly
// and extracts the decisions lowering needs. Anything else is an unsupported lowering (reported as
// unknown by analysis), never approximated. Pure; thread-compatible.
#pragma once

#include <string>
#include "absl/strings/string_view.h"

#include "absl/status/statusor.h"
#include "cake/ir.pb.h"
#include "compiler/graph.h"
#include "compiler/lowerings/warp_tiles/warp_tiles.h"
#include "compiler/passes.h"
#include "compiler/targets.h"

namespace cake::compiler {

inline constexpr absl::string_view kWarpGemmLoweringVersion = "warp_gemm/8";
// The same kernels over 8-bit operands (E4M3/E5M2, legacy or unit-scale block-scaled MMA).
inline constexpr absl::string_view kWarpGemmFp8LoweringVersion = "warp_gemm_fp8/1";
// NVFP4: packed E2M1 operands with UE4M3 scale tensors (kind::mxf4nvf4 scale_vec::4X).
inline constexpr absl::string_view kWarpGemmNvfp4LoweringVersion = "warp_gemm_nvfp4/1";

// The shared tiling (warp_tiles.h) plus the GEMM's own: its tensors, output type and store.
struct WarpGemmPlan : WarpTiles {
  std::string kernel_name;
  std::string c;        // output tensor param (a and b are the tiling's)
  std::string m, n, k;  // scalar params
  ir::DType out_dtype = ir::BF16;
  bool mask_store = true;  // bounds-checked output stores
  // Staged store: the tile goes to shared memory (rows of stage_row_elems elements, padded so
  // the fragment writes hit distinct banks), then to global in 16-byte chunks. It reuses the
  // ring's bytes [0, stage_bytes) after the main loop.
  bool stage_store = false;
  int stage_row_elems = 0;
  int64_t stage_bytes = 0;
  std::string op_store;
};

// Unimplemented with a reason when the kernel is not a warp GEMM this lowering covers.
absl::StatusOr<WarpGemmPlan> PlanWarpGemm(const ir::Module& module, const KernelGraph& g);

}  // namespace cake::compiler
