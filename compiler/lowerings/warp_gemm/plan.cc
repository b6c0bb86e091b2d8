#include "plan.h"

#include <algorithm>

#include "absl/strings/str_cat.h"

namespace cake::compiler {
namespace {

absl::Status Unsupported(absl::string_view why) { return LoweringUnsupported("warp_gemm", why); }

}  // namespace

absl::StatusOr<WarpGemmPlan> PlanWarpGemm(const ir::Module& module, const KernelGraph& g) {
  auto tiles = PlanWarpTiles(module, g, "warp_gemm");
  if (!tiles.ok()) return tiles.status();
  WarpGemmPlan p;
  static_cast<WarpTiles&>(p) = *std::move(tiles);
  p.kernel_name = g.kernel->name();
  if (!p.epilogue->op->has_store_accumulator())
    return Unsupported("the tile loop's epilogue must be store_accumulator");
  const OpNode* store = p.epilogue;
  p.op_store = store->op->id();

  // Tensors: A [M,K], B [N,K], C [M,N], row-major, 16-byte aligned.
  auto ta = g.tensors.find(p.a), tb = g.tensors.find(p.b);
  p.c = store->op->store_accumulator().dst();
  auto tc = g.tensors.find(p.c);
  if (ta == g.tensors.end() || tb == g.tensors.end() || tc == g.tensors.end())
    return Unsupported("tensor params unresolved");
  const ir::TensorParam &A = *ta->second, &B = *tb->second, &C = *tc->second;
  const ir::DType operand = p.elements_per_unit > 1 ? g.kernel->instrs(0).a() : ir::BF16;
  // E2M1 operands are PACKED_FP4 in global memory as in shared.
  const ir::Representation::Kind operand_repr =
      p.elements_per_unit == 4 ? ir::Representation::PACKED_FP4 : ir::Representation::ROW_MAJOR;
  if (A.dtype() != operand || B.dtype() != operand)
    return Unsupported(absl::StrCat("A and B must be ", ir::DType_Name(operand)));
  if (C.dtype() != ir::BF16 && C.dtype() != ir::F32) return Unsupported("C must be BF16 or F32");
  p.out_dtype = C.dtype();
  for (const ir::TensorParam* t : {&A, &B, &C}) {
    const ir::Representation::Kind want = t == &C ? ir::Representation::ROW_MAJOR : operand_repr;
    if (t->shape().dims_size() != 2 ||
        (t->representation().kind() != want &&
         (want != ir::Representation::ROW_MAJOR ||
          t->representation().kind() != ir::Representation::KIND_UNSPECIFIED)))
      return Unsupported(absl::StrCat("tensors must be 2-D ", ir::Representation::Kind_Name(want)));
  }
  if (!SymbolIs(A.shape().dims(0), &p.m) || !SymbolIs(A.shape().dims(1), &p.k) ||
      !SymbolIs(B.shape().dims(0), &p.n) || !SymbolIs(B.shape().dims(1), &p.k) ||
      !SymbolIs(C.shape().dims(0), &p.m) || !SymbolIs(C.shape().dims(1), &p.n))
    return Unsupported("shapes must be A[M,K], B[N,K], C[M,N] over scalar symbols");
  if (store->op->store_accumulator().cast() != C.dtype())
    return Unsupported("store cast must equal C's dtype");
  p.mask_store = store->op->store_accumulator().mask() != ir::MASK_NONE;
  if (store->op->store_accumulator().stage_in_shared()) {
    p.stage_store = true;
    const int elem_bytes = p.out_dtype == ir::BF16 ? 2 : 4;
    // 16 bytes of padding per row: consecutive fragment rows start 4 banks apart.
    p.stage_row_elems = p.tile_n + 16 / elem_bytes;
    p.stage_bytes = int64_t{p.tile_m} * p.stage_row_elems * elem_bytes;
    // The split-K paths store through the workspace or race by design; neither is staged. A
    // persistent CTA's ring is already filling the next tile during the store.
    if (p.k_slices > 1) return Unsupported("a staged store with k_slices > 1 is not lowered");
    if (p.persistent) return Unsupported("a staged store in a persistent tile loop is not lowered");
    if (C.alignment_bytes() < 16 || C.alignment_bytes() % 16 != 0)
      return Unsupported(absl::StrCat("a staged store writes 16-byte chunks; '", p.c, "' declares ",
                                      C.alignment_bytes(), "-byte alignment"));
    const int64_t ring_bytes = p.shared.total_bytes - p.shared.barrier_bytes;
    if (std::min(p.a_offset, p.b_offset) != 0 || p.stage_bytes > ring_bytes)
      return Unsupported(absl::StrCat("the staged tile needs ", p.stage_bytes,
                                      " bytes of shared memory; the ring has ", ring_bytes));
  }
  if (absl::Status s = CheckTmaSources(p, g, p.k, "warp_gemm"); !s.ok()) return s;
  if (p.elements_per_unit == 4) {
    // Scale tensors [M, K] and [N, K] in BLOCK_SCALE (K / 16 bytes a row), read as 32-bit words
    // of one MMA k step: K a multiple of 64 (whole words, 16-byte packed rows), 4-byte bases.
    auto ki = g.scalars.find(p.k);
    if (ki == g.scalars.end() || ki->second->multiple_of() <= 0 ||
        ki->second->multiple_of() % 64 != 0)
      return Unsupported(
          absl::StrCat("NVFP4 rows move in 16-byte chunks and their scales in "
                       "words of 4: '",
                       p.k, "' needs multiple_of 64"));
    for (const auto& [name, rows] : {std::pair{p.scale_a, p.m}, std::pair{p.scale_b, p.n}}) {
      auto ts = g.tensors.find(name);
      if (ts == g.tensors.end()) return Unsupported("scale tensors unresolved");
      const ir::TensorParam& S = *ts->second;
      std::string s_rows = rows, s_k = p.k;
      if (S.shape().dims_size() != 2 || !SymbolIs(S.shape().dims(0), &s_rows) ||
          !SymbolIs(S.shape().dims(1), &s_k))
        return Unsupported(absl::StrCat("scale tensor '", name, "' must be [", rows, ", ", p.k,
                                        "] of its operand"));
      if (S.alignment_bytes() < 4 || S.alignment_bytes() % 4 != 0)
        return Unsupported(absl::StrCat("scale words are 4-byte loads; '", name, "' declares ",
                                        S.alignment_bytes(), "-byte alignment"));
    }
  }
  if (p.elements_per_unit > 1) {
    // 16-byte chunks of 8-bit rows: K a multiple of 16, so rows start on 16-byte boundaries and
    // K / 2 counts whole 16-bit units.
    auto ki = g.scalars.find(p.k);
    if (ki == g.scalars.end() || ki->second->multiple_of() <= 0 ||
        ki->second->multiple_of() % 16 != 0)
      return Unsupported(
          absl::StrCat("8-bit rows move in 16-byte chunks: '", p.k, "' needs multiple_of 16"));
    for (const ir::TensorParam* t : {&A, &B})
      if (t->alignment_bytes() < 16 || t->alignment_bytes() % 16 != 0)
        return Unsupported(absl::StrCat("8-bit operands need 16-byte alignment; '", t->name(),
                                        "' declares ", t->alignment_bytes()));
  }

  return p;
}

}  // namespace cake::compiler
