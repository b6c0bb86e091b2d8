// Affine bounds and alignment: tiles divide the instruction grid, copies and stores either cover
// the tensor exactly (as the contract's divisibility facts prove) or declare masking, vector
// transfers are aligned, and nothing writes a read-only parameter. Runtime index contents
// (sparse gathers) cannot be proven here and are reported as unknown.
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "passes.h"

namespace cake::compiler {
namespace {

struct LoopFacts {
  const ir::StaticTiles* tiles = nullptr;
  std::string k_symbol;
  int64_t k_extent = 0;
};

LoopFacts FactsFor(const KernelGraph& g, const OpNode& n) {
  LoopFacts f;
  std::string work;
  f.tiles = EnclosingTiles(g, n, &work);
  for (const std::string& header : n.loop_nest) {
    std::vector<std::string> parts = absl::StrSplit(header, ':');
    if (parts[0] == "k" && parts.size() == 3) {
      f.k_symbol = parts[1];
      (void)absl::SimpleAtoi(parts[2], &f.k_extent);
    }
  }
  return f;
}

int MmaM(ir::MmaShape) { return 16; }
int MmaN(ir::MmaShape) { return 8; }
int MmaK(ir::MmaShape s) {
  switch (s) {
    case ir::M16N8K8:
      return 8;
    case ir::M16N8K16:
      return 16;
    case ir::M16N8K32:
      return 32;
    case ir::M16N8K64:
      return 64;
    case ir::M8N8K4:
    case ir::M16N8K4:
      return 4;
    default:
      return 0;
  }
}

void CheckAccumulatorTiling(const KernelGraph& g, DiagnosticSink& sink, CheckCounter& checks) {
  for (const ir::Accumulator& acc : g.kernel->accumulators()) {
    auto ii = g.instrs.find(acc.mma());
    if (ii == g.instrs.end() || acc.shape().dims_size() != 2) continue;
    const int64_t rows = ConstDim(acc.shape().dims(0)).value_or(0);
    const int64_t cols = ConstDim(acc.shape().dims(1)).value_or(0);
    const int wr = acc.partition().rows(), wc = acc.partition().cols();
    const std::string path = g.DeclPath("accumulators", acc.name());
    ++checks;
    if (wr <= 0 || wc <= 0) {
      sink.Error(report::DIAG_MISSING_FIELD)
          .Path(path)
          .Resource(acc.name())
          .Condition("an accumulator declares its warp grid partition (rows, cols > 0)")
          .Message(absl::StrCat("accumulator '", acc.name(), "' has no warp partition"));
      continue;
    }
    const int m = MmaM(ii->second->shape()), nn = MmaN(ii->second->shape());
    ++checks;
    if (CheckedInt(rows) % (CheckedInt(wr) * m) != 0 ||
        CheckedInt(cols) % (CheckedInt(wc) * nn) != 0)
      sink.Error(report::DIAG_TILE_NOT_DIVISIBLE)
          .Path(path)
          .Resource(acc.name())
          .Condition(absl::StrCat("tile rows % (warp rows x ", m,
                                  ") == 0 and tile cols % (warp "
                                  "cols x ",
                                  nn, ") == 0"))
          .Evidence(absl::StrCat("tile ", rows, "x", cols, ", warp grid ", wr, "x", wc,
                                 ", instruction ", m, "x", nn))
          .Repair("choose a tile that is a multiple of warp grid x instruction shape")
          .Message("accumulator tile does not divide into warp MMA fragments");
  }
}

void CheckCopy(const KernelGraph& g, const OpNode& n, DiagnosticSink& sink, CheckCounter& checks) {
  const ir::Copy& c = n.op->copy();
  auto ti = g.tensors.find(c.src());
  auto bi = g.buffers.find(c.dst());
  if (ti == g.tensors.end() || bi == g.buffers.end()) return;
  const ir::TensorParam& src = *ti->second;
  const ir::Buffer& dst = *bi->second;
  const LoopFacts f = FactsFor(g, n);
  const int elem_bytes = DTypeBits(src.dtype()) / 8;

  ++checks;
  if (c.vector_bytes() != 4 && c.vector_bytes() != 8 && c.vector_bytes() != 16) {
    sink.Error(report::DIAG_INVALID_VALUE)
        .Op(n.op->id())
        .Path(n.path)
        .Condition("vector_bytes is 4, 8 or 16")
        .Evidence(absl::StrCat("vector_bytes = ", c.vector_bytes()))
        .Message("unsupported copy vector width");
    return;
  }
  ++checks;
  if (src.alignment_bytes() < c.vector_bytes())
    sink.Error(report::DIAG_ALIGNMENT_INSUFFICIENT)
        .Op(n.op->id())
        .Path(n.path)
        .Resource(src.name())
        .Condition(
            absl::StrCat("base alignment of '", src.name(), "' >= ", c.vector_bytes(), " bytes"))
        .Evidence(absl::StrCat("declared alignment_bytes = ", src.alignment_bytes()))
        .Repair("declare (and guarantee) a larger alignment, or use a narrower vector")
        .Message("vector copy from an insufficiently aligned tensor");
  if (src.shape().dims_size() != 2 || dst.shape().dims_size() != 2) return;
  const ir::Dim& contiguous = src.shape().dims(1);
  const int64_t elems_per_vector = elem_bytes > 0 ? c.vector_bytes() / elem_bytes : 0;
  ++checks;
  if (elems_per_vector > 0 && KnownMultiple(g, contiguous) % elems_per_vector != 0)
    sink.Error(report::DIAG_ALIGNMENT_INSUFFICIENT)
        .Op(n.op->id())
        .Path(n.path)
        .Resource(src.name())
        .Condition(absl::StrCat("row length ", DimText(contiguous), " is a multiple of ",
                                elems_per_vector, " elements, so every ", c.vector_bytes(),
                                "-byte vector is aligned and wholly in or out of bounds"))
        .Evidence(absl::StrCat(DimText(contiguous), " is known to be a multiple of ",
                               KnownMultiple(g, contiguous)))
        .Repair(absl::StrCat("declare multiple_of: ", elems_per_vector, " on '",
                             DimText(contiguous), "' in the contract, or narrow the vector"))
        .Message("row stride does not preserve vector alignment");

  // The tile this copy fills, from the work schedule and the k-loop.
  int64_t tile_rows = 0;
  if (f.tiles != nullptr)
    tile_rows = c.origin() == ir::Copy::TILE_M_K   ? f.tiles->tile_m()
                : c.origin() == ir::Copy::TILE_N_K ? f.tiles->tile_n()
                                                   : 0;
  const int64_t brows = ConstDim(dst.shape().dims(0)).value_or(0);
  const int64_t bcols = ConstDim(dst.shape().dims(1)).value_or(0);
  ++checks;
  if (tile_rows > 0 && (brows != tile_rows || (f.k_extent > 0 && bcols != f.k_extent))) {
    sink.Error(report::DIAG_INVALID_VALUE)
        .Op(n.op->id())
        .Path(n.path)
        .Resource(dst.name())
        .Condition("the staging buffer holds exactly one copy tile")
        .Evidence(absl::StrCat("tile ", tile_rows, "x", f.k_extent, ", buffer '", dst.name(),
                               "' is ", brows, "x", bcols))
        .Message("copy tile and staging buffer shapes differ");
    return;
  }
  if (c.mask() == ir::MASK_NONE && brows > 0 && bcols > 0) {
    ++checks;
    const bool rows_exact = KnownMultiple(g, src.shape().dims(0)) % brows == 0;
    const bool cols_exact = KnownMultiple(g, contiguous) % bcols == 0;
    if (!rows_exact || !cols_exact)
      sink.Error(report::DIAG_TAIL_UNMASKED)
          .Op(n.op->id())
          .Path(n.path)
          .Resource(src.name())
          .Condition(absl::StrCat("with MASK_NONE, ", DimText(src.shape().dims(0)), " % ", brows,
                                  " == 0 and ", DimText(contiguous), " % ", bcols,
                                  " == 0 must follow from the contract"))
          .Evidence(absl::StrCat("known multiples: ", KnownMultiple(g, src.shape().dims(0)),
                                 " and ", KnownMultiple(g, contiguous)))
          .Repair("mask: MASK_ZERO_FILL, or declare multiple_of facts in the contract")
          .Message("partial tiles would be read out of bounds");
  } else if (c.mask() == ir::MASK_UNSPECIFIED) {
    ++checks;
    sink.Error(report::DIAG_MISSING_FIELD)
        .Op(n.op->id())
        .Path(n.path)
        .Condition("a copy states its tail policy (MASK_NONE or MASK_ZERO_FILL)")
        .Message("copy without a mask policy");
  }
}

// An arg-reduction writes its index (and value) tensors: they must be writable.
void CheckArgReduce(const KernelGraph& g, const OpNode& n, DiagnosticSink& sink,
                    CheckCounter& checks) {
  const ir::ArgReduce& ar = n.op->arg_reduce();
  for (const std::string& name : {ar.index_dst(), ar.value_dst()}) {
    auto ti = g.tensors.find(name);
    if (ti == g.tensors.end()) continue;
    ++checks;
    if (ti->second->access() == ir::READ_ONLY)
      sink.Error(report::DIAG_WRITE_TO_READ_ONLY)
          .Op(n.op->id())
          .Path(n.path)
          .Resource(name)
          .Condition(absl::StrCat("'", name, "' is writable (access WRITE_ONLY/READ_WRITE)"))
          .Evidence("declared access: READ_ONLY")
          .Message("arg-reduction into a read-only parameter");
  }
}

void CheckStore(const KernelGraph& g, const OpNode& n, DiagnosticSink& sink, CheckCounter& checks) {
  const ir::StoreAccumulator& st = n.op->store_accumulator();
  auto ti = g.tensors.find(st.dst());
  auto ai = g.accumulators.find(st.acc());
  if (ti == g.tensors.end() || ai == g.accumulators.end()) return;
  const ir::TensorParam& dst = *ti->second;
  ++checks;
  if (dst.access() == ir::READ_ONLY)
    sink.Error(report::DIAG_WRITE_TO_READ_ONLY)
        .Op(n.op->id())
        .Path(n.path)
        .Resource(dst.name())
        .Condition(absl::StrCat("'", dst.name(), "' is writable (access WRITE_ONLY/READ_WRITE)"))
        .Evidence("declared access: READ_ONLY")
        .Message("store into a read-only parameter");
  if (dst.shape().dims_size() != 2 || ai->second->shape().dims_size() != 2) return;
  const int64_t rows = ConstDim(ai->second->shape().dims(0)).value_or(0);
  const int64_t cols = ConstDim(ai->second->shape().dims(1)).value_or(0);
  const LoopFacts f = FactsFor(g, n);
  ++checks;
  if (f.tiles != nullptr && (f.tiles->tile_m() != rows || f.tiles->tile_n() != cols))
    sink.Error(report::DIAG_INVALID_VALUE)
        .Op(n.op->id())
        .Path(n.path)
        .Resource(ai->second->name())
        .Condition("the accumulator covers exactly one output tile")
        .Evidence(absl::StrCat("tile ", f.tiles->tile_m(), "x", f.tiles->tile_n(), ", accumulator ",
                               rows, "x", cols))
        .Message("accumulator and work tile shapes differ");
  if (st.mask() == ir::MASK_NONE && rows > 0 && cols > 0) {
    ++checks;
    if (KnownMultiple(g, dst.shape().dims(0)) % rows != 0 ||
        KnownMultiple(g, dst.shape().dims(1)) % cols != 0)
      sink.Error(report::DIAG_TAIL_UNMASKED)
          .Op(n.op->id())
          .Path(n.path)
          .Resource(dst.name())
          .Condition(absl::StrCat("with MASK_NONE the output extent is a multiple of the ", rows,
                                  "x", cols, " tile"))
          .Repair("mask: MASK_BOUNDS, or declare multiple_of facts in the contract")
          .Message("partial output tiles would be written out of bounds");
  }
}

void CheckKLoop(const KernelGraph& g, const OpNode& n, DiagnosticSink& sink, CheckCounter& checks) {
  if (!n.op->has_mma()) return;
  auto ii = g.instrs.find(n.op->mma().instr());
  if (ii == g.instrs.end()) return;
  const LoopFacts f = FactsFor(g, n);
  const int k = MmaK(ii->second->shape());
  ++checks;
  if (f.k_extent > 0 && k > 0 && f.k_extent % k != 0)
    sink.Error(report::DIAG_TILE_NOT_DIVISIBLE)
        .Op(n.op->id())
        .Path(n.path)
        .Condition(absl::StrCat("k-tile extent % ", k, " == 0 (instruction K)"))
        .Evidence(absl::StrCat("k-tile extent = ", f.k_extent))
        .Message("k-tile does not divide into MMA K steps");
}

}  // namespace

void RunBoundsPass(const PassContext& ctx, DiagnosticSink& sink, CheckCounter& checks) {
  for (const auto& gp : ctx.graphs) {
    const KernelGraph& g = *gp;
    CheckAccumulatorTiling(g, sink, checks);
    for (const auto& np : g.nodes) {
      const ir::Operation& op = *np->op;
      if (op.has_copy()) CheckCopy(g, *np, sink, checks);
      if (op.has_store_accumulator()) CheckStore(g, *np, sink, checks);
      if (op.has_arg_reduce()) CheckArgReduce(g, *np, sink, checks);
      CheckKLoop(g, *np, sink, checks);
      if (op.has_for_k_tiles()) {
        ++checks;
        if (op.for_k_tiles().extent() <= 0)
          sink.Error(report::DIAG_INVALID_VALUE)
              .Op(op.id())
              .Path(np->path)
              .Condition("k-tile extent > 0")
              .Message("k loop without a positive extent");
      }
      if (op.has_gather_records()) {
        ++checks;
        sink.Unknown(report::DIAG_BOUNDS_UNPROVEN)
            .Op(op.id())
            .Path(np->path)
            .Resource(op.gather_records().selection())
            .Condition("every valid sparse index lies inside the cache")
            .Evidence("index contents are runtime values; static analysis does not know them")
            .Repair("a caller precondition or an explicit validation pass in the contract")
            .Message("bounds of runtime sparse indices are unproven");
      }
    }
  }
}

}  // namespace cake::compiler
