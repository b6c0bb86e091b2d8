#include "workloads/gemm_nvfp4/schedules.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"

namespace cake::workloads::gemm_nvfp4 {
namespace {

// NVFP4: A and B are E2M1 packed two to a byte (PACKED_FP4, lower K index in the low nibble),
// each row of A and column of B scaled by one UE4M3 per 16 elements of K (SA [M, K] and SB
// [N, K] in BLOCK_SCALE representation: K / 16 scale bytes a row). mma.sync m16n8k64
// kind::mxf4nvf4 scale_vec::4X; the scale fragments are the compiler's, read where the MMA needs
// them (scale_load).
constexpr char kNvfp4Template[] = R"(name: "gemm_nvfp4"
description: "warp GEMM, NVFP4 (E2M1 operands, UE4M3 scales per 16 of K), FP32 accumulate, BF16 out"
target { arch: SM_120F ptx_version: "8.8" }
kernels {
  name: "gemm_nvfp4"
  scalars { name: "M" dtype: S32 min: 1 }
  scalars { name: "N" dtype: S32 min: 1 }
  scalars { name: "K" dtype: S32 min: 64 multiple_of: 64 }
  tensors { name: "A" dtype: E2M1 access: READ_ONLY alignment_bytes: 16 shape { dims { symbol: "M" } dims { symbol: "K" } } representation { kind: PACKED_FP4 } }
  tensors { name: "B" dtype: E2M1 access: READ_ONLY alignment_bytes: 16 shape { dims { symbol: "N" } dims { symbol: "K" } } representation { kind: PACKED_FP4 } }
  tensors { name: "SA" dtype: UE4M3 access: READ_ONLY alignment_bytes: 4 shape { dims { symbol: "M" } dims { symbol: "K" } } representation { kind: BLOCK_SCALE scale_format: UE4M3 group_size: 16 } }
  tensors { name: "SB" dtype: UE4M3 access: READ_ONLY alignment_bytes: 4 shape { dims { symbol: "N" } dims { symbol: "K" } } representation { kind: BLOCK_SCALE scale_format: UE4M3 group_size: 16 } }
  tensors { name: "C" dtype: BF16 access: WRITE_ONLY alignment_bytes: 16 shape { dims { symbol: "M" } dims { symbol: "N" } } representation { kind: ROW_MAJOR } }
  launch { threads_per_cta: $THREADS }
  roles { name: "compute" warps: [$WARPS] issuer: ALL_LANES }
  instrs { name: "mma" family: WARP_SYNC shape: M16N8K64 a: E2M1 b: E2M1 accumulator: F32 block_scale { format: UE4M3 group_size: 16 } }
  accumulators { name: "acc" dtype: F32 owner: "compute" mma: "mma" init: ZERO shape { dims { size: $TM } dims { size: $TN } } partition { rows: $WM cols: $WN } }
  pipelines { name: "ab" stages: $STAGES transfer: CP_ASYNC producers: "compute" consumers: "compute" }
  buffers { name: "a_stage" space: SHARED dtype: E2M1 pipeline: "ab" alignment_bytes: 128 shape { dims { size: $TM } dims { size: $TK } } representation { kind: PACKED_FP4 padding_elements: 32 } }
  buffers { name: "b_stage" space: SHARED dtype: E2M1 pipeline: "ab" alignment_bytes: 128 shape { dims { size: $TN } dims { size: $TK } } representation { kind: PACKED_FP4 padding_elements: 32 } }
  work { name: "tiles" static_tiles { output: "C" tile_m: $TM tile_n: $TN } }
  ops {
    id: "main"
    role_region { role: "compute" }
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
          body { id: "scale_a" results: "sa" scale_load { src: "SA" mma: "mma" operand: OPERAND_A } }
          body { id: "scale_b" results: "sb" scale_load { src: "SB" mma: "mma" operand: OPERAND_B } }
          body { id: "mma_step" mma { instr: "mma" a: "fa" b: "fb" acc: "acc" scale_a: "sa" scale_b: "sb" } }
          body { id: "release" release { pipeline: "ab" } }
        }
      }
      body { id: "store" store_accumulator { acc: "acc" dst: "C" cast: BF16 mask: MASK_BOUNDS } }
    }
  }
}
)";

}  // namespace

std::string Nvfp4GemmPoint::Describe() const {
  return absl::StrCat(tile_m, "x", tile_n, "x", tile_k, " w", warps_m, "x", warps_n, " s", stages,
                      " nvfp4");
}

std::string Nvfp4GemmSchedule(const Nvfp4GemmPoint& p) {
  const int warps = p.warps_m * p.warps_n;
  std::vector<int> ids(warps);
  for (int i = 0; i < warps; ++i) ids[i] = i;
  return absl::StrReplaceAll(kNvfp4Template, {{"$THREADS", absl::StrCat(32 * warps)},
                                              {"$WARPS", absl::StrJoin(ids, ", ")},
                                              {"$TM", absl::StrCat(p.tile_m)},
                                              {"$TN", absl::StrCat(p.tile_n)},
                                              {"$TK", absl::StrCat(p.tile_k)},
                                              {"$WM", absl::StrCat(p.warps_m)},
                                              {"$WN", absl::StrCat(p.warps_n)},
                                              {"$STAGES", absl::StrCat(p.stages)}});
}

std::vector<Nvfp4GemmPoint> Nvfp4GemmPoints() {
  std::vector<Nvfp4GemmPoint> out;
  Nvfp4GemmPoint p;
  out.push_back(p);  // 128x128x128 s3
  p.tile_n = 64;
  p.tile_k = 256;
  p.stages = 2;
  out.push_back(p);
  return out;
}

std::vector<std::string> Nvfp4PointsThatSpill() {
  return {"128x128x128 w2x2 s2 nvfp4", "128x128x256 w2x2 s2 nvfp4"};
}

std::vector<Nvfp4GemmPoint> Nvfp4GemmGrid() {
  constexpr int kSharedBytes = 99 * 1024;
  const std::vector<std::string> spill = Nvfp4PointsThatSpill();
  std::vector<Nvfp4GemmPoint> out;
  for (int tile_m : {128, 64})
    for (int tile_n : {128, 64})
      for (int tile_k : {64, 128, 256})
        for (int stages : {2, 3, 4}) {
          // Packed rows of tile_k / 2 bytes, padded by 32 elements (16 bytes).
          if ((tile_m + tile_n) * (tile_k + 32) / 2 * stages > kSharedBytes) continue;
          Nvfp4GemmPoint p;
          p.tile_m = tile_m;
          p.tile_n = tile_n;
          p.tile_k = tile_k;
          p.stages = stages;
          if (std::find(spill.begin(), spill.end(), p.Describe()) == spill.end()) out.push_back(p);
        }
  return out;
}

}  // namespace cake::workloads::gemm_nvfp4
