// The warp-tiling pieces of the lowerings that compute A * B^T tiles with mma.sync (warp_gemm and
// the fused lowerings built on its tiles): the plan of a kernel shaped
//   role_region { for_each_tile { for_k_tiles { produce { copy A, copy B },
//                                               consume { load A, load B, mma, release } },
//                                 EPILOGUE } }
// (one role over every warp, one mma.sync m16n8k16 BF16 -> F32 instruction, one accumulator, one
// pipeline of two staging buffers filled by cp.async or by TMA), and the CUDA C++ of its constants
// and main loop.
// The epilogue and the tensors' shapes are each lowering's own. Pure; thread-compatible.
#pragma once

#include <set>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "cake/ir.pb.h"
#include "compiler/graph.h"
#include "compiler/lowering.h"
#include "compiler/passes.h"
#include "compiler/source_writer.h"

namespace cake::compiler {

struct WarpTiles {
  std::string a, b;  // the copied tensors (TILE_M_K and TILE_N_K origins)
  int tile_m = 0, tile_n = 0, tile_k = 0;
  // Operand elements per 16-bit unit: 1 (BF16), 2 (FP8 E4M3/E5M2 of mma.sync m16n8k32) or 4
  // (E2M1 packed two to a byte, of m16n8k64). Narrow operands move and load as 16-bit units of
  // adjacent K elements (their fragments coincide register for register with m16n8k16's 16-bit
  // ones): tile_k and the paddings here are then in 16-bit units, the schedule's element counts
  // divided by this.
  int elements_per_unit = 1;
  // The MMA form: its admission-table key and PTX; with unit_scales, the block-scaled form whose
  // UE8M0 scales are 1.0 in every byte (0x7F7F7F7F; the byte and thread selectors are moot).
  std::string mma_key = "mma.m16n8k16.bf16.f32";
  std::string mma_ptx = "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32";
  bool unit_scales = false;
  // Real scale tensors (scale_load of a global tensor, [rows, K / 16] UE4M3 bytes for NVFP4): the
  // MMA's per-k-step scale words are read from them; empty for unscaled or unit-scale forms.
  std::string scale_a, scale_b;
  int warps_m = 0, warps_n = 0;
  int stages = 0;
  int threads = 0;
  // Warp-specialized: a loader role of one warp (`loader_warp`, its lane 0 issues the TMA
  // copies) beside the compute role's warps [first_compute_warp, + compute_warps), which only
  // consume. Otherwise one role owns every warp and thread 0 also refills the ring.
  bool warp_specialized = false;
  int compute_warps = 0, first_compute_warp = 0, loader_warp = -1, loader_warps = 0;
  // Per-thread register budgets (setmaxnreg) of the two roles, both or neither; with them the
  // loader is one warpgroup and the compute warps take the registers it gives up.
  int compute_registers = 0, loader_registers = 0;
  // CP_ASYNC: every thread copies 16-byte chunks, async groups + barrier publish a stage. TMA:
  // one thread issues a tensor-map box copy per buffer, completing on the stage's mbarrier with
  // the box's bytes; the launch passes tensor maps for A and B instead of their pointers.
  ir::Transfer transfer = ir::CP_ASYNC;
  int64_t barrier_offset = 0;  // TMA: full then empty mbarriers (8 bytes each) per stage
  ir::Representation::Kind a_repr = ir::Representation::ROW_MAJOR;
  ir::Representation::Kind b_repr = ir::Representation::ROW_MAJOR;
  int a_padding = 0, b_padding = 0;
  bool b_load_x4 = true;  // LDMATRIX_X4 (pairs of n8 tiles) vs LDMATRIX_X2
  bool mask_mk = true;    // zero-fill A/B tails
  // The consume's release precedes a read of the stage. The pipeline verifier rejects that
  // (DIAG_PIPE_REUSE_BEFORE_RELEASE); lowering honours it only so the rule can be shown to
  // matter on a GPU with the check switched off.
  bool release_early = false;
  // Split-K: CTAs per output tile along grid z, each over a contiguous run of k-tiles (1 = no
  // split). Lowered with the ordered workspace merge, or (k_merge_none) with each slice's plain
  // stores, which the memory-effects pass rejects (DIAG_MEM_WRITE_RACE) and lowering honours
  // only so the rule can be shown to matter on a GPU with the check switched off.
  int k_slices = 1;
  bool k_merge_none = false;
  // Tile rows per raster band (work schedule raster_group_m; 1 = tile row = grid y).
  int raster_group_m = 1;
  // Persistent work schedule: each CTA walks tiles blockIdx.x, + gridDim.x, ... and its TMA ring
  // runs on across them (the next tile's fill overlaps this tile's epilogue). max_ctas bounds
  // the launch (0 = as many as the device keeps resident).
  bool persistent = false;
  int max_ctas = 0;
  // Tensors declared to overlap another (may_alias, either side): their pointers are emitted
  // without __restrict__, which would promise the compiler that they do not.
  std::set<std::string> may_alias;
  SharedPlan shared;
  int64_t a_offset = 0, b_offset = 0;
  int64_t a_stage_bytes = 0, b_stage_bytes = 0;
  // Operation ids, for the source map and receipt.
  std::string op_loader_role, op_loader_tiles, op_loader_kloop;  // warp-specialized only
  std::string op_role, op_tiles, op_kloop, op_produce, op_copy_a, op_copy_b, op_consume, op_load_a,
      op_load_b, op_mma, op_release, op_scale_a, op_scale_b;
  const OpNode* epilogue = nullptr;  // the tile loop's operation after for_k_tiles
};

// "__restrict__ " for a tensor no other tensor of the kernel may alias, else "".
std::string RestrictQualifier(const WarpTiles& t, const std::string& tensor);

// Unimplemented, prefixed "`lowering` lowering: ", when the kernel is not shaped as above.
absl::StatusOr<WarpTiles> PlanWarpTiles(const ir::Module& module, const KernelGraph& g,
                                        const std::string& lowering);
absl::Status LoweringUnsupported(const std::string& lowering, absl::string_view why);
// TMA only: what the tensor maps need of the copied tensors, both [rows, `k`] row-major: base
// alignment of 16 bytes and a row pitch that is a multiple of 16 bytes (`k` a multiple of 8).
absl::Status CheckTmaSources(const WarpTiles& t, const KernelGraph& g, const std::string& k,
                             const std::string& lowering);
// TMA only: the launch argument of the tensor map over `tensor` ([rows, k], box of one stage).
report::LaunchSpec::Arg TmaLaunchArg(const WarpTiles& t, const std::string& tensor,
                                     const std::string& rows, const std::string& k, int box_rows);
// True when `d` is a symbol and the same as `*out` (which the first call fills): how lowerings
// read a tensor's extents as the kernel's scalar names.
bool SymbolIs(const ir::Dim& d, std::string* out);

// The source of the global k-tile index of loop iteration `kt`: "kt", or "(kt_first + kt)" when
// the k-tiles are split across CTAs.
std::string KTileIndex(const WarpTiles& t);

// The main loop's terms in the kernel's source: the tiles' base pointers, their row origins and
// extents, and the reduction extent.
struct MainloopTerms {
  std::string a_ptr, b_ptr;    // e.g. "A", or "xb" (a batch's base)
  std::string a_rows, b_rows;  // row extents, e.g. "M"
  std::string k;               // reduction extent
  std::string a_row0 = "m0", b_row0 = "n0";
  std::string a_map = {}, b_map = {};  // TMA: the tensor-map parameters of A and B
  // Lines at the end of the consume step, where `stage` is the Ready stage (e.g. an epilogue's
  // reductions over the staged tiles); empty for a plain GEMM.
  std::vector<std::string> after_consume = {};
  // A condition (C++ source) under which a produce step copies A; empty = always. A lowering
  // sets it only where a skipped copy leaves the slot holding the very bytes the copy would write
  // (an A tile the ring already holds), so the kernel computes what the schedule states.
  std::string a_copy_when = {};
  // With real scale tensors: their 32-bit words (four scales, one MMA k step of a row) and the
  // words per row, e.g. "SA32", "SB32", "K64".
  std::string scale_a_words = {}, scale_b_words = {}, scale_row_words = {};
};

// The admission-table instructions of the main loop, and the forms its operations must show in
// the SASS (the copies, the two matrix loads and the mma).
std::vector<std::string> WarpMainloopInstructions();
std::vector<LoweredKernel::Form> WarpMainloopForms(const WarpTiles& t);

// Namespace-scope constants (kTileM ... kChunksPerRow), the staging offset functions and the
// cp.async chunk copy.
void EmitWarpTileConstants(const WarpTiles& t, SourceWriter& w);
// `TileOrigin(tile, m0, n0)`: the origin of the tile at launch-order index `tile` of a
// tiles_m x tiles_n grid, row-major or in bands of raster_group_m tile rows (kRasterGroupM).
void EmitTileOrigin(const WarpTiles& t, const std::string& tiles_m, const std::string& tiles_n,
                    SourceWriter& w);
// `float acc[kFragsM][kFragsN][4]` zeroed, then the pipelined k loop (produce, consume, release).
// Persistent: the tile loop around the k loop (TileOrigin sets m0, n0, the accumulator is zeroed
// per tile) is left open for the caller's epilogue, which must close it.
void EmitWarpMainloop(const WarpTiles& t, const MainloopTerms& terms, SourceWriter& w);

}  // namespace cake::compiler
