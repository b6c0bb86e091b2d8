// Fragment and representation compatibility: what a matrix load reads must be the operand the MMA
// expects, in a representation the load form can read; accumulators and stores agree on types.
// A representation mismatch requires an explicit repack; nothing is converted silently.
#include "absl/strings/str_cat.h"
#include "admission.h"
#include "passes.h"

namespace cake::compiler {
namespace {

void CheckMatrixLoad(const KernelGraph& g, const OpNode& n, DiagnosticSink& sink,
                     CheckCounter& checks) {
  const ir::MatrixLoad& ml = n.op->matrix_load();
  auto bi = g.buffers.find(ml.src());
  auto ii = g.instrs.find(ml.mma());
  if (bi == g.buffers.end() || ii == g.instrs.end()) return;  // construction reported it
  const ir::Buffer& buf = *bi->second;
  const ir::MmaInstr& instr = *ii->second;
  ++checks;
  if (ml.operand() != ir::OPERAND_A && ml.operand() != ir::OPERAND_B) {
    sink.Error(report::DIAG_MISSING_FIELD)
        .Op(n.op->id())
        .Path(n.path)
        .Condition("a matrix load names the MMA operand it fills (OPERAND_A or OPERAND_B)")
        .Message("matrix load without an operand");
    return;
  }
  const ir::DType want = ml.operand() == ir::OPERAND_A ? instr.a() : instr.b();
  ++checks;
  if (buf.dtype() != want)
    sink.Error(report::DIAG_FRAGMENT_OPERAND_MISMATCH)
        .Op(n.op->id())
        .Path(n.path)
        .Resource(buf.name())
        .Condition(absl::StrCat("buffer dtype == ", DTypeName(want), " (operand ",
                                ir::Operand_Name(ml.operand()), " of '", instr.name(), "')"))
        .Evidence(absl::StrCat("buffer '", buf.name(), "' holds ", DTypeName(buf.dtype())))
        .Repair("declare an explicit conversion (decode_fragment) or store the operand type")
        .Message(absl::StrCat("'", buf.name(), "' holds ", DTypeName(buf.dtype()), " but '",
                              instr.name(), "' expects ", DTypeName(want)));

  const auto kind = buf.representation().kind();
  const int bits = DTypeBits(buf.dtype());
  const bool b16_form = ml.form() == ir::LDMATRIX_X1 || ml.form() == ir::LDMATRIX_X2 ||
                        ml.form() == ir::LDMATRIX_X4 || ml.form() == ir::LDMATRIX_X4_TRANS;
  ++checks;
  if (ml.form() == ir::MATRIX_LOAD_FORM_UNSPECIFIED) {
    sink.Error(report::DIAG_MISSING_FIELD)
        .Op(n.op->id())
        .Path(n.path)
        .Condition("a matrix load selects its instruction form")
        .Message("matrix load without a form");
    return;
  }
  // 8-bit operands of m16n8k32 stored K-contiguous (rows along K, as every stage buffer is) may
  // be read with the b16 forms: a 16-bit unit is two adjacent K elements, and the m16n8k32 8-bit
  // fragments coincide register for register with the m16n8k16 16-bit ones (PTX ISA fragment
  // layouts). The transposing form would swap 16-bit units, not bytes: not allowed. Likewise
  // E2M1 packed two to a byte (PACKED_FP4, K-contiguous) for m16n8k64: a 16-bit unit is four
  // adjacent K elements, and the m16n8k64 4-bit fragments coincide with the m16n8k16 ones.
  const bool paired_bytes = bits == 8 && ml.form() != ir::LDMATRIX_X4_TRANS &&
                            instr.shape() == ir::M16N8K32 && DTypeBits(want) == 8;
  const bool packed_nibbles = bits == 4 && kind == ir::Representation::PACKED_FP4 &&
                              ml.form() != ir::LDMATRIX_X4_TRANS && instr.shape() == ir::M16N8K64 &&
                              DTypeBits(want) == 4;
  ++checks;
  if ((b16_form && bits != 16 && !paired_bytes && !packed_nibbles) ||
      (ml.form() == ir::LDMATRIX_M16N16_B8 && bits != 8)) {
    sink.Error(report::DIAG_REPRESENTATION_INCOMPATIBLE)
        .Op(n.op->id())
        .Path(n.path)
        .Resource(buf.name())
        .Condition(absl::StrCat(ir::MatrixLoadForm_Name(ml.form()), " reads ", b16_form ? 16 : 8,
                                "-bit elements"))
        .Evidence(
            absl::StrCat("buffer '", buf.name(), "' holds ", bits, "-bit ", DTypeName(buf.dtype())))
        .Message("matrix load form does not match the element width");
    return;
  }
  if (!b16_form) return;
  // Non-transposing loads read K-contiguous rows; the .trans form reads MN-contiguous rows.
  const bool trans = ml.form() == ir::LDMATRIX_X4_TRANS;
  ++checks;
  if ((!trans && !IsRowMajorFamily(kind) && !packed_nibbles) ||
      (trans && kind != ir::Representation::COL_MAJOR)) {
    sink.Error(report::DIAG_REPRESENTATION_INCOMPATIBLE)
        .Op(n.op->id())
        .Path(n.path)
        .Resource(buf.name())
        .Condition(trans ? "LDMATRIX_X4_TRANS reads an MN-major (COL_MAJOR) tile"
                         : "non-transposing ldmatrix reads a K-major (row-major or swizzled) tile")
        .Evidence(
            absl::StrCat("buffer '", buf.name(), "' is ", ir::Representation::Kind_Name(kind)))
        .Repair(trans ? "store the tile COL_MAJOR" : "use LDMATRIX_X4_TRANS or store it row-major")
        .Message("matrix load form cannot read this representation without a repack");
    return;
  }
  if (buf.shape().dims_size() != 2) return;
  const int64_t inner = ConstDim(buf.shape().dims(trans ? 0 : 1)).value_or(0);
  const CheckedInt row_bytes =
      (CheckedInt(inner) + buf.representation().padding_elements()) * bits / 8;
  ++checks;
  if (row_bytes % 16 != 0)
    sink.Error(report::DIAG_REPRESENTATION_INCOMPATIBLE)
        .Op(n.op->id())
        .Path(n.path)
        .Resource(buf.name())
        .Condition("ldmatrix row addresses are 16-byte aligned: padded row bytes % 16 == 0")
        .Evidence(absl::StrCat("padded row = ", row_bytes.ToString(), " bytes"))
        .Repair("make padding_elements a multiple of 8 (16-bit elements)")
        .Message("shared tile rows are not 16-byte aligned");
  const int swz = SwizzleBytes(kind);
  ++checks;
  const CheckedInt unpadded_row_bytes = CheckedInt(inner) * bits / 8;
  if (swz != 0 && unpadded_row_bytes != swz)
    sink.Error(report::DIAG_REPRESENTATION_INCOMPATIBLE)
        .Op(n.op->id())
        .Path(n.path)
        .Resource(buf.name())
        .Condition(absl::StrCat(ir::Representation::Kind_Name(kind), " swizzles rows of exactly ",
                                swz, " bytes"))
        .Evidence(absl::StrCat("row = ", unpadded_row_bytes.ToString(), " bytes"))
        .Message("swizzle width does not match the tile's row width");
}

void CheckMma(const KernelGraph& g, const OpNode& n, DiagnosticSink& sink, CheckCounter& checks) {
  const ir::Mma& mma = n.op->mma();
  auto ii = g.instrs.find(mma.instr());
  if (ii == g.instrs.end()) return;
  const ir::MmaInstr& instr = *ii->second;
  auto check_operand = [&](const std::string& value, ir::Operand operand) {
    auto vi = g.values.find(value);
    if (vi == g.values.end()) return;
    ++checks;
    const ir::Operation& def = *vi->second->op;
    const bool ok = def.has_matrix_load() && def.matrix_load().operand() == operand &&
                    def.matrix_load().mma() == instr.name();
    if (!ok)
      sink.Error(report::DIAG_FRAGMENT_OPERAND_MISMATCH)
          .Op(n.op->id())
          .Path(n.path)
          .Resource(value)
          .Condition(absl::StrCat("'", value, "' is an ", ir::Operand_Name(operand),
                                  " fragment of '", instr.name(), "'"))
          .Evidence(absl::StrCat("defined by '", def.id(), "' (", OpKind(def), ")"))
          .Message(absl::StrCat("MMA operand '", value, "' is not a matching fragment"));
  };
  check_operand(mma.a(), ir::OPERAND_A);
  check_operand(mma.b(), ir::OPERAND_B);
  auto ai = g.accumulators.find(mma.acc());
  if (ai != g.accumulators.end()) {
    const ir::Accumulator& acc = *ai->second;
    ++checks;
    if (acc.dtype() != instr.accumulator() || acc.mma() != instr.name())
      sink.Error(report::DIAG_ACCUMULATOR_TYPE_MISMATCH)
          .Op(n.op->id())
          .Path(n.path)
          .Resource(acc.name())
          .Condition(absl::StrCat("accumulator is a ", DTypeName(instr.accumulator()),
                                  " fragment of '", instr.name(), "'"))
          .Evidence(absl::StrCat("'", acc.name(), "' is ", DTypeName(acc.dtype()),
                                 " declared for '", acc.mma(), "'"))
          .Message("accumulator does not match the MMA's accumulator fragment");
  }
  const bool scaled = instr.has_block_scale();
  ++checks;
  if (scaled && (mma.scale_a().empty() || mma.scale_b().empty()))
    sink.Error(report::DIAG_MISSING_FIELD)
        .Op(n.op->id())
        .Path(n.path)
        .Condition("a block-scaled MMA names scale_a and scale_b (use scale_unit for unit scale)")
        .Message("block-scaled MMA without scale operands");
  ++checks;
  if (!scaled && (!mma.scale_a().empty() || !mma.scale_b().empty()))
    sink.Error(report::DIAG_SCALE_GROUPING_MISMATCH)
        .Op(n.op->id())
        .Path(n.path)
        .Condition("a legacy (unscaled) MMA has no hardware scale operands")
        .Repair("apply scaling explicitly, or select a block-scaled instruction form")
        .Message("scale operands given to an unscaled MMA");
  if (scaled)
    for (const std::string& s : {mma.scale_a(), mma.scale_b()}) {
      auto vi = g.values.find(s);
      if (vi == g.values.end()) continue;
      const ir::Operation& def = *vi->second->op;
      ++checks;
      const ir::Operand operand = s == mma.scale_a() ? ir::OPERAND_A : ir::OPERAND_B;
      if (def.has_scale_load() &&
          (def.scale_load().operand() != operand || def.scale_load().mma() != instr.name())) {
        ++checks;
        sink.Error(report::DIAG_FRAGMENT_OPERAND_MISMATCH)
            .Op(n.op->id())
            .Path(n.path)
            .Resource(s)
            .Condition(absl::StrCat("'", s, "' holds the ", ir::Operand_Name(operand),
                                    " scales of '", instr.name(), "'"))
            .Evidence(absl::StrCat("defined by '", def.id(), "' for ",
                                   ir::Operand_Name(def.scale_load().operand()), " of '",
                                   def.scale_load().mma(), "'"))
            .Message("MMA scale operand is not a matching scale fragment");
      }
      if (def.has_scale_unit() && def.scale_unit().format() != instr.block_scale().format())
        sink.Error(report::DIAG_SCALE_GROUPING_MISMATCH)
            .Op(n.op->id())
            .Path(n.path)
            .Resource(s)
            .Condition(absl::StrCat("scale format == ", DTypeName(instr.block_scale().format())))
            .Evidence(absl::StrCat("'", s, "' is a unit ", DTypeName(def.scale_unit().format())))
            .Message("scale operand format does not match the instruction");
    }
}

// A scale_load reads the block scales of one operand of a block-scaled MMA from storage typed
// as those scales: the instruction's scale format and group size (BLOCK_SCALE representation),
// a K extent in whole groups.
void CheckScaleLoad(const KernelGraph& g, const OpNode& n, DiagnosticSink& sink,
                    CheckCounter& checks) {
  const ir::ScaleLoad& sl = n.op->scale_load();
  auto ii = g.instrs.find(sl.mma());
  if (ii == g.instrs.end()) return;  // construction reported it
  const ir::MmaInstr& instr = *ii->second;
  ++checks;
  if (!instr.has_block_scale()) {
    sink.Error(report::DIAG_SCALE_GROUPING_MISMATCH)
        .Op(n.op->id())
        .Path(n.path)
        .Resource(sl.src())
        .Condition(absl::StrCat("'", instr.name(), "' is a block-scaled MMA"))
        .Evidence(absl::StrCat("'", instr.name(), "' has no block_scale"))
        .Repair("select a block-scaled instruction form, or apply the scales explicitly")
        .Message("scale load for an unscaled MMA");
    return;
  }
  ++checks;
  if (sl.operand() != ir::OPERAND_A && sl.operand() != ir::OPERAND_B)
    sink.Error(report::DIAG_MISSING_FIELD)
        .Op(n.op->id())
        .Path(n.path)
        .Condition("a scale load names the MMA operand it scales (OPERAND_A or OPERAND_B)")
        .Message("scale load without an operand");
  const ir::BlockScale& want = instr.block_scale();
  ir::DType dtype = ir::DTYPE_UNSPECIFIED;
  const ir::Representation* repr = nullptr;
  const ir::Shape* shape = nullptr;
  if (auto ti = g.tensors.find(sl.src()); ti != g.tensors.end()) {
    dtype = ti->second->dtype();
    repr = &ti->second->representation();
    shape = &ti->second->shape();
  } else if (auto bi = g.buffers.find(sl.src()); bi != g.buffers.end()) {
    dtype = bi->second->dtype();
    repr = &bi->second->representation();
    shape = &bi->second->shape();
  } else {
    return;  // a value: its definition is checked where it is made
  }
  ++checks;
  const bool typed = dtype == want.format() && repr->kind() == ir::Representation::BLOCK_SCALE &&
                     repr->scale_format() == want.format() &&
                     repr->group_size() == want.group_size();
  if (!typed) {
    sink.Error(report::DIAG_SCALE_GROUPING_MISMATCH)
        .Op(n.op->id())
        .Path(n.path)
        .Resource(sl.src())
        .Condition(absl::StrCat("scales are ", DTypeName(want.format()), " per ", want.group_size(),
                                " elements of K (", instr.name(), ")"))
        .Evidence(absl::StrCat(
            "'", sl.src(), "' is ", DTypeName(dtype), " in ",
            ir::Representation::Kind_Name(repr->kind()),
            repr->kind() == ir::Representation::BLOCK_SCALE
                ? absl::StrCat(" of ", DTypeName(repr->scale_format()), " per ", repr->group_size())
                : ""))
        .Repair(absl::StrCat("declare '", sl.src(), "' ", DTypeName(want.format()),
                             " with representation BLOCK_SCALE { scale_format: ",
                             DTypeName(want.format()), " group_size: ", want.group_size(), " }"))
        .Message("scale storage does not match the instruction's scale format and group");
    return;
  }
  if (shape->dims_size() != 2) return;
  ++checks;
  const int64_t k_multiple = KnownMultiple(g, shape->dims(1));
  if (k_multiple % want.group_size() != 0)
    sink.Error(report::DIAG_SCALE_GROUPING_MISMATCH)
        .Op(n.op->id())
        .Path(n.path)
        .Resource(sl.src())
        .Condition(absl::StrCat("the K extent of '", sl.src(), "' is a multiple of the group (",
                                want.group_size(), ")"))
        .Evidence(absl::StrCat(DimText(shape->dims(1)), " is known a multiple of ", k_multiple))
        .Repair(
            absl::StrCat("declare ", DimText(shape->dims(1)), " multiple_of ", want.group_size()))
        .Message("a row of K would end inside a scale group");
}

void CheckStore(const KernelGraph& g, const OpNode& n, DiagnosticSink& sink, CheckCounter& checks) {
  const ir::StoreAccumulator& st = n.op->store_accumulator();
  auto ti = g.tensors.find(st.dst());
  if (ti == g.tensors.end()) return;
  ++checks;
  if (st.cast() != ti->second->dtype())
    sink.Error(report::DIAG_STORE_CAST_MISMATCH)
        .Op(n.op->id())
        .Path(n.path)
        .Resource(st.dst())
        .Condition(absl::StrCat("store cast == dtype of '", st.dst(), "' (",
                                DTypeName(ti->second->dtype()), ")"))
        .Evidence(absl::StrCat("cast = ", DTypeName(st.cast())))
        .Message("accumulator store would silently change the output precision");
}

}  // namespace

void RunFragmentPass(const PassContext& ctx, DiagnosticSink& sink, CheckCounter& checks) {
  for (const auto& gp : ctx.graphs) {
    CheckCaches(*gp, sink, checks);
    CheckMathOps(*gp, sink, checks);
    for (const auto& np : gp->nodes) {
      if (np->op->has_matrix_load()) CheckMatrixLoad(*gp, *np, sink, checks);
      if (np->op->has_mma()) CheckMma(*gp, *np, sink, checks);
      if (np->op->has_scale_load()) CheckScaleLoad(*gp, *np, sink, checks);
      if (np->op->has_store_accumulator()) CheckStore(*gp, *np, sink, checks);
    }
  }
}

}  // namespace cake::compiler
