// The kmeans_argmin lowering: the nearest centroid of every point, X[B,N,D] against C[B,K,D]
// (BF16), fused: the distance GEMM X * C^T runs on the shared warp tiles (mma.sync m16n8k16,
// ldmatrix, cp.async stages), and its epilogue keeps a running argmin of |c|^2 - 2 x.c over the
// centroid tiles in registers, so no N x K distance matrix is ever written. Writes idx[B,N]
// (int32) and dist[B,N] = |x|^2 + min (F32); a point without a finite distance gets index K and
// NaN. One CTA per (point tile, batch); it walks every centroid tile of its batch, copying its
// point tile once where the ring's stages hold all of D (stages x tile_k >= D).
#include "compiler/lowering.h"
#include "absl/strings/str_cat.h"
#include "compiler/lowerings/warp_tiles/warp_tiles.h"
#include "compiler/source_writer.h"

namespace cake::compiler {
namespace {

constexpr char kVersion[] = "kmeans_argmin/5";

absl::Status Unsupported(absl::string_view why) {
  return LoweringUnsupported("kmeans_argmin", why);
}

struct ArgminPlan : WarpTiles {
  std::string kernel_name;
  std::string idx, dist;       // outputs
  std::string batch, n, k, d;  // scalars: batch, points, centroids, dimension
  std::string op_reduce;
};

absl::StatusOr<ArgminPlan> Plan(const ir::Module& module, const KernelGraph& g) {
  auto tiles = PlanWarpTiles(module, g, "kmeans_argmin");
  if (!tiles.ok()) return tiles.status();
  ArgminPlan p;
  static_cast<WarpTiles&>(p) = *std::move(tiles);
  p.kernel_name = g.kernel->name();
  // Its batched launch passes pointers; TMA stages would need per-batch tensor maps.
  if (p.transfer != ir::CP_ASYNC) return Unsupported("only CP_ASYNC pipelines are lowered");
  // An argmin of a partial distance is not a partial argmin: there is no merge for slices.
  if (p.k_slices > 1) return Unsupported("k_slices > 1 (split-K) is not lowered for arg_reduce");
  // One CTA walks every column tile of its row tile: there is no grid of tiles to reorder.
  if (p.raster_group_m > 1) return Unsupported("raster_group_m is not lowered for arg_reduce");
  if (!p.epilogue->op->has_arg_reduce())
    return Unsupported("the tile loop's epilogue must be arg_reduce");
  const ir::ArgReduce& ar = p.epilogue->op->arg_reduce();
  p.op_reduce = p.epilogue->op->id();
  if (ar.kind() != ir::ArgReduce::ARGMIN) return Unsupported("only ARGMIN is lowered");
  if (ar.scale() != -2.0f) return Unsupported("scale must be -2 (squared distances)");
  if (ar.column_norms() != p.b || ar.row_norms() != p.a)
    return Unsupported("column_norms must be the B operand and row_norms the A operand");
  if (ar.value_dst().empty()) return Unsupported("value_dst (the distances) is required");
  p.idx = ar.index_dst();
  p.dist = ar.value_dst();
  if (p.tile_m > p.threads || p.tile_n > p.threads)
    return Unsupported("every row of a tile needs a thread (tile_m, tile_n <= threads)");

  auto tx = g.tensors.find(p.a), tc = g.tensors.find(p.b), ti = g.tensors.find(p.idx),
       td = g.tensors.find(p.dist);
  if (tx == g.tensors.end() || tc == g.tensors.end() || ti == g.tensors.end() ||
      td == g.tensors.end())
    return Unsupported("tensor params unresolved");
  const ir::TensorParam &X = *tx->second, &C = *tc->second, &I = *ti->second, &Dt = *td->second;
  if (X.dtype() != ir::BF16 || C.dtype() != ir::BF16) return Unsupported("X and C must be BF16");
  if (I.dtype() != ir::S32 || Dt.dtype() != ir::F32)
    return Unsupported("the index must be S32 and the distance F32");
  if (I.access() == ir::READ_ONLY || Dt.access() == ir::READ_ONLY)
    return Unsupported("the outputs must be writable");
  for (const ir::TensorParam* t : {&X, &C, &I, &Dt})
    if (t->representation().kind() != ir::Representation::ROW_MAJOR &&
        t->representation().kind() != ir::Representation::KIND_UNSPECIFIED)
      return Unsupported("tensors must be row-major");
  if (X.shape().dims_size() != 3 || C.shape().dims_size() != 3 || I.shape().dims_size() != 2 ||
      Dt.shape().dims_size() != 2 || !SymbolIs(X.shape().dims(0), &p.batch) ||
      !SymbolIs(X.shape().dims(1), &p.n) || !SymbolIs(X.shape().dims(2), &p.d) ||
      !SymbolIs(C.shape().dims(0), &p.batch) || !SymbolIs(C.shape().dims(1), &p.k) ||
      !SymbolIs(C.shape().dims(2), &p.d) || !SymbolIs(I.shape().dims(0), &p.batch) ||
      !SymbolIs(I.shape().dims(1), &p.n) || !SymbolIs(Dt.shape().dims(0), &p.batch) ||
      !SymbolIs(Dt.shape().dims(1), &p.n))
    return Unsupported("shapes must be X[B,N,D], C[B,K,D], idx[B,N], dist[B,N] over symbols");
  if (!p.mask_mk) return Unsupported("point, centroid and dimension tails must be zero-filled");
  if (p.a_repr != ir::Representation::ROW_MAJOR || p.b_repr != ir::Representation::ROW_MAJOR)
    return Unsupported("staging buffers must be ROW_MAJOR (padded)");
  return p;
}

report::LaunchSpec Launch(const ArgminPlan& p, int64_t shared) {
  using K = report::LaunchSpec::Arg;
  report::LaunchSpec l;
  for (const std::string& t : {p.a, p.b, p.idx, p.dist}) {
    K* a = l.add_args();
    a->set_kind(K::TENSOR);
    a->set_name(t);
  }
  for (const std::string& s : {p.batch, p.n, p.k, p.d}) {
    K* a = l.add_args();
    a->set_kind(K::SCALAR);
    a->set_name(s);
  }
  l.mutable_grid_x()->set_extent(p.n);
  l.mutable_grid_x()->set_divisor(p.tile_m);
  l.mutable_grid_y()->set_extent(p.batch);
  l.mutable_grid_y()->set_divisor(1);
  l.set_threads_per_cta(p.threads);
  l.set_dynamic_shared_bytes(shared);
  return l;
}

// The squared L2 norm of one staged row: kTileK BF16 elements at element offset `at` of a stage
// (row-major, no swizzle: the lowering requires padded ROW_MAJOR stages).
constexpr char kStagedRowNorm[] =
    R"(__device__ __forceinline__ float StagedRowNorm(const unsigned char* stage, int at) {
  const uint4* row = reinterpret_cast<const uint4*>(reinterpret_cast<const __nv_bfloat16*>(stage) + at);
  float s = 0.0f;
#pragma unroll
  for (int c = 0; c < kTileK / 8; ++c) {
    const uint4 v = row[c];
    const __nv_bfloat162* h = reinterpret_cast<const __nv_bfloat162*>(&v);
#pragma unroll
    for (int q = 0; q < 4; ++q) {
      const float2 f = __bfloat1622float2(h[q]);
      s = fmaf(f.x, f.x, s);
      s = fmaf(f.y, f.y, s);
    }
  }
  return s;
})";

