#include "workloads/gemm_blockscaled/schedules.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"

namespace cake::workloads::gemm_blockscaled {
namespace {

constexpr char kTemplate[] = R"(name: "gemm_fp8"
description: "warp GEMM, $OPERAND in ($FORM MMA), FP32 accumulate, BF16 out"
target { arch: SM_120F ptx_version: "8.8" }
kernels {
  name: "gemm_fp8"
  scalars { name: "M" dtype: S32 min: 1 }
  scalars { name: "N" dtype: S32 min: 1 }
  scalars { name: "K" dtype: S32 min: 16 multiple_of: 16 }
  tensors { name: "A" dtype: $DTYPE access: READ_ONLY alignment_bytes: 16 shape { dims { symbol: "M" } dims { symbol: "K" } } representation { kind: ROW_MAJOR } }
  tensors { name: "B" dtype: $DTYPE access: READ_ONLY alignment_bytes: 16 shape { dims { symbol: "N" } dims { symbol: "K" } } representation { kind: ROW_MAJOR } }
  tensors { name: "C" dtype: BF16 access: WRITE_ONLY alignment_bytes: 16 shape { dims { symbol: "M" } dims { symbol: "N" } } representation { kind: ROW_MAJOR } }
  launch { threads_per_cta: $THREADS }
  roles { name: "compute" warps: [$WARPS] issuer: ALL_LANES }
  instrs { name: "mma" family: WARP_SYNC shape: M16N8K32 a: $DTYPE b: $DTYPE accumulator: F32$SCALE }
  accumulators { name: "acc" dtype: F32 owner: "compute" mma: "mma" init: ZERO shape { dims { size: $TM } dims { size: $TN } } partition { rows: $WM cols: $WN } }
  pipelines { name: "ab" stages: $STAGES transfer: CP_ASYNC producers: "compute" consumers: "compute" }
  buffers { name: "a_stage" space: SHARED dtype: $DTYPE pipeline: "ab" alignment_bytes: 128 shape { dims { size: $TM } dims { size: $TK } } representation { kind: ROW_MAJOR padding_elements: 16 } }
  buffers { name: "b_stage" space: SHARED dtype: $DTYPE pipeline: "ab" alignment_bytes: 128 shape { dims { size: $TN } dims { size: $TK } } representation { kind: ROW_MAJOR padding_elements: 16 } }
  work { name: "tiles" static_tiles { output: "C" tile_m: $TM tile_n: $TN } }
  ops {
    id: "main"
    role_region { role: "compute" }$UNITS
    body {
      id: "tile_loop"
      for_each_tile { work: "tiles" }
      body {
        id: "k_loop"
        for_k_tiles { k: "K" extent: $TK }
        body {
          id: "fill"
          produce { pipeline: "ab" }
          body { id: "copy_a" copy { src: "A" dst: "a_stage" transfer: CP_ASYNC vector_bytes: 16 mask: MASK_ZERO_FILL origin: TILE_M_K } }
          body { id: "copy_b" copy { src: "B" dst: "b_stage" transfer: CP_ASYNC vector_bytes: 16 mask: MASK_ZERO_FILL origin: TILE_N_K } }
        }
        body {
          id: "read"
          consume { pipeline: "ab" }
          body { id: "load_a" results: "fa" matrix_load { src: "a_stage" operand: OPERAND_A mma: "mma" form: LDMATRIX_X4 } }
          body { id: "load_b" results: "fb" matrix_load { src: "b_stage" operand: OPERAND_B mma: "mma" form: LDMATRIX_X4 } }
          body { id: "mma_step" mma { instr: "mma" a: "fa" b: "fb" acc: "acc"$SCALE_OPERANDS } }
          body { id: "release" release { pipeline: "ab" } }
        }
      }
      body { id: "store" store_accumulator { acc: "acc" dst: "C" cast: BF16 mask: MASK_BOUNDS } }
    }
  }
}
)";
}  // namespace

std::string Fp8GemmPoint::Describe() const {
  return absl::StrCat(tile_m, "x", tile_n, "x", tile_k, " w", warps_m, "x", warps_n, " s", stages,
                      " ", Info(operand).name,
                      form == Fp8Form::kUnitScale ? " unit-scale" : " legacy");
}

std::string Fp8GemmSchedule(const Fp8GemmPoint& p) {
  const bool scaled = p.form == Fp8Form::kUnitScale;
  const int warps = p.warps_m * p.warps_n;
  std::vector<int> ids(warps);
  for (int i = 0; i < warps; ++i) ids[i] = i;
  return absl::StrReplaceAll(
      kTemplate,
      {{"$OPERAND", Info(p.operand).name},
       {"$FORM", scaled ? "block-scaled kind::mxf8f6f4, unit UE8M0 scales" : "legacy"},
       {"$DTYPE", p.operand == NarrowFormat::kE5M2 ? "E5M2" : "E4M3"},
       {"$THREADS", absl::StrCat(32 * warps)},
       {"$WARPS", absl::StrJoin(ids, ", ")},
       {"$SCALE_OPERANDS", scaled ? " scale_a: \"sa\" scale_b: \"sb\"" : ""},
       {"$SCALE", scaled ? " block_scale { format: UE8M0 group_size: 32 }" : ""},
       {"$UNITS", scaled
                      ? "\n    body { id: \"unit_a\" results: \"sa\" scale_unit { format: UE8M0 } }"
                        "\n    body { id: \"unit_b\" results: \"sb\" scale_unit { format: UE8M0 } }"
                      : ""},
       {"$TM", absl::StrCat(p.tile_m)},
       {"$TN", absl::StrCat(p.tile_n)},
       {"$TK", absl::StrCat(p.tile_k)},
       {"$WM", absl::StrCat(p.warps_m)},
       {"$WN", absl::StrCat(p.warps_n)},
       {"$STAGES", absl::StrCat(p.stages)}});
}

std::vector<Fp8GemmPoint> Fp8GemmPoints() {
  std::vector<Fp8GemmPoint> out;
  for (NarrowFormat operand : {NarrowFormat::kE4M3, NarrowFormat::kE5M2})
    for (Fp8Form form : {Fp8Form::kUnitScale, Fp8Form::kLegacy}) {
      Fp8GemmPoint p;
      p.operand = operand;
      p.form = form;
      out.push_back(p);
      p.tile_n = 64;
      p.tile_k = 128;
      p.stages = 2;
      out.push_back(p);
    }
  return out;
}

std::vector<Fp8GemmPoint> Fp8GemmGrid() {
  // The A and B stages' bytes (rows padded by 16) under the opt-in limit, with room to spare.
  constexpr int kSharedBytes = 99 * 1024;
  std::vector<Fp8GemmPoint> out;
  for (Fp8Form form : {Fp8Form::kUnitScale, Fp8Form::kLegacy})
    for (int tile_m : {128, 64})
      for (int tile_n : {128, 64})
        for (int tile_k : {64, 128})
          for (int stages : {2, 3, 4}) {
            if ((tile_m + tile_n) * (tile_k + 16) * stages > kSharedBytes) continue;
            Fp8GemmPoint p;
            p.form = form;
            p.tile_m = tile_m;
            p.tile_n = tile_n;
            p.tile_k = tile_k;
            p.stages = stages;
            out.push_back(p);
          }
  return out;
}

}  // namespace cake::workloads::gemm_blockscaled
