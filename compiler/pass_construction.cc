// Construction validation: malformed modules, unresolved references, misplaced operations and
// the datacenter-only mechanisms that do not exist on consumer Blackwell. Things that are always
// wrong by construction are rejected here, once; later passes check relations.
#include <algorithm>
#include <set>

#include "absl/strings/str_cat.h"
#include "passes.h"
#include "schedule_limits.h"
#include "schedule_names.h"

namespace cake::compiler {
namespace {

enum class RefKind {
  kTensor,
  kScalar,
  kBuffer,
  kInstr,
  kAccumulator,
  kPipeline,
  kWork,
  kRole,
  kValue,
  kState,
  kCache,
  kSelection,
  kValueOrBuffer,
};

struct Ref {
  RefKind kind;
  std::string field;
  std::string name;
  bool optional = false;
};

std::vector<Ref> ReferencesOf(const ir::Operation& op) {
  using K = RefKind;
  switch (op.op_case()) {
    case ir::Operation::kRoleRegion:
      return {{K::kRole, "role_region.role", op.role_region().role()}};
    case ir::Operation::kForEachTile:
      return {{K::kWork, "for_each_tile.work", op.for_each_tile().work()}};
    case ir::Operation::kForKTiles:
      return {{K::kScalar, "for_k_tiles.k", op.for_k_tiles().k()}};
    case ir::Operation::kIfUniform:
      return {{K::kValue, "if_uniform.condition", op.if_uniform().condition()}};
    case ir::Operation::kProduce:
      return {{K::kPipeline, "produce.pipeline", op.produce().pipeline()}};
    case ir::Operation::kConsume:
      return {{K::kPipeline, "consume.pipeline", op.consume().pipeline()}};
    case ir::Operation::kRelease:
      return {{K::kPipeline, "release.pipeline", op.release().pipeline()}};
    case ir::Operation::kCopy:
      return {{K::kTensor, "copy.src", op.copy().src()}, {K::kBuffer, "copy.dst", op.copy().dst()}};
    case ir::Operation::kStoreShared:
      return {{K::kValue, "store_shared.src", op.store_shared().src()},
              {K::kBuffer, "store_shared.dst", op.store_shared().dst()}};
    case ir::Operation::kMatrixLoad:
      return {{K::kBuffer, "matrix_load.src", op.matrix_load().src()},
              {K::kInstr, "matrix_load.mma", op.matrix_load().mma()}};
    case ir::Operation::kMma:
      return {{K::kInstr, "mma.instr", op.mma().instr()},
              {K::kValue, "mma.a", op.mma().a()},
              {K::kValue, "mma.b", op.mma().b()},
              {K::kAccumulator, "mma.acc", op.mma().acc()},
              {K::kValue, "mma.scale_a", op.mma().scale_a(), true},
              {K::kValue, "mma.scale_b", op.mma().scale_b(), true}};
    case ir::Operation::kScaleLoad:
      return {{K::kValueOrBuffer, "scale_load.src", op.scale_load().src()},
              {K::kInstr, "scale_load.mma", op.scale_load().mma()}};
    case ir::Operation::kStoreAccumulator:
      return {{K::kAccumulator, "store_accumulator.acc", op.store_accumulator().acc()},
              {K::kTensor, "store_accumulator.dst", op.store_accumulator().dst()}};
    case ir::Operation::kGatherRecords:
      return {{K::kCache, "gather_records.cache", op.gather_records().cache()},
              {K::kSelection, "gather_records.selection", op.gather_records().selection()},
              {K::kBuffer, "gather_records.dst", op.gather_records().dst()}};
    case ir::Operation::kDecodeFragment:
      return {{K::kBuffer, "decode_fragment.records", op.decode_fragment().records()}};
    case ir::Operation::kAttentionMask:
      return {{K::kValue, "attention_mask.scores", op.attention_mask().scores()}};
    case ir::Operation::kSoftmaxUpdate:
      return {{K::kState, "softmax_update.state", op.softmax_update().state()},
              {K::kValue, "softmax_update.scores", op.softmax_update().scores()}};
    case ir::Operation::kRescale:
      return {{K::kState, "rescale.state", op.rescale().state()}};
    case ir::Operation::kQuantizeProbabilities:
      return {{K::kValue, "quantize_probabilities.probabilities",
               op.quantize_probabilities().probabilities()}};
    case ir::Operation::kRowReduce:
      return {{K::kValue, "row_reduce.src", op.row_reduce().src()}};
    case ir::Operation::kScalarMath: {
      std::vector<Ref> refs;
      for (int i = 0; i < op.scalar_math().inputs_size(); ++i)
        refs.push_back(
            {K::kValue, absl::StrCat("scalar_math.inputs[", i, "]"), op.scalar_math().inputs(i)});
      return refs;
    }
    case ir::Operation::kCrossWarpReduce:
      return {{K::kValue, "cross_warp_reduce.src", op.cross_warp_reduce().src()},
              {K::kRole, "cross_warp_reduce.role", op.cross_warp_reduce().role()},
              {K::kBuffer, "cross_warp_reduce.scratch", op.cross_warp_reduce().scratch()}};
    case ir::Operation::kArgReduce:
      return {{K::kAccumulator, "arg_reduce.acc", op.arg_reduce().acc()},
              {K::kTensor, "arg_reduce.column_norms", op.arg_reduce().column_norms(), true},
              {K::kTensor, "arg_reduce.row_norms", op.arg_reduce().row_norms(), true},
              {K::kTensor, "arg_reduce.index_dst", op.arg_reduce().index_dst()},
              {K::kTensor, "arg_reduce.value_dst", op.arg_reduce().value_dst(), true}};
    case ir::Operation::kStorePartial:
      return {{K::kState, "store_partial.state", op.store_partial().state()},
              {K::kTensor, "store_partial.dst", op.store_partial().dst()},
              {K::kTensor, "store_partial.lse", op.store_partial().lse()}};
    case ir::Operation::kMergePartials:
      return {{K::kTensor, "merge_partials.src", op.merge_partials().src()},
              {K::kTensor, "merge_partials.dst", op.merge_partials().dst()},
              {K::kTensor, "merge_partials.lse", op.merge_partials().lse()}};
    default:
      return {};
  }
}

bool Resolves(const KernelGraph& g, const Ref& r) {
  switch (r.kind) {
    case RefKind::kTensor:
      return g.tensors.count(r.name) > 0;
    case RefKind::kScalar:
      return g.scalars.count(r.name) > 0;
    case RefKind::kBuffer:
      return g.buffers.count(r.name) > 0;
    case RefKind::kInstr:
      return g.instrs.count(r.name) > 0;
    case RefKind::kAccumulator:
      return g.accumulators.count(r.name) > 0;
    case RefKind::kPipeline:
      return g.pipelines.count(r.name) > 0;
    case RefKind::kWork:
      return g.work.count(r.name) > 0;
    case RefKind::kRole:
      return g.roles.count(r.name) > 0;
    case RefKind::kValue:
      return g.values.count(r.name) > 0 || g.scalars.count(r.name) > 0;
    case RefKind::kState:
      return g.softmax_states.count(r.name) > 0;
    case RefKind::kCache:
      return g.caches.count(r.name) > 0;
    case RefKind::kSelection:
      return g.selections.count(r.name) > 0;
    case RefKind::kValueOrBuffer:
      return g.values.count(r.name) > 0 || g.buffers.count(r.name) > 0 ||
             g.tensors.count(r.name) > 0;
  }
  return false;
}

bool IsStructured(const ir::Operation& op) {
  switch (op.op_case()) {
    case ir::Operation::kRoleRegion:
    case ir::Operation::kForEachTile:
    case ir::Operation::kForKTiles:
    case ir::Operation::kIfUniform:
    case ir::Operation::kProduce:
    case ir::Operation::kConsume:
      return true;
    default:
      return false;
  }
}

void CheckForbidden(const KernelGraph& g, const OpNode& n, DiagnosticSink& sink,
                    CheckCounter& checks) {
  ++checks;
  const ir::Operation& op = *n.op;
  if (op.has_wgmma())
    sink.Error(report::DIAG_FORBIDDEN_WGMMA)
        .Op(op.id())
        .Path(n.path)
        .Condition("WGMMA (warpgroup async MMA) does not exist on SM120/SM121")
        .Repair("use a warp MMA (family: WARP_SYNC, mma.sync) with register accumulators")
        .Message("wgmma is a datacenter (sm_90a/sm_100a) instruction; consumer Blackwell has none");
  if (op.has_tcgen05_mma())
    sink.Error(report::DIAG_FORBIDDEN_TCGEN05)
        .Op(op.id())
        .Path(n.path)
        .Condition("tcgen05 MMA does not exist on SM120/SM121")
        .Repair("use a warp MMA (mma.sync) with register accumulators")
        .Message("tcgen05.mma is a datacenter (sm_100a) instruction");
  if (op.has_tmem_alloc())
    sink.Error(report::DIAG_FORBIDDEN_TMEM)
        .Op(op.id())
        .Path(n.path)
        .Resource("tensor memory")
        .Condition("TMEM does not exist on SM120/SM121")
        .Repair("keep accumulators in registers (registers.accumulator)")
        .Message("tensor memory (TMEM) allocation is a datacenter-only mechanism");
}

void CheckInstrFamilies(const KernelGraph& g, DiagnosticSink& sink, CheckCounter& checks) {
  for (const ir::MmaInstr& instr : g.kernel->instrs()) {
    ++checks;
    const std::string path = g.DeclPath("instrs", instr.name());
    switch (instr.family()) {
      case ir::WARPGROUP_ASYNC:
        sink.Error(report::DIAG_FORBIDDEN_WGMMA)
            .Path(path)
            .Resource(instr.name())
            .Condition("family WARPGROUP_ASYNC (wgmma) does not exist on SM120/SM121")
            .Repair("family: WARP_SYNC")
            .Message(absl::StrCat("instruction '", instr.name(), "' declares a WGMMA family"));
        break;
      case ir::TCGEN05:
        sink.Error(report::DIAG_FORBIDDEN_TCGEN05)
            .Path(path)
            .Resource(instr.name())
            .Condition("family TCGEN05 does not exist on SM120/SM121")
            .Repair("family: WARP_SYNC")
            .Message(absl::StrCat("instruction '", instr.name(), "' declares a tcgen05 family"));
        break;
      case ir::TCGEN05_CTA_PAIR:
        sink.Error(report::DIAG_FORBIDDEN_CTA_PAIR_MMA)
            .Path(path)
            .Resource(instr.name())
            .Condition("two-CTA MMA does not exist on SM120/SM121")
            .Repair("family: WARP_SYNC with a single-CTA tile")
            .Message(absl::StrCat("instruction '", instr.name(), "' declares a two-CTA MMA"));
        break;
      case ir::MMA_FAMILY_UNSPECIFIED:
        sink.Error(report::DIAG_MISSING_FIELD)
            .Path(path)
            .Resource(instr.name())
            .Condition("an MMA instruction declares its family")
            .Message(absl::StrCat("instruction '", instr.name(), "' has no family"));
        break;
      default:
        break;
    }
  }
}

void CheckNames(const KernelGraph& g, DiagnosticSink& sink, CheckCounter& checks) {
  std::set<std::string> seen;
  auto declare = [&](const std::string& field, const std::string& name) {
    ++checks;
    if (name.empty()) {
      sink.Error(report::DIAG_MISSING_FIELD)
          .Path(absl::StrCat(g.path, ".", field))
          .Condition("every declaration has a name")
          .Message(absl::StrCat("a declaration in '", field, "' has no name"));
      return;
    }
    if (!seen.insert(name).second)
      sink.Error(report::DIAG_DUPLICATE_NAME)
          .Path(absl::StrCat(g.path, ".", field))
          .Resource(name)
          .Condition("declaration names are unique within a kernel")
          .Message(absl::StrCat("'", name, "' is declared more than once"));
  };
  const ir::Kernel& k = *g.kernel;
  for (const auto& x : k.scalars()) declare("scalars", x.name());
  for (const auto& x : k.tensors()) declare("tensors", x.name());
  for (const auto& x : k.roles()) declare("roles", x.name());
  for (const auto& x : k.buffers()) declare("buffers", x.name());
  for (const auto& x : k.instrs()) declare("instrs", x.name());
  for (const auto& x : k.accumulators()) declare("accumulators", x.name());
  for (const auto& x : k.pipelines()) declare("pipelines", x.name());
  for (const auto& x : k.work()) declare("work", x.name());
  for (const auto& x : k.softmax_states()) declare("softmax_states", x.name());
  for (const auto& x : k.caches()) declare("caches", x.name());
  for (const auto& x : k.selections()) declare("selections", x.name());

  std::set<std::string> ids;
  for (const auto& n : g.nodes) {
    ++checks;
    if (n->op->id().empty()) {
      sink.Error(report::DIAG_MISSING_FIELD)
          .Path(n->path)
          .Condition("every operation has a stable id")
          .Message(absl::StrCat("operation '", OpKind(*n->op), "' has no id"));
    } else if (!ids.insert(n->op->id()).second) {
      sink.Error(report::DIAG_DUPLICATE_NAME)
          .Op(n->op->id())
          .Path(n->path)
          .Condition("operation ids are unique within a kernel")
          .Message(absl::StrCat("operation id '", n->op->id(), "' is used more than once"));
    }
  }
}

// Bytes of one buffer stage or accumulator tile against the IR's bound (overflow included).
void CheckBytes(const std::string& path, const std::string& owner, absl::string_view what,
                CheckedInt bytes, DiagnosticSink& sink, CheckCounter& checks) {
  ++checks;
  if (bytes.Exceeds(kMaxBufferBytes))
    sink.Error(report::DIAG_INVALID_VALUE)
        .Path(path)
        .Resource(owner)
        .Condition(absl::StrCat(what, " holds at most 2^40 bytes"))
        .Evidence(absl::StrCat(bytes.ToString(), " bytes"))
        .Message(absl::StrCat("'", owner, "' is larger than any ", what, " may be"));
}

// Names are checked before anything else reads them: a schedule with one bad name gets only
// these diagnostics, so no other message quotes the bad bytes.
bool CheckNameRules(const ir::Module& m, DiagnosticSink& sink, CheckCounter& checks) {
  ++checks;
  const std::vector<NameViolation> bad = FindNameViolations(m);
  for (const NameViolation& v : bad)
    sink.Error(report::DIAG_INVALID_NAME)
        .Path(v.path)
        .Condition(absl::StrCat("a name is an identifier of at most ", kMaxNameBytes,
                                " bytes ([A-Za-z_][A-Za-z0-9_]*), not a keyword or reserved"))
        .Evidence(absl::StrCat("\"", v.value, "\" ", v.rule))
        .Repair("rename it: letters, digits and single underscores")
        .Message(absl::StrCat(v.path, " is not a valid name: it ", v.rule));
  return bad.empty();
}

void CheckShapes(const KernelGraph& g, DiagnosticSink& sink, CheckCounter& checks) {
  auto check_shape = [&](const std::string& path, const std::string& owner, const ir::Shape& s,
                         bool symbols_allowed) {
    ++checks;
    if (s.dims_size() > kMaxRank)
      sink.Error(report::DIAG_INVALID_VALUE)
          .Path(path)
          .Resource(owner)
          .Condition(absl::StrCat("a shape has at most ", kMaxRank, " dimensions"))
          .Evidence(absl::StrCat(s.dims_size(), " dimensions"))
          .Message(absl::StrCat("'", owner, "' has too many dimensions"));
    for (const ir::Dim& d : s.dims()) {
      ++checks;
      if (d.kind_case() == ir::Dim::kSymbol) {
        if (!symbols_allowed)
          sink.Error(report::DIAG_INVALID_VALUE)
              .Path(path)
              .Resource(owner)
              .Condition("shared and register buffers have constant shapes")
              .Message(absl::StrCat("'", owner, "' has symbolic dimension '", d.symbol(), "'"));
        else if (!g.scalars.count(d.symbol()))
          sink.Error(report::DIAG_UNDEFINED_REFERENCE)
              .Path(path)
              .Resource(owner)
              .Condition("a symbolic dimension names a scalar parameter")
              .Message(absl::StrCat("'", owner, "' uses undeclared dimension '", d.symbol(), "'"));
      } else if (d.kind_case() == ir::Dim::kSize && (d.size() <= 0 || d.size() > kMaxDimExtent)) {
        sink.Error(report::DIAG_INVALID_VALUE)
            .Path(path)
            .Resource(owner)
            .Condition("1 <= a constant dimension <= 2^31")
            .Evidence(absl::StrCat("size = ", d.size()))
            .Message(absl::StrCat("'", owner, "' has dimension ", d.size()));
      } else if (d.kind_case() == ir::Dim::KIND_NOT_SET) {
        sink.Error(report::DIAG_MISSING_FIELD)
            .Path(path)
            .Resource(owner)
            .Condition("a dimension is a size or a symbol")
            .Message(absl::StrCat("'", owner, "' has an empty dimension"));
      }
    }
  };
  for (const ir::TensorParam& t : g.kernel->tensors()) {
    check_shape(g.DeclPath("tensors", t.name()), t.name(), t.shape(), true);
    ++checks;
    if (t.dtype() == ir::DTYPE_UNSPECIFIED)
      sink.Error(report::DIAG_MISSING_FIELD)
          .Path(g.DeclPath("tensors", t.name()))
          .Resource(t.name())
          .Condition("a tensor parameter declares its dtype")
          .Message(absl::StrCat("tensor '", t.name(), "' has no dtype"));
    for (const std::string& other : t.may_alias()) {
      ++checks;
      if (!g.tensors.count(other))
        sink.Error(report::DIAG_UNDEFINED_REFERENCE)
            .Path(g.DeclPath("tensors", t.name()))
            .Resource(t.name())
            .Message(absl::StrCat("tensor '", t.name(), "' may alias undeclared '", other, "'"));
    }
  }
  for (const ir::Buffer& b : g.kernel->buffers()) {
    const std::string path = g.DeclPath("buffers", b.name());
    check_shape(path, b.name(), b.shape(), false);
    ++checks;
    if (!b.pipeline().empty() && !g.pipelines.count(b.pipeline()))
      sink.Error(report::DIAG_UNDEFINED_REFERENCE)
          .Path(path)
          .Resource(b.name())
          .Message(absl::StrCat("buffer '", b.name(), "' belongs to undeclared pipeline '",
                                b.pipeline(), "'"));
    ++checks;
    const int64_t padding = b.representation().padding_elements();
    if (padding < 0 || padding > kMaxPaddingElements)
      sink.Error(report::DIAG_INVALID_VALUE)
          .Path(path)
          .Resource(b.name())
          .Condition("0 <= padding_elements <= 2^16")
          .Evidence(absl::StrCat("padding_elements = ", padding))
          .Message(absl::StrCat("buffer '", b.name(), "' has padding out of range"));
    CheckBytes(path, b.name(), "one stage of a buffer", BufferStageBytes(b), sink, checks);
  }
  for (const ir::Accumulator& a : g.kernel->accumulators()) {
    const std::string path = g.DeclPath("accumulators", a.name());
    check_shape(path, a.name(), a.shape(), false);
    CheckedInt elems = 1;
    for (const ir::Dim& d : a.shape().dims()) elems *= ConstDim(d).value_or(1);
    CheckBytes(path, a.name(), "an accumulator tile", elems * std::max(1, DTypeBits(a.dtype()) / 8),
               sink, checks);
    ++checks;
    if (a.partition().rows() < 0 || a.partition().rows() > kMaxWarpGrid ||
        a.partition().cols() < 0 || a.partition().cols() > kMaxWarpGrid)
      sink.Error(report::DIAG_INVALID_VALUE)
          .Path(path)
          .Resource(a.name())
          .Condition(absl::StrCat("0 <= partition rows, cols <= ", kMaxWarpGrid, " warps"))
          .Evidence(absl::StrCat("partition ", a.partition().rows(), " x ", a.partition().cols()))
          .Message(absl::StrCat("accumulator '", a.name(), "' has a warp grid out of range"));
    ++checks;
    if (!g.roles.count(a.owner()))
      sink.Error(report::DIAG_UNDEFINED_REFERENCE)
          .Path(path)
          .Resource(a.name())
          .Condition("an accumulator belongs to a declared role")
          .Message(
              absl::StrCat("accumulator '", a.name(), "' has undeclared owner '", a.owner(), "'"));
    ++checks;
    if (!g.instrs.count(a.mma()))
      sink.Error(report::DIAG_UNDEFINED_REFERENCE)
          .Path(path)
          .Resource(a.name())
          .Message(absl::StrCat("accumulator '", a.name(), "' names undeclared instruction '",
                                a.mma(), "'"));
  }
  for (const ir::Pipeline& p : g.kernel->pipelines()) {
    const std::string path = g.DeclPath("pipelines", p.name());
    ++checks;
    if (p.stages() < 1 || p.stages() > 8)
      sink.Error(report::DIAG_PIPE_STAGES_INVALID)
          .Path(path)
          .Resource(p.name())
          .Condition("1 <= stages <= 8")
          .Evidence(absl::StrCat("stages = ", p.stages()))
          .Message(absl::StrCat("pipeline '", p.name(), "' has ", p.stages(), " stages"));
    for (const auto* roles : {&p.producers(), &p.consumers()})
      for (const std::string& r : *roles) {
        ++checks;
        if (!g.roles.count(r))
          sink.Error(report::DIAG_UNDEFINED_REFERENCE)
              .Path(path)
              .Resource(p.name())
              .Message(absl::StrCat("pipeline '", p.name(), "' names undeclared role '", r, "'"));
      }
  }
  for (const ir::WorkSchedule& w : g.kernel->work()) {
    ++checks;
    const ir::StaticTiles* tiles = w.has_static_tiles() ? &w.static_tiles()
                                   : w.has_persistent() ? &w.persistent().tiles()
                                                        : nullptr;
    if (tiles != nullptr && !g.tensors.count(tiles->output()))
      sink.Error(report::DIAG_UNDEFINED_REFERENCE)
          .Path(g.DeclPath("work", w.name()))
          .Resource(w.name())
          .Message(absl::StrCat("work schedule '", w.name(), "' tiles undeclared tensor '",
                                tiles->output(), "'"));
    if (tiles != nullptr && (tiles->tile_m() < 0 || tiles->tile_m() > kMaxTileExtent ||
                             tiles->tile_n() < 0 || tiles->tile_n() > kMaxTileExtent))
      sink.Error(report::DIAG_INVALID_VALUE)
          .Path(g.DeclPath("work", w.name()))
          .Resource(w.name())
          .Condition(absl::StrCat("0 <= tile_m, tile_n <= ", kMaxTileExtent))
          .Evidence(absl::StrCat("tile ", tiles->tile_m(), " x ", tiles->tile_n()))
          .Message("work tile out of range");
    // A band taller than any grid is meaningless; the bound keeps the tile-index arithmetic
    // of hostile values small.
    if (tiles != nullptr &&
        (tiles->raster_group_m() < 0 || tiles->raster_group_m() > kMaxRasterGroupM))
      sink.Error(report::DIAG_INVALID_VALUE)
          .Path(g.DeclPath("work", w.name()))
          .Resource(w.name())
          .Condition(absl::StrCat("0 <= raster_group_m <= ", kMaxRasterGroupM))
          .Evidence(absl::StrCat("raster_group_m = ", tiles->raster_group_m()))
          .Message("raster_group_m out of range");
    if (w.has_persistent() &&
        (w.persistent().max_ctas() < 0 || w.persistent().max_ctas() > kMaxPersistentCtas))
      sink.Error(report::DIAG_INVALID_VALUE)
          .Path(g.DeclPath("work", w.name()))
          .Resource(w.name())
          .Condition(absl::StrCat("0 <= max_ctas <= ", kMaxPersistentCtas))
          .Evidence(absl::StrCat("max_ctas = ", w.persistent().max_ctas()))
          .Message("max_ctas out of range");
  }
  ++checks;
  const int threads = g.kernel->launch().threads_per_cta();
  if (threads <= 0 || threads % 32 != 0)
    sink.Error(report::DIAG_LAUNCH_SHAPE_INVALID)
        .Path(absl::StrCat(g.path, ".launch"))
        .Condition("threads_per_cta is a positive multiple of 32")
        .Evidence(absl::StrCat("threads_per_cta = ", threads))
        .Message("launch shape is not a whole number of warps");
}

}  // namespace

void RunConstructionPass(const PassContext& ctx, DiagnosticSink& sink, CheckCounter& checks) {
  if (!CheckNameRules(*ctx.module, sink, checks)) return;
  ++checks;
  if (ctx.module->kernels().empty())
    sink.Error(report::DIAG_MISSING_FIELD)
        .Path("kernels")
        .Condition("a module declares at least one kernel")
        .Message("module has no kernels");
  ++checks;
  if (!ctx.ptx_known)
    sink.Error(report::DIAG_MISSING_FIELD)
        .Path("target.ptx_version")
        .Condition("the PTX ISA version is explicit, as MAJOR.MINOR")
        .Evidence(absl::StrCat("ptx_version = '", ctx.module->target().ptx_version(), "'"))
        .Repair("target { ptx_version: \"8.8\" }")
        .Message("module does not state a valid PTX ISA version");

  for (const auto& gp : ctx.graphs) {
    const KernelGraph& g = *gp;
    CheckNames(g, sink, checks);
    CheckShapes(g, sink, checks);
    CheckInstrFamilies(g, sink, checks);
    bool nesting_reported = false;
    for (const auto& np : g.nodes) {
      const OpNode& n = *np;
      const ir::Operation& op = *n.op;
      ++checks;
      if (n.depth > kMaxOpDepth && !nesting_reported) {
        // Reported once, at the first operation past the limit (preorder).
        nesting_reported = true;
        sink.Error(report::DIAG_OP_NESTING_TOO_DEEP)
            .Op(op.id())
            .Path(n.path)
            .Condition(absl::StrCat("operation bodies nest at most ", kMaxOpDepth, " deep"))
            .Evidence(absl::StrCat("depth ", n.depth))
            .Repair("flatten the nest: a role, a tile loop, a k loop and a consume need 4 levels")
            .Message(absl::StrCat("operation '", op.id(), "' is nested ", n.depth,
                                  " levels deep (limit ", kMaxOpDepth, ")"));
      }
      CheckForbidden(g, n, sink, checks);
      ++checks;
      if (op.has_for_k_tiles() && op.for_k_tiles().extent() > kMaxTileExtent)
        sink.Error(report::DIAG_INVALID_VALUE)
            .Op(op.id())
            .Path(n.path)
            .Condition(absl::StrCat("for_k_tiles.extent <= ", kMaxTileExtent))
            .Evidence(absl::StrCat("extent = ", op.for_k_tiles().extent()))
            .Message("k-tile extent out of range");
      ++checks;
      if (op.op_case() == ir::Operation::OP_NOT_SET) {
        sink.Error(report::DIAG_MISSING_FIELD)
            .Op(op.id())
            .Path(n.path)
            .Condition("an operation has exactly one typed payload")
            .Message(absl::StrCat("operation '", op.id(), "' has no payload"));
        continue;
      }
      for (const Ref& r : ReferencesOf(op)) {
        if (r.optional && r.name.empty()) continue;
        ++checks;
        if (!Resolves(g, r))
          sink.Error(report::DIAG_UNDEFINED_REFERENCE)
              .Op(op.id())
              .Path(n.path)
              .Resource(r.name)
              .Condition(absl::StrCat(r.field, " names a declaration or value"))
              .Message(absl::StrCat("operation '", op.id(), "': ", r.field, " '", r.name,
                                    "' is not declared"));
      }
      ++checks;
      if (!op.body().empty() && !IsStructured(op))
        sink.Error(report::DIAG_MISPLACED_OP)
            .Op(op.id())
            .Path(n.path)
            .Condition("only structured operations own a body")
            .Message(
                absl::StrCat("operation '", op.id(), "' (", OpKind(op), ") cannot have a body"));
      ++checks;
      if (op.has_release() && n.consume != op.release().pipeline())
        sink.Error(report::DIAG_MISPLACED_OP)
            .Op(op.id())
            .Path(n.path)
            .Resource(op.release().pipeline())
            .Condition("release appears inside a consume of the same pipeline")
            .Message(absl::StrCat("release of '", op.release().pipeline(),
                                  "' outside its consume region"));
      ++checks;
      if ((op.has_produce() || op.has_consume() || IsWarpCollective(op) || op.has_copy()) &&
          n.role.empty())
        sink.Error(report::DIAG_MISPLACED_OP)
            .Op(op.id())
            .Path(n.path)
            .Condition("executable operations run inside a role_region")
            .Message(absl::StrCat("operation '", op.id(), "' is outside every role region"));
    }
  }
}

}  // namespace cake::compiler