// The better of two (value, index) candidates: the smaller value, then the lower index; an
// index of -1 (no finite value yet) loses to any other.
constexpr char kBetter[] =
    R"(__device__ __forceinline__ bool Better(float v, int i, float bv, int bi) {
  return i >= 0 && (bi < 0 || v < bv || (v == bv && i < bi));
})";

// The kernel's parameter identifiers: the lowering's own, never the schedule's names (names are
// data; the launch spec binds arguments by position). They are the bundled example's names.
constexpr char kX[] = "X", kC[] = "C", kIdx[] = "idx", kDist[] = "dist", kB[] = "B", kN[] = "N",
               kK[] = "K", kD[] = "D";

LoweredKernel Emit(const ArgminPlan& p, const TargetInfo& target, const std::string& hash) {
  LoweredKernel out;
  out.kernel_symbol = absl::StrCat("cake_", p.kernel_name, "_", hash.substr(0, 12));
  out.dynamic_shared_bytes = p.shared.total_bytes;
  SourceWriter w;
  w.Line(absl::StrCat("// Generated by Consumer CAKE lowering ", kVersion, ". Do not edit."));
  w.Line(absl::StrCat("// schedule ", hash, " target ", std::string(target.name)));
  w.Line("#include <cuda_bf16.h>");
  w.Line("#include <stdint.h>");
  w.Line("");
  w.Line("namespace {");
  EmitWarpTileConstants(p, w);
  for (const char* text : {kStagedRowNorm, kBetter}) w.Line(text);
  w.Line("}  // namespace");
  w.Line("");
  w.Line(absl::StrCat("extern \"C\" __global__ void __launch_bounds__(kThreads) ",
                      out.kernel_symbol, "("));
  w.Line(absl::StrCat("    const __nv_bfloat16* ", RestrictQualifier(p, p.a), kX,
                      ", const __nv_bfloat16* ", RestrictQualifier(p, p.b), kC, ","));
  w.Line(absl::StrCat("    int* ", RestrictQualifier(p, p.idx), kIdx, ", float* ",
                      RestrictQualifier(p, p.dist), kDist, ", int ", kB, ", int ", kN, ", int ", kK,
                      ", int ", kD, ") {"));
  w.Begin(p.op_role);
  w.Line("  extern __shared__ __align__(128) unsigned char smem[];");
  w.Line("  __shared__ float column_norm[kTileN], row_norm[kTileM];");
  w.Line("  __shared__ float partial_value[kWarpsN][kTileM];");
  w.Line("  __shared__ int partial_index[kWarpsN][kTileM];");
  w.Line("  const uint32_t smem_base = static_cast<uint32_t>(__cvta_generic_to_shared(smem));");
  w.Line("  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;");
  w.Line("  const int warp_m = warp / kWarpsN, warp_n = warp % kWarpsN;");
  w.Begin(p.op_tiles);
  w.Line("  const int batch = blockIdx.y, m0 = blockIdx.x * kTileM;");
  w.Line(
      absl::StrCat("  const __nv_bfloat16* xb = ", kX, " + int64_t(batch) * ", kN, " * ", kD, ";"));
  w.Line(
      absl::StrCat("  const __nv_bfloat16* cb = ", kC, " + int64_t(batch) * ", kK, " * ", kD, ";"));
  w.Line("  // The norms come from the staged tiles as they pass (zero-filled tails add nothing):");
  w.Line("  // the points' on the first centroid tile, the centroids' on every one.");
  w.Line("  float x_norm = 0.0f;");
  w.Line("  float best[kFragsM][2];");
  w.Line("  int best_index[kFragsM][2];");
  w.Line("#pragma unroll");
  w.Line("  for (int i = 0; i < kFragsM; ++i) {");
  w.Line("    best[i][0] = best[i][1] = 0.0f;");
  w.Line("    best_index[i][0] = best_index[i][1] = -1;");
  w.Line("  }");
  w.Line(absl::StrCat("  for (int n0 = 0; n0 < ", kK, "; n0 += kTileN) {"));
  w.Line("    float c_norm = 0.0f;");
  MainloopTerms terms{"xb", "cb", kN, kK, kD};
  // The points stay resident when the ring holds all of D: each centroid tile restarts the
  // k-tiles at slot 0, so with k_tiles <= kStages slot kt already holds the point tile's k-tile
  // kt from the first centroid tile (same rows, same zero-filled tails), and only the centroids
  // are copied again. Otherwise the slots rotate and every copy runs.
  terms.a_copy_when = "n0 == 0 || k_tiles > kStages";
  terms.after_consume = {
      "    if (tid < kTileN) c_norm += StagedRowNorm(smem + kOffsetB + stage * kStageBytesB, "
      "tid * kRowB);",
      "    if (n0 == 0 && tid < kTileM) x_norm += StagedRowNorm(smem + kOffsetA + stage * "
      "kStageBytesA, tid * kRowA);"};
  EmitWarpMainloop(p, terms, w);
  w.Line("  if (tid < kTileN) column_norm[tid] = c_norm;");
  w.Line("  if (n0 == 0 && tid < kTileM) row_norm[tid] = x_norm;");
  w.Line("  __syncthreads();  // the norms are read across threads below");
  w.Begin(p.op_reduce);
  w.Line(
      "  // Running argmin over this centroid tile: each thread visits its columns in increasing");
  w.Line("  // order, so a strict < keeps the lowest index among equal values.");
  w.Line("#pragma unroll");
  w.Line("  for (int i = 0; i < kFragsM; ++i)");
  w.Line("#pragma unroll");
  w.Line("    for (int h = 0; h < 2; ++h)");
  w.Line("#pragma unroll");
  w.Line("      for (int j = 0; j < kFragsN; ++j)");
  w.Line("#pragma unroll");
  w.Line("        for (int e = 0; e < 2; ++e) {");
  w.Line("          const int local = warp_n * kWarpTileN + j * 8 + (lane & 3) * 2 + e;");
  w.Line("          const float v = -2.0f * acc[i][j][2 * h + e] + column_norm[local];");
  w.Line(absl::StrCat("          if (n0 + local < ", kK,
                      " && isfinite(v) && (best_index[i][h] < 0 || v < best[i][h])) {"));
  w.Line("            best[i][h] = v;");
  w.Line("            best_index[i][h] = n0 + local;");
  w.Line("          }");
  w.Line("        }");
  w.Line("  __syncthreads();  // the norms and the stages are refilled by the next centroid tile");
  w.Line("  }");
  w.Line("  // The four lanes of a quad hold one row's columns; then the warps along N.");
  w.Line("#pragma unroll");
  w.Line("  for (int i = 0; i < kFragsM; ++i)");
  w.Line("#pragma unroll");
  w.Line("    for (int h = 0; h < 2; ++h) {");
  w.Line("#pragma unroll");
  w.Line("      for (int mask = 1; mask <= 2; mask <<= 1) {");
  w.Line("        const float ov = __shfl_xor_sync(0xffffffffu, best[i][h], mask);");
  w.Line("        const int oi = __shfl_xor_sync(0xffffffffu, best_index[i][h], mask);");
  w.Line("        if (Better(ov, oi, best[i][h], best_index[i][h])) {");
  w.Line("          best[i][h] = ov;");
  w.Line("          best_index[i][h] = oi;");
  w.Line("        }");
  w.Line("      }");
  w.Line("      if ((lane & 3) == 0) {");
  w.Line("        const int row = warp_m * kWarpTileM + i * 16 + (lane >> 2) + h * 8;");
  w.Line("        partial_value[warp_n][row] = best[i][h];");
  w.Line("        partial_index[warp_n][row] = best_index[i][h];");
  w.Line("      }");
  w.Line("    }");
  w.Line("  __syncthreads();");
  w.Line(absl::StrCat("  if (tid < kTileM && m0 + tid < ", kN, ") {"));
  w.Line("    float v = partial_value[0][tid];");
  w.Line("    int index = partial_index[0][tid];");
  w.Line("#pragma unroll");
  w.Line("    for (int wn = 1; wn < kWarpsN; ++wn)");
  w.Line("      if (Better(partial_value[wn][tid], partial_index[wn][tid], v, index)) {");
  w.Line("        v = partial_value[wn][tid];");
  w.Line("        index = partial_index[wn][tid];");
  w.Line("      }");
  w.Line(absl::StrCat("    const int64_t out = int64_t(batch) * ", kN, " + m0 + tid;"));
  w.Line(absl::StrCat("    ", kIdx, "[out] = index >= 0 ? index : ", kK, ";"));
  w.Line(absl::StrCat("    ", kDist,
                      "[out] = index >= 0 ? v + row_norm[tid] : __int_as_float(0x7fc00000);"));
  w.Line("  }");
  w.End(p.op_reduce);
  w.End(p.op_tiles);
  w.End(p.op_role);
  w.Line("}");
  out.text = w.Text();
  out.op_lines = w.Ranges();
  return out;
}

