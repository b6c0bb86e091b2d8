// Lowering recognizer for the warp-tiled GEMM (C = A * B^T, A [M,K], B [N,K], 16-bit inputs,
// FP32 accumulate, BF16/F32 out): matches the schedule's structure exactly and extracts the
// decisions lowering needs. Anything else is an unsupported lowering (reported as unknown by
// analysis), never approximated. Pure; thread-compatible.
#pragma once

#include <string>
#include "absl/strings/string_view.h"

#include "absl/status/statusor.h"
#include "cake/ir.pb.h"
#include "compiler/graph.h"
#include "compiler/passes.h"
#include "compiler/targets.h"

namespace cake::compiler {

inline constexpr absl::string_view kWarpGemmLoweringVersion = "warp_gemm/1";

struct WarpGemmPlan {
  std::string kernel_name;
  std::string a, b, c;  // tensor params
  std::string m, n, k;  // scalar params
  ir::DType out_dtype = ir::BF16;
  int tile_m = 0, tile_n = 0, tile_k = 0;
  int warps_m = 0, warps_n = 0;
  int stages = 0;
  int threads = 0;
  ir::Representation::Kind a_repr = ir::Representation::ROW_MAJOR;
  ir::Representation::Kind b_repr = ir::Representation::ROW_MAJOR;
  int a_padding = 0, b_padding = 0;
  bool b_load_x4 = true;   // LDMATRIX_X4 (pairs of n8 tiles) vs LDMATRIX_X2
  bool mask_mk = true;     // zero-fill A/B tails
  bool mask_store = true;  // bounds-checked output stores
  SharedPlan shared;
  int64_t a_offset = 0, b_offset = 0;
  int64_t a_stage_bytes = 0, b_stage_bytes = 0;
  // Operation ids, for the source map and receipt.
  std::string op_role, op_tiles, op_kloop, op_produce, op_copy_a, op_copy_b, op_consume, op_load_a,
      op_load_b, op_mma, op_release, op_store;
};

// Unimplemented with a reason when the kernel is not a warp GEMM this lowering covers.
absl::StatusOr<WarpGemmPlan> PlanWarpGemm(const ir::Module& module, const KernelGraph& g);

}  // namespace cake::compiler
