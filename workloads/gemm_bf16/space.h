// The warp-GEMM schedule space of the gemm_bf16 workload: builds a schedule module from its
// decisions (CTA tile, warp grid, k-tile, stages, shared representation, output dtype). Used by the
// built-in proposer and by tests; the bundled examples/gemm_bf16.textproto is the default point of
// this space.
#pragma once

#include <string>
#include <vector>

#include "cake/ir.pb.h"

namespace cake::workloads::gemm_bf16 {

struct WarpGemmParams {
  int tile_m = 128, tile_n = 128, tile_k = 32;
  int warps_m = 2, warps_n = 2;
  int stages = 3;
  ir::Representation::Kind smem = ir::Representation::ROW_MAJOR;  // or SWIZZLE_64B/128B
  int padding = 8;                                                // ROW_MAJOR only
  bool b_load_x4 = true;
  ir::Transfer transfer = ir::CP_ASYNC;  // or TMA (swizzled stages only)
  ir::DType out = ir::BF16;              // BF16 or F32
  // Split-K: CTAs per output tile, each over a run of k-tiles, merged through the workspace.
  int k_slices = 1;
  ir::KMerge k_merge = ir::K_MERGE_ORDERED_WORKSPACE;  // when k_slices > 1
  // Tile rows per raster band (1 = row-major tile order): see ir::StaticTiles.
  int raster_group_m = 1;
  // The epilogue stores through shared memory in 16-byte row chunks (not split-K).
  bool stage_store = false;
  // Persistent CTAs (TMA, one role): each walks several tiles and its ring runs on across
  // them; max_ctas bounds the launch (0 = as many as stay resident).
  bool persistent = false;
  int max_ctas = 0;
  // A loader warp (one more warp, elected lane) fills the TMA ring; the warps of the
  // accumulator's grid only consume (TMA only).
  bool warp_specialized = false;
  // With a loader: its warps (1, or a whole warpgroup of 4 when registers are redistributed) and
  // the per-thread register budgets (setmaxnreg, SM12x only; 0 = the compiler's allocation).
  int loader_warps = 1;
  int compute_registers = 0, loader_registers = 0;
  ir::Arch arch = ir::SM_120F;
  std::string ptx_version = "8.8";
  std::string name = "gemm_bf16";

  std::string Describe()
      const;  // "128x128x32 w2x2 s3 pad8 x4 bf16" (+ " tma", " ws", " k4", " g16", " st", " p")
};

ir::Module MakeWarpGemm(const WarpGemmParams& p);

// A deterministic list of distinct, legal-by-construction points for the proposer to try.
std::vector<WarpGemmParams> WarpGemmCandidates();

// The wider family the benchmark sweeps: the proposer's candidates plus eight-warp 64x64 warp
// tiles (large shapes) and short CTA tiles (skinny M), each legal by construction.
std::vector<WarpGemmParams> WarpGemmFamily();

// The search's space (Workload::SearchSpace): WarpGemmCandidates() first, then every CTA tile of
// 64..256 with four or eight warps of 32..64 x 32..64, k-tiles of 32 (64-byte swizzle) or 64
// (128-byte), two to four stages, cp.async or TMA, raster bands of 1, 8 or 16 tile rows and a
// direct or staged epilogue (where the ring holds the staged tile), whose ring fits SM120's
// 101,376 B per block. Distinct labels.
std::vector<WarpGemmParams> WarpGemmSearchSpace();

// Points whose rings need more shared memory than SM120's 101,376 B per block: they lower for
// sm_90 (232,448 B) only, and the verifier rejects them for sm_120f naming the buffers. They
// measure what deeper rings and wider CTA tiles buy where the memory allows; they are not part
// of the family that lowers for both targets.
std::vector<WarpGemmParams> WarpGemmSm90OnlyPoints();

}  // namespace cake::workloads::gemm_bf16
