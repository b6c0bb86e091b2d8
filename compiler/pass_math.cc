// Register math and cross-warp reductions, checked with the fragments: a scalar_math names its
// function, takes the inputs its function takes and yields a type it can (F32, or a CAST's
// BF16/F16/F32); a cross_warp_reduce names its kind and rows, runs inside a region of the role it
// reduces across, under CTA-uniform control flow (every warp of the role must reach its barrier),
// with SHARED F32 scratch of at least the role's warps x rows elements.
#include "absl/strings/str_cat.h"
#include "passes.h"

namespace cake::compiler {
namespace {

void CheckScalarMath(const OpNode& n, DiagnosticSink& sink, CheckCounter& checks) {
  const ir::ScalarMath& m = n.op->scalar_math();
  ++checks;
  if (m.fn() == ir::ScalarMath::FN_UNSPECIFIED) {
    sink.Error(report::DIAG_MISSING_FIELD)
        .Op(n.op->id())
        .Path(n.path)
        .Condition("a scalar_math names its function (CAST, EXP2, RCP, MAX, ADD or MUL)")
        .Message("scalar_math without a function");
    return;
  }
  const bool unary = m.fn() == ir::ScalarMath::CAST || m.fn() == ir::ScalarMath::EXP2 ||
                     m.fn() == ir::ScalarMath::RCP;
  const int want = unary ? 1 : 2;
  ++checks;
  if (m.inputs_size() != want)
    sink.Error(report::DIAG_INVALID_VALUE)
        .Op(n.op->id())
        .Path(n.path)
        .Condition(absl::StrCat(ir::ScalarMath::Fn_Name(m.fn()), " takes ", want, " input",
                                want == 1 ? "" : "s"))
        .Evidence(absl::StrCat(m.inputs_size(), " given"))
        .Message("scalar_math with the wrong number of inputs");
  ++checks;
  const bool output_ok =
      m.output() == ir::F32 ||
      (m.fn() == ir::ScalarMath::CAST && (m.output() == ir::BF16 || m.output() == ir::F16));
  if (!output_ok)
    sink.Error(report::DIAG_INVALID_VALUE)
        .Op(n.op->id())
        .Path(n.path)
        .Condition(m.fn() == ir::ScalarMath::CAST ? "a CAST yields BF16, F16 or F32"
                                                  : "register math yields F32")
        .Evidence(absl::StrCat("output = ", DTypeName(m.output())))
        .Repair("compute in F32, then CAST")
        .Message("scalar_math output type is not one it computes");
  ++checks;
  if (n.op->results_size() != 1)
    sink.Error(report::DIAG_MISSING_FIELD)
        .Op(n.op->id())
        .Path(n.path)
        .Condition("a scalar_math names its one result")
        .Message("scalar_math without a result");
}

void CheckCrossWarpReduce(const KernelGraph& g, const OpNode& n, DiagnosticSink& sink,
                          CheckCounter& checks) {
  const ir::CrossWarpReduce& r = n.op->cross_warp_reduce();
  ++checks;
  if (r.kind() == ir::CrossWarpReduce::KIND_UNSPECIFIED || r.rows() < 1 || r.rows() > 256)
    sink.Error(report::DIAG_INVALID_VALUE)
        .Op(n.op->id())
        .Path(n.path)
        .Condition("a cross_warp_reduce names its kind (MAX or SUM) and 1..256 rows a warp")
        .Evidence(absl::StrCat("kind = ", ir::CrossWarpReduce::Kind_Name(r.kind()),
                               ", rows = ", r.rows()))
        .Message("cross_warp_reduce without a kind or a row count");
  ++checks;
  if (n.role != r.role())
    sink.Error(report::DIAG_ACCUMULATOR_CROSS_ROLE)
        .Op(n.op->id())
        .Path(n.path)
        .Role(n.role)
        .Resource(r.role())
        .Condition(absl::StrCat("a reduction across role '", r.role(), "' runs in its region"))
        .Evidence(n.role.empty() ? "outside any role region"
                                 : absl::StrCat("inside role '", n.role, "'"))
        .Message("cross_warp_reduce outside the role it reduces across");
  ++checks;
  if (n.branch_uniformity != ir::UNIFORM_CTA)
    sink.Error(report::DIAG_DIVERGENT_COLLECTIVE)
        .Op(n.op->id())
        .Path(n.path)
        .Role(n.role)
        .Condition("every warp of the role reaches the reduction's barrier: CTA-uniform control")
        .Evidence(absl::StrCat("enclosing branch is ", ir::Uniformity_Name(n.branch_uniformity)))
        .Repair("move the reduction out of the branch, or make the branch CTA-uniform")
        .Message("cross-warp reduction under control flow that may not reach every warp");
  auto ri = g.roles.find(r.role());
  auto bi = g.buffers.find(r.scratch());
  if (ri == g.roles.end() || bi == g.buffers.end()) return;  // construction reported it
  const ir::Buffer& b = *bi->second;
  const int64_t warps = ri->second->warps_size();
  CheckedInt elements = 1;
  for (const ir::Dim& d : b.shape().dims()) elements *= ConstDim(d).value_or(0);
  ++checks;
  if (b.space() != ir::SHARED || b.dtype() != ir::F32 ||
      !(elements.ok() && elements.value() >= warps * r.rows()))
    sink.Error(report::DIAG_REPRESENTATION_INCOMPATIBLE)
        .Op(n.op->id())
        .Path(n.path)
        .Resource(b.name())
        .Condition(absl::StrCat("scratch is SHARED F32 of at least ", warps, " warps x ", r.rows(),
                                " rows"))
        .Evidence(absl::StrCat("'", b.name(), "' is ", ir::AddressSpace_Name(b.space()), " ",
                               DTypeName(b.dtype()), " of ", elements.ToString(), " elements"))
        .Message("cross-warp reduction scratch cannot hold every warp's partials");
}

}  // namespace

void CheckMathOps(const KernelGraph& g, DiagnosticSink& sink, CheckCounter& checks) {
  for (const auto& n : g.nodes) {
    if (n->op->has_scalar_math()) CheckScalarMath(*n, sink, checks);
    if (n->op->has_cross_warp_reduce()) CheckCrossWarpReduce(g, *n, sink, checks);
  }
}

}  // namespace cake::compiler
