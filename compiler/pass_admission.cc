// Target and instruction admission: every instruction form a schedule selects must be admitted by
// the target's row of the descriptor table, at the declared PTX version, and within what the
// pinned toolchain can emit. No silent architecture substitution: a form the target lacks is
// rejected, never replaced.
#include "absl/strings/str_cat.h"
#include "admission.h"
#include "passes.h"

namespace cake::compiler {
namespace {

void Admit(const PassContext& ctx, const InstrDescriptor& d, const std::string& op_id,
           const std::string& path, DiagnosticSink& sink, CheckCounter& checks) {
  if (d.datacenter_only) return;  // rejected at construction
  ++checks;
  if (!d.AdmittedOn(ctx.target->arch)) {
    std::string admitted;
    for (const TargetInfo& t : AllTargets())
      if (d.AdmittedOn(t.arch)) absl::StrAppend(&admitted, admitted.empty() ? "" : ", ", t.name);
    sink.Error(report::DIAG_INSTR_NOT_ADMITTED)
        .Op(op_id)
        .Path(path)
        .Resource(std::string(d.key))
        .Condition(absl::StrCat(d.ptx_form, " is admitted on ", ctx.target->name))
        .Evidence(absl::StrCat("admitted targets: ", admitted.empty() ? "none" : admitted))
        .Repair(
            "select an instruction form admitted by this target, or compile for a target "
            "that admits this one")
        .Message(absl::StrCat("'", d.key, "' is not admitted on ", ctx.target->name));
    return;
  }
  ++checks;
  if (ctx.ptx_known && ctx.ptx < d.min_ptx)
    sink.Error(report::DIAG_PTX_VERSION_TOO_OLD)
        .Op(op_id)
        .Path(path)
        .Resource(std::string(d.key))
        .Condition(absl::StrCat("ptx_version >= ", d.min_ptx.ToString()))
        .Evidence(absl::StrCat("declared ptx_version = ", ctx.ptx.ToString()))
        .Repair(absl::StrCat("target { ptx_version: \"", d.min_ptx.ToString(), "\" }"))
        .Message(absl::StrCat("'", d.key, "' needs PTX ISA ", d.min_ptx.ToString()));
}

}  // namespace

void RunAdmissionPass(const PassContext& ctx, DiagnosticSink& sink, CheckCounter& checks) {
  ++checks;
  if (ctx.ptx_known && ctx.ptx < ctx.target->min_ptx)
    sink.Error(report::DIAG_PTX_VERSION_TOO_OLD)
        .Path("target.ptx_version")
        .Condition(absl::StrCat(ctx.target->name,
                                " needs ptx_version >= ", ctx.target->min_ptx.ToString()))
        .Evidence(absl::StrCat("declared ptx_version = ", ctx.ptx.ToString()))
        .Repair(absl::StrCat("target { ptx_version: \"", ctx.target->min_ptx.ToString(), "\" }"))
        .Message(absl::StrCat("PTX ISA ", ctx.ptx.ToString(), " predates ", ctx.target->name));
  ++checks;
  if (ctx.ptx_known && ctx.toolchain_ptx && *ctx.toolchain_ptx < ctx.ptx)
    sink.Error(report::DIAG_TOOLCHAIN_PTX_TOO_OLD)
        .Path("target.ptx_version")
        .Condition("the pinned toolchain emits at least the declared PTX ISA version")
        .Evidence(absl::StrCat("toolchain emits PTX ", ctx.toolchain_ptx->ToString(),
                               "; schedule declares ", ctx.ptx.ToString()))
        .Message("the pinned toolchain is older than the schedule's PTX ISA version");

  for (const auto& gp : ctx.graphs) {
    const KernelGraph& g = *gp;
    for (const ir::MmaInstr& instr : g.kernel->instrs()) {
      if (instr.family() != ir::WARP_SYNC) continue;
      const std::string path = g.DeclPath("instrs", instr.name());
      bool shape_known = false;
      ++checks;
      const InstrDescriptor* d = FindMma(instr, &shape_known);
      if (d == nullptr) {
        const std::string sig =
            absl::StrCat(ir::MmaShape_Name(instr.shape()), " ", DTypeName(instr.a()), " x ",
                         DTypeName(instr.b()), " -> ", DTypeName(instr.accumulator()),
                         instr.has_block_scale()
                             ? absl::StrCat(" scaled by ", DTypeName(instr.block_scale().format()))
                             : "");
        sink.Error(shape_known ? report::DIAG_MMA_TYPE_UNSUPPORTED
                               : report::DIAG_MMA_SHAPE_UNSUPPORTED)
            .Path(path)
            .Resource(instr.name())
            .Condition(shape_known ? "the operand/accumulator types form a warp MMA of this shape"
                                   : "the shape is a warp MMA shape of the descriptor table")
            .Evidence(sig)
            .Repair(
                "BF16/F16 use M16N8K16 with an F32 accumulator; FP8 uses M16N8K32; NVFP4 "
                "uses M16N8K64 with UE4M3 scales")
            .Message(absl::StrCat("no warp MMA form for ", sig));
        continue;
      }
      ++checks;
      if (d->mma->scale_format != ir::DTYPE_UNSPECIFIED &&
          instr.block_scale().group_size() != d->mma->scale_group)
        sink.Error(report::DIAG_SCALE_GROUPING_MISMATCH)
            .Path(path)
            .Resource(instr.name())
            .Condition(
                absl::StrCat("block-scale group_size == ", d->mma->scale_group, " for ", d->key))
            .Evidence(absl::StrCat("group_size = ", instr.block_scale().group_size()))
            .Message("block-scale grouping does not match the instruction's scale vector");
      Admit(ctx, *d, "", path, sink, checks);
    }
    for (const ir::Role& role : g.kernel->roles())
      if (role.register_budget() > 0)
        Admit(ctx, *FindInstruction("setmaxnreg.inc"), "", g.DeclPath("roles", role.name()), sink,
              checks);
    for (const ir::Pipeline& p : g.kernel->pipelines())
      for (const InstrDescriptor* d : InstructionsForTransfer(p.transfer()))
        Admit(ctx, *d, "", g.DeclPath("pipelines", p.name()), sink, checks);
    for (const auto& np : g.nodes) {
      const ir::Operation& op = *np->op;
      if (op.has_matrix_load())
        for (const InstrDescriptor* d : InstructionsForLoadForm(op.matrix_load().form()))
          Admit(ctx, *d, op.id(), np->path, sink, checks);
      if (op.has_copy())
        for (const InstrDescriptor* d : InstructionsForTransfer(op.copy().transfer()))
          Admit(ctx, *d, op.id(), np->path, sink, checks);
      if (op.has_register_budget())
        Admit(ctx, *FindInstruction("setmaxnreg.inc"), op.id(), np->path, sink, checks);
    }
  }
}

}  // namespace cake::compiler
