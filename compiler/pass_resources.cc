// Resources against device limits (shared memory per block, threads, registers) and the
// contracts of multi-kernel programs (workspaces, split partial formats).
#include <algorithm>
#include <map>
#include <set>

#include "absl/strings/str_cat.h"
#include "passes.h"

namespace cake::compiler {
namespace {

constexpr int64_t kRegionAlign = 128;
constexpr int kAddressAndLoopRegisters = 40;

}  // namespace

SharedPlan PlanShared(const KernelGraph& g) {
  SharedPlan plan;
  CheckedInt offset = 0;
  for (const ir::Buffer& b : g.kernel->buffers()) {
    if (b.space() != ir::SHARED) continue;
    SharedRegionPlan r;
    r.name = b.name();
    r.offset = offset.value();
    const CheckedInt stage = AlignUp(BufferStageBytes(b), 16);
    r.bytes_per_stage = stage.value();
    r.stages = BufferStages(g, b);
    offset = AlignUp(offset + stage * r.stages, kRegionAlign);
    plan.regions.push_back(r);
  }
  CheckedInt barriers = 0;
  for (const ir::Pipeline& p : g.kernel->pipelines())
    if (p.transfer() == ir::TMA) barriers += CheckedInt(16) * std::max(1, p.stages());
  const CheckedInt total = offset + barriers;
  plan.barrier_bytes = barriers.value();
  plan.total_bytes = total.value();
  plan.overflowed = !total.ok();
  return plan;
}

int EstimateRegistersPerThread(const KernelGraph& g) {
  const int threads = std::max(32, g.kernel->launch().threads_per_cta());
  CheckedInt regs = kAddressAndLoopRegisters;
  for (const ir::Accumulator& acc : g.kernel->accumulators()) {
    int owner_threads = threads;
    auto ri = g.roles.find(acc.owner());
    if (ri != g.roles.end() && !ri->second->warps().empty())
      owner_threads = 32 * ri->second->warps_size();
    CheckedInt elems = 1;
    for (const ir::Dim& d : acc.shape().dims()) elems *= ConstDim(d).value_or(1);
    const CheckedInt words = elems * std::max(32, DTypeBits(acc.dtype())) / 32;
    regs += words / owner_threads;
    // One k-step of operand fragments for the warp tile: A is 16xK16 per 16 rows (4 regs),
    // B is K16x8 per 8 columns (2 regs).
    if (acc.partition().rows() > 0 && acc.partition().cols() > 0 && acc.shape().dims_size() == 2) {
      const CheckedInt wm =
          CheckedInt(ConstDim(acc.shape().dims(0)).value_or(0)) / acc.partition().rows();
      const CheckedInt wn =
          CheckedInt(ConstDim(acc.shape().dims(1)).value_or(0)) / acc.partition().cols();
      regs += wm / 16 * 4 + wn / 8 * 2;
    }
  }
  // Saturated: an estimate past any register file is simply "too many" (an overflow included).
  return static_cast<int>(std::min<int64_t>(regs.value(), 1 << 20));
}

void RunResourcePass(const PassContext& ctx, DiagnosticSink& sink, CheckCounter& checks) {
  for (const auto& gp : ctx.graphs) {
    const KernelGraph& g = *gp;
    const int cluster = g.kernel->launch().cluster_size();
    ++checks;
    if (cluster < 0 || cluster > ctx.target->max_cluster_size)
      sink.Error(report::DIAG_LAUNCH_SHAPE_INVALID)
          .Path(absl::StrCat(g.path, ".launch"))
          .Condition(absl::StrCat("0 <= cluster_size <= ", ctx.target->max_cluster_size, " on ",
                                  ctx.target->name))
          .Evidence(absl::StrCat("cluster_size = ", cluster))
          .Repair("use a cluster of at most the target's portable size, or none")
          .Message("thread block cluster size is outside the target's limit");
    const SharedPlan plan = PlanShared(g);
    ++checks;
    // Fails closed: a layout whose size overflowed is over every budget.
    if (plan.overflowed || plan.total_bytes > ctx.target->shared_per_block_optin) {
      const SharedRegionPlan* largest = nullptr;
      std::string breakdown;
      auto region_bytes = [](const SharedRegionPlan& r) {
        return CheckedInt(r.bytes_per_stage) * r.stages;
      };
      for (const SharedRegionPlan& r : plan.regions) {
        if (largest == nullptr || region_bytes(r).Exceeds(region_bytes(*largest).value()))
          largest = &r;
        absl::StrAppend(&breakdown, breakdown.empty() ? "" : "; ", r.name, " = ", r.bytes_per_stage,
                        " B x ", r.stages, " stages");
      }
      const std::string needed =
          plan.overflowed ? "more than 2^63" : absl::StrCat(plan.total_bytes);
      auto d = sink.Error(report::DIAG_SHARED_BUDGET_EXCEEDED);
      d.Path(largest ? g.DeclPath("buffers", largest->name) : g.path)
          .Resource(largest ? largest->name : "shared memory")
          .Condition(absl::StrCat("shared bytes per block <= ", ctx.target->shared_per_block_optin,
                                  " (", ctx.target->name, " opt-in limit)"))
          .Evidence(absl::StrCat(
              needed, " B needed: ", breakdown,
              plan.barrier_bytes ? absl::StrCat("; barriers = ", plan.barrier_bytes, " B") : ""))
          .Repair("fewer stages, a smaller k-tile or CTA tile, or less padding")
          .Message(absl::StrCat("shared memory ", needed, " B exceeds ",
                                ctx.target->shared_per_block_optin, " B; largest buffer '",
                                largest ? largest->name : "?", "' needs ",
                                largest ? region_bytes(*largest).ToString() : "0", " B"));
    }
    const int threads = g.kernel->launch().threads_per_cta();
    ++checks;
    if (threads > ctx.target->max_threads_per_cta)
      sink.Error(report::DIAG_THREADS_EXCEEDED)
          .Path(absl::StrCat(g.path, ".launch"))
          .Condition(absl::StrCat("threads_per_cta <= ", ctx.target->max_threads_per_cta))
          .Evidence(absl::StrCat("threads_per_cta = ", threads))
          .Message("too many threads per CTA");
    const int regs = EstimateRegistersPerThread(g);
    // With every role's budget stated (setmaxnreg), threads do not all hold the same count: the
    // role pass checks the budgets' sum against the register file, and here the accumulator's
    // owner must be given at least the estimate.
    bool redistributed = g.kernel->roles_size() > 0;
    for (const ir::Role& r : g.kernel->roles()) redistributed &= r.register_budget() > 0;
    if (redistributed) {
      for (const ir::Accumulator& acc : g.kernel->accumulators()) {
        auto owner = g.roles.find(acc.owner());
        if (owner == g.roles.end()) continue;
        ++checks;
        if (owner->second->register_budget() < regs)
          sink.Error(report::DIAG_REGISTER_BUDGET_EXCEEDED)
              .Path(g.DeclPath("roles", acc.owner()))
              .Role(acc.owner())
              .Resource(acc.name())
              .Condition("the accumulator owner's register budget >= the estimate")
              .Evidence(absl::StrCat("budget ", owner->second->register_budget(), " < estimate ",
                                     regs,
                                     " registers/thread (accumulators + one k-step of "
                                     "fragments + ",
                                     kAddressAndLoopRegisters, ")"))
              .Repair("a larger budget for the owner, taken from another role")
              .Message(absl::StrCat("accumulator '", acc.name(), "' does not fit role '",
                                    acc.owner(), "''s register budget"));
      }
      continue;
    }
    ++checks;
    if (regs > ctx.target->max_registers_per_thread ||
        (CheckedInt(regs) * std::max(threads, 1)).Exceeds(ctx.target->registers_per_sm)) {
      sink.Error(report::DIAG_REGISTER_BUDGET_EXCEEDED)
          .Path(g.path)
          .Resource("registers")
          .Condition(
              absl::StrCat("estimated registers/thread <= ", ctx.target->max_registers_per_thread,
                           " and x threads <= ", ctx.target->registers_per_sm))
          .Evidence(absl::StrCat("estimate ", regs,
                                 " registers/thread (accumulators + one "
                                 "k-step of fragments + ",
                                 kAddressAndLoopRegisters, ") x ", threads, " threads"))
          .Repair("a smaller warp tile (more warps or a smaller CTA tile)")
          .Message("accumulator tile cannot live in registers");
    } else if (regs > 168) {
      sink.Hint(report::DIAG_REGISTER_ESTIMATE_HIGH)
          .Path(g.path)
          .Resource("registers")
          .Evidence(absl::StrCat("estimate ", regs, " registers/thread"))
          .Message("high register estimate: occupancy will be low; the compiled report decides");
    }
  }
}

void RunProgramPass(const PassContext& ctx, DiagnosticSink& sink, CheckCounter& checks) {
  const ir::Module& m = *ctx.module;
  std::set<std::string> kernels;
  for (const ir::Kernel& k : m.kernels()) kernels.insert(k.name());
  std::map<std::string, const ir::Workspace*> workspaces;
  for (int i = 0; i < m.workspaces_size(); ++i) {
    const ir::Workspace& w = m.workspaces(i);
    workspaces[w.name()] = &w;
    const std::string path = absl::StrCat("workspaces[", i, "]");
    for (const std::string& k : {w.producer(), w.consumer()}) {
      ++checks;
      if (!kernels.count(k))
        sink.Error(report::DIAG_UNDEFINED_REFERENCE)
            .Path(path)
            .Resource(w.name())
            .Message(absl::StrCat("workspace '", w.name(), "' names undeclared kernel '", k, "'"));
    }
    ++checks;
    if (w.format().normalization() == ir::PartialFormat::NORMALIZATION_UNSPECIFIED ||
        w.format().lse_units() == ir::PartialFormat::LSE_UNITS_UNSPECIFIED)
      sink.Error(report::DIAG_PARTIAL_FORMAT_MISMATCH)
          .Path(path)
          .Resource(w.name())
          .Condition("a split partial declares its normalization and LSE units")
          .Repair("format { normalization: UNNORMALIZED_MAX_SUM lse_units: LOG2 }")
          .Message("partial format is not declared: the merge could reinterpret it");
  }
  for (int i = 0; i < m.dependencies_size(); ++i) {
    const ir::Dependency& d = m.dependencies(i);
    for (const std::string& k : {d.producer(), d.consumer()}) {
      ++checks;
      if (!kernels.count(k))
        sink.Error(report::DIAG_UNDEFINED_REFERENCE)
            .Path(absl::StrCat("dependencies[", i, "]"))
            .Message(absl::StrCat("dependency names undeclared kernel '", k, "'"));
    }
    for (const std::string& w : d.workspace()) {
      ++checks;
      if (!workspaces.count(w))
        sink.Error(report::DIAG_WORKSPACE_UNDECLARED)
            .Path(absl::StrCat("dependencies[", i, "]"))
            .Resource(w)
            .Message(absl::StrCat("dependency uses undeclared workspace '", w, "'"));
    }
  }
  for (const auto& gp : ctx.graphs)
    for (const auto& np : gp->nodes) {
      std::string dst;
      if (np->op->has_store_partial()) dst = np->op->store_partial().dst();
      if (np->op->has_merge_partials()) dst = np->op->merge_partials().src();
      if (dst.empty()) continue;
      ++checks;
      if (!workspaces.count(dst))
        sink.Error(report::DIAG_WORKSPACE_UNDECLARED)
            .Op(np->op->id())
            .Path(np->path)
            .Resource(dst)
            .Condition("split partials live in a declared workspace with a partial format")
            .Message(absl::StrCat("'", dst, "' is not a declared workspace"));
    }
}

}  // namespace cake::compiler