class KMeansArgminLowering final : public Lowering {
 public:
  std::string name() const override { return "kmeans_argmin"; }
  std::string version() const override { return kVersion; }
  std::string operation() const override { return "kmeans_assign"; }
  std::string summary() const override {
    return "kmeans_argmin (nearest row of C[B,K,D] to each row of X[B,N,D]; the distance GEMM "
           "on mma.sync m16n8k16 BF16 warp tiles with a running-argmin epilogue)";
  }
  std::vector<std::string> required_instructions() const override {
    return WarpMainloopInstructions();
  }
  absl::Status Match(const ir::Module& module, const KernelGraph& g) const override {
    return Plan(module, g).status();
  }
  absl::StatusOr<LoweredKernel> Lower(const ir::Module& module, const KernelGraph& g,
                                      const TargetInfo& target,
                                      const std::string& schedule_hash) const override {
    auto plan = Plan(module, g);
    if (!plan.ok()) return plan.status();
    const ArgminPlan& p = *plan;
    LoweredKernel k = Emit(p, target, schedule_hash);
    k.launch = Launch(p, k.dynamic_shared_bytes);
    k.forms = WarpMainloopForms(p);
    k.shared_regions = p.shared.regions;
    return k;
  }
};

CAKE_REGISTER_LOWERING(KMeansArgminLowering);

}  // namespace
}  // namespace cake::compiler
