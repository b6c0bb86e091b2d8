// Convergence, role and pipeline-generation checks.
//  * Aligned warp operations (ldmatrix, mma.sync, setmaxnreg, warp reductions) need a complete
//    converged warp: they may not sit under a per-thread branch, and an unknown branch uniformity
//    is unknown, not pass.
//  * Roles partition the CTA's warps; an accumulator is used only by its owning role; register
//    budgets (setmaxnreg) cover whole warpgroups, every role, and fit the register file; every
//    participant of a rendezvous (named barrier) arrives as often, in the same loops, and the
//    participant sets fit the CTA's named barriers.
//  * Each pipeline generation goes Free -> Filling -> Ready -> Reading -> Free: produced by a
//    declared producer, consumed by a declared consumer in the same iteration domain, released
//    after the last read of its storage.
#include <algorithm>
#include <map>
#include <set>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "passes.h"

namespace cake::compiler {
namespace {

void CheckConvergence(const KernelGraph& g, DiagnosticSink& sink, CheckCounter& checks) {
  for (const auto& np : g.nodes) {
    const OpNode& n = *np;
    if (!IsWarpCollective(*n.op)) continue;
    ++checks;
    if (n.branch_uniformity == ir::NON_UNIFORM) {
      sink.Error(report::DIAG_DIVERGENT_COLLECTIVE)
          .Op(n.op->id())
          .Path(n.path)
          .Role(n.role)
          .Condition(absl::StrCat(OpKind(*n.op), " executes on a complete converged warp"))
          .Evidence("enclosed by if_uniform with uniformity NON_UNIFORM")
          .Repair("mask the data (zero-fill) instead of branching, or make the condition uniform")
          .Message("aligned warp operation under a per-thread branch");
    } else if (n.branch_uniformity == ir::UNIFORMITY_UNSPECIFIED) {
      sink.Unknown(report::DIAG_CONVERGENCE_UNKNOWN)
          .Op(n.op->id())
          .Path(n.path)
          .Role(n.role)
          .Condition(absl::StrCat(OpKind(*n.op), " executes on a complete converged warp"))
          .Evidence("enclosing branch does not state its uniformity")
          .Repair("state uniformity: UNIFORM_WARP or UNIFORM_CTA (proven), or restructure")
          .Message("warp convergence cannot be established");
    }
    auto ri = g.roles.find(n.role);
    ++checks;
    if (ri != g.roles.end() && ri->second->issuer() == ir::Role::ELECTED_LANE)
      sink.Error(report::DIAG_DIVERGENT_COLLECTIVE)
          .Op(n.op->id())
          .Path(n.path)
          .Role(n.role)
          .Condition("aligned warp operations run in a role whose issuer is ALL_LANES")
          .Evidence(absl::StrCat("role '", n.role, "' issues from an elected lane"))
          .Message("aligned warp operation in an elected-lane role");
  }
}

// setmaxnreg (a role's register_budget) is executed by every warp of a warpgroup alike, so a
// role with a budget owns whole aligned warpgroups; once any role redistributes registers every
// role must state its budget, and the budgets must fit the SM's register file.
void CheckRegisterBudgets(const KernelGraph& g, const TargetInfo& target, DiagnosticSink& sink,
                          CheckCounter& checks) {
  int with_budget = 0;
  CheckedInt registers = 0;
  std::vector<std::string> shares;
  for (const ir::Role& r : g.kernel->roles()) {
    if (r.register_budget() == 0) continue;
    ++with_budget;
    registers += CheckedInt(r.register_budget()) * 32 * r.warps_size();
    shares.push_back(
        absl::StrCat(r.name(), " ", r.warps_size(), " warps x 32 x ", r.register_budget()));
    const std::set<int> own(r.warps().begin(), r.warps().end());
    ++checks;
    for (int w : own) {
      const int first = w / 4 * 4;
      if (own.count(first) && own.count(first + 1) && own.count(first + 2) && own.count(first + 3))
        continue;
      sink.Error(report::DIAG_ROLE_REGISTER_WARPGROUP)
          .Path(g.DeclPath("roles", r.name()))
          .Role(r.name())
          .Condition("a role with a register budget owns whole warpgroups (warps 4k..4k+3)")
          .Evidence(absl::StrCat("warp ", w, " is in '", r.name(), "' but warps ", first, "..",
                                 first + 3, " are not all"))
          .Repair("give the role whole warpgroups, or no register budget")
          .Message(
              absl::StrCat("setmaxnreg in role '", r.name(), "' would run in part of a warpgroup"));
      break;
    }
  }
  if (with_budget == 0) return;
  ++checks;
  if (with_budget < g.kernel->roles_size()) {
    std::vector<std::string> without;
    for (const ir::Role& r : g.kernel->roles())
      if (r.register_budget() == 0) without.push_back(r.name());
    sink.Error(report::DIAG_MISSING_FIELD)
        .Path(g.DeclPath("roles", without.front()))
        .Role(without.front())
        .Condition("once one role redistributes registers, every role states its budget")
        .Evidence(absl::StrCat("no register_budget: ", absl::StrJoin(without, ", ")))
        .Message("register budgets cover only some roles: the SM's total cannot be checked");
    return;
  }
  ++checks;
  if (registers.Exceeds(target.registers_per_sm))
    sink.Error(report::DIAG_REGISTER_BUDGET_EXCEEDED)
        .Path(g.path)
        .Resource("registers")
        .Condition(absl::StrCat("roles' register budgets <= ", target.registers_per_sm,
                                " registers per SM (", target.name, ")"))
        .Evidence(absl::StrCat(absl::StrJoin(shares, " + "), " = ", registers.ToString()))
        .Repair("lower a role's budget (a loader role needs few registers)")
        .Message("register budgets exceed the register file");
}

void CheckRoles(const KernelGraph& g, DiagnosticSink& sink, CheckCounter& checks) {
  const int warps = g.kernel->launch().threads_per_cta() / 32;
  std::map<int, std::string> owner;
  for (const ir::Role& r : g.kernel->roles()) {
    const std::string path = g.DeclPath("roles", r.name());
    ++checks;
    if (r.warps().empty())
      sink.Error(report::DIAG_MISSING_FIELD)
          .Path(path)
          .Role(r.name())
          .Condition("a role owns at least one warp")
          .Message(absl::StrCat("role '", r.name(), "' has no warps"));
    for (int w : r.warps()) {
      ++checks;
      if (w < 0 || w >= warps) {
        sink.Error(report::DIAG_ROLE_WARP_OUT_OF_RANGE)
            .Path(path)
            .Role(r.name())
            .Condition(absl::StrCat("0 <= warp < ", warps, " (threads_per_cta / 32)"))
            .Evidence(absl::StrCat("warp ", w))
            .Message(absl::StrCat("role '", r.name(), "' names warp ", w, " outside the CTA"));
        continue;
      }
      auto [it, inserted] = owner.emplace(w, r.name());
      ++checks;
      if (!inserted)
        sink.Error(report::DIAG_ROLE_WARP_OVERLAP)
            .Path(path)
            .Role(r.name())
            .Condition("roles partition the CTA's warps")
            .Evidence(
                absl::StrCat("warp ", w, " belongs to '", it->second, "' and '", r.name(), "'"))
            .Message(absl::StrCat("warp ", w, " is in two roles"));
    }
    ++checks;
    if (r.register_budget() != 0 &&
        (r.register_budget() < 24 || r.register_budget() > 256 || r.register_budget() % 8 != 0))
      sink.Error(report::DIAG_INVALID_VALUE)
          .Path(path)
          .Role(r.name())
          .Condition("register_budget is a multiple of 8 in [24, 256] (setmaxnreg)")
          .Evidence(absl::StrCat("register_budget = ", r.register_budget()))
          .Message("invalid register budget");
  }
  ++checks;
  if (!g.kernel->roles().empty() && static_cast<int>(owner.size()) < warps)
    sink.Warning(report::DIAG_LAUNCH_SHAPE_INVALID)
        .Path(absl::StrCat(g.path, ".launch"))
        .Condition("every launched warp belongs to a role")
        .Evidence(absl::StrCat(owner.size(), " of ", warps, " warps assigned"))
        .Message("some launched warps belong to no role and will idle");

  for (const auto& np : g.nodes) {
    const ir::Operation& op = *np->op;
    std::string acc;
    if (op.has_mma()) acc = op.mma().acc();
    if (op.has_store_accumulator()) acc = op.store_accumulator().acc();
    if (op.has_arg_reduce()) acc = op.arg_reduce().acc();
    if (acc.empty()) continue;
    auto ai = g.accumulators.find(acc);
    if (ai == g.accumulators.end()) continue;
    ++checks;
    if (!np->role.empty() && ai->second->owner() != np->role)
      sink.Error(report::DIAG_ACCUMULATOR_CROSS_ROLE)
          .Op(op.id())
          .Path(np->path)
          .Resource(acc)
          .Role(np->role)
          .Condition(absl::StrCat("accumulator '", acc, "' is used only by its owner '",
                                  ai->second->owner(), "'"))
          .Evidence(absl::StrCat("used in role '", np->role, "'"))
          .Repair("transfer through shared storage with a pipeline handoff")
          .Message("registers do not migrate between roles");
  }
}

// Buffers an operation reads from shared storage.
std::vector<std::string> SharedReads(const ir::Operation& op) {
  if (op.has_matrix_load()) return {op.matrix_load().src()};
  if (op.has_decode_fragment()) return {op.decode_fragment().records()};
  if (op.has_scale_load()) return {op.scale_load().src()};
  if (op.has_cross_warp_reduce()) return {op.cross_warp_reduce().scratch()};
  return {};
}

std::vector<std::string> SharedWrites(const ir::Operation& op) {
  if (op.has_copy()) return {op.copy().dst()};
  if (op.has_store_shared()) return {op.store_shared().dst()};
  if (op.has_gather_records()) return {op.gather_records().dst()};
  if (op.has_cross_warp_reduce()) return {op.cross_warp_reduce().scratch()};
  return {};
}

// Every write to shared storage in a region, with the op that makes it.
void CollectSharedWrites(const OpNode& n, std::vector<std::pair<std::string, const OpNode*>>& out) {
  for (const std::string& buf : SharedWrites(*n.op)) out.emplace_back(buf, &n);
  for (const OpNode* c : n.children) CollectSharedWrites(*c, out);
}

// The innermost enclosing if_uniform, or nullptr.
const OpNode* EnclosingBranch(const OpNode& n) {
  for (const OpNode* p = n.parent; p != nullptr; p = p->parent)
    if (p->op->has_if_uniform()) return p;
  return nullptr;
}

// A TMA box lands dense, row-major, in the source tensor's orientation: at most 256 elements per
// box dimension, a box row a multiple of 16 bytes, the shared destination 128-byte aligned, and
// (swizzled) a row no wider than the swizzle span. A stage layout that differs reads other bytes
// than the box wrote.
void CheckTmaStage(const KernelGraph& g, const OpNode& n, const ir::Buffer& buf,
                   DiagnosticSink& sink, CheckCounter& checks) {
  const ir::Copy& copy = n.op->copy();
  const ir::Representation& rep = buf.representation();
  auto reject = [&](const std::string& condition, const std::string& evidence,
                    const std::string& repair) {
    sink.Error(report::DIAG_PIPE_TMA_LAYOUT)
        .Op(n.op->id())
        .Path(n.path)
        .Resource(buf.name())
        .Role(n.role)
        .Condition(condition)
        .Evidence(evidence)
        .Repair(repair)
        .Message("a TMA box cannot land in this stage layout");
  };
  const bool row_major_family = IsRowMajorFamily(rep.kind());
  ++checks;
  if (!row_major_family) {
    reject("a TMA stage is ROW_MAJOR or SWIZZLE_32B/64B/128B",
           absl::StrCat("'", buf.name(), "' is ", ir::Representation::Kind_Name(rep.kind())),
           "declare the stage SWIZZLE_64B or SWIZZLE_128B over row-major rows");
    return;
  }
  ++checks;
  if (rep.padding_elements() != 0) {
    reject("a TMA box lands dense: a TMA stage has no row padding",
           absl::StrCat("'", buf.name(), "' pads each row by ", rep.padding_elements(),
                        " elements; the box writes rows back to back"),
           "drop padding_elements and spread banks with a swizzle mode instead");
    return;
  }
  auto ti = g.tensors.find(copy.src());
  ++checks;
  if (ti != g.tensors.end() && ti->second->representation().kind() != ir::Representation::ROW_MAJOR)
    reject("a TMA tile box keeps the source's orientation: the source is ROW_MAJOR",
           absl::StrCat("source '", copy.src(), "' is ",
                        ir::Representation::Kind_Name(ti->second->representation().kind())),
           "transpose the source or use a transposing matrix load");
  if (buf.shape().dims_size() != 2) return;
  const int bits = DTypeBits(buf.dtype());
  const int64_t rows = ConstDim(buf.shape().dims(0)).value_or(0);
  const int64_t inner = ConstDim(buf.shape().dims(1)).value_or(0);
  const CheckedInt row_bytes = CheckedInt(inner) * bits / 8;
  ++checks;
  if (rows > 256 || inner > 256)
    reject("a TMA box has at most 256 elements per dimension",
           absl::StrCat("'", buf.name(), "' is ", rows, " x ", inner),
           "split the stage into boxes of at most 256 rows");
  ++checks;
  if (row_bytes % 16 != 0)
    reject("a TMA box row is a multiple of 16 bytes",
           absl::StrCat("row = ", row_bytes.ToString(), " bytes"),
           "widen the k extent of the stage");
  const int span = SwizzleBytes(rep.kind());
  ++checks;
  if (span != 0 && row_bytes.Exceeds(span))
    reject(absl::StrCat("a ", ir::Representation::Kind_Name(rep.kind()),
                        " box row is at most the swizzle span (", span, " bytes)"),
           absl::StrCat("row = ", row_bytes.ToString(), " bytes"),
           "use the swizzle mode of the row width");
  ++checks;
  if (buf.alignment_bytes() < 128)
    reject("a TMA shared destination is 128-byte aligned",
           absl::StrCat("'", buf.name(), "' declares ", buf.alignment_bytes(), " bytes"),
           "declare alignment_bytes: 128");
}

// One generation of a pipeline, seen from the produce region that fills it: every ring buffer
// of the pipeline is written exactly once. For TMA the full barrier's transaction bytes are the
// whole stage, so a missing write is a barrier that never completes (delivered < expected) and
// a second write overruns it; for cp.async a missing write is a stale slot read as new.
void CheckGeneration(const KernelGraph& g, const ir::Pipeline& p, const OpNode& fill,
                     DiagnosticSink& sink, CheckCounter& checks) {
  std::vector<std::pair<std::string, const OpNode*>> writes;
  for (const OpNode* c : fill.children) CollectSharedWrites(*c, writes);
  std::map<std::string, std::vector<const OpNode*>> by_buffer;
  CheckedInt delivered = 0;
  for (const auto& [buf, op] : writes) {
    auto bi = g.buffers.find(buf);
    if (bi == g.buffers.end() || bi->second->pipeline() != p.name()) continue;
    by_buffer[buf].push_back(op);
    if (op->op->has_copy() && op->op->copy().transfer() == ir::TMA)
      delivered += BufferStageBytes(*bi->second);
  }
  CheckedInt expected = 0;
  std::vector<std::string> ring, missing;
  for (const auto& [name, buf] : g.buffers) {
    if (buf->pipeline() != p.name()) continue;
    expected += BufferStageBytes(*buf);
    ring.push_back(absl::StrCat(name, " ", BufferStageBytes(*buf).ToString(), " B"));
    const auto& w = by_buffer[name];
    ++checks;
    if (w.empty()) {
      missing.push_back(name);
      if (p.transfer() != ir::TMA)
        sink.Error(report::DIAG_PIPE_STAGE_UNFILLED)
            .Op(fill.op->id())
            .Path(fill.path)
            .Resource(absl::StrCat(p.name(), ".", name))
            .Role(fill.role)
            .Condition("each generation writes every ring buffer of its pipeline")
            .Evidence(absl::StrCat("produce '", fill.op->id(), "' writes no '", name,
                                   "'; its consumer would read the slot's previous contents"))
            .Repair(absl::StrCat("copy into '", name, "' inside '", fill.op->id(), "'"))
            .Message("a pipeline stage is read but never filled in this generation");
    }
    ++checks;
    if (w.size() > 1)
      sink.Error(report::DIAG_PIPE_STAGE_DOUBLE_FILL)
          .Op(w[1]->op->id())
          .Path(w[1]->path)
          .Resource(absl::StrCat(p.name(), ".", name))
          .Role(fill.role)
          .Condition("one write per ring buffer per generation")
          .Evidence(absl::StrCat("'", w[0]->op->id(), "' and '", w[1]->op->id(), "' both write '",
                                 name, "' in produce '", fill.op->id(), "'"))
          .Repair("keep one copy per stage buffer; give a second tile its own buffer")
          .Message("two copies fill one pipeline stage");
  }
  ++checks;
  if (p.transfer() == ir::TMA && delivered != expected)
    sink.Error(report::DIAG_PIPE_TX_MISMATCH)
        .Op(fill.op->id())
        .Path(fill.path)
        .Resource(p.name())
        .Role(fill.role)
        .Condition(
            "the full barrier's transaction bytes equal the bytes the stage's TMA copies "
            "deliver")
        .Evidence(absl::StrCat(
            "expected ", expected.ToString(), " B (", absl::StrJoin(ring, " + "),
            "); TMA copies in '", fill.op->id(), "' deliver ", delivered.ToString(), " B",
            missing.empty() ? "" : absl::StrCat("; unfilled: ", absl::StrJoin(missing, ", "))))
        .Repair("fill every ring buffer exactly once with a TMA copy")
        .Message(expected.Exceeds(delivered.value())
                     ? "the stage's barrier would never complete"
                     : "the copies overrun the stage's transaction count");
}

// Barrier participation: the empty barrier counts every consumer warp's release and the full
// barrier one producer arrival per generation, so produce and consume (and the release inside it)
// run on every thread of their role. Under a per-warp or per-thread branch the counts cannot be
// met; under a CTA-uniform branch they are met only if the pipeline's partner regions take the same
// branch, which this analysis does not track (unknown, not pass).
void CheckParticipation(const OpNode& n, const std::string& pipeline, DiagnosticSink& sink,
                        CheckCounter& checks) {
  const OpNode* branch = EnclosingBranch(n);
  ++checks;
  if (branch == nullptr) return;
  const ir::Uniformity u = branch->op->if_uniform().uniformity();
  const char* what = n.op->has_produce() ? "produce" : "consume";
  if (u == ir::UNIFORM_WARP || u == ir::NON_UNIFORM)
    sink.Error(report::DIAG_PIPE_ARRIVAL_MISMATCH)
        .Op(n.op->id())
        .Path(n.path)
        .Resource(pipeline)
        .Role(n.role)
        .Condition(absl::StrCat(what,
                                " runs on every thread of its role: the barrier's arrival "
                                "count is derived from the role's warps"))
        .Evidence(absl::StrCat("'", n.op->id(), "' sits under '", branch->op->id(), "' (",
                               ir::Uniformity_Name(u), ")"))
        .Repair("hoist the pipeline operation out of the branch")
        .Message("some threads of the role skip a pipeline barrier");
  else
    sink.Unknown(report::DIAG_PIPE_ARRIVAL_MISMATCH)
        .Op(n.op->id())
        .Path(n.path)
        .Resource(pipeline)
        .Role(n.role)
        .Condition(absl::StrCat(what, " and its partner regions take the same branches"))
        .Evidence(absl::StrCat("'", n.op->id(), "' sits under '", branch->op->id(),
                               "'; the analysis does not relate branch conditions across roles"))
        .Repair("hoist the pipeline operation out of the branch")
        .Message("pipeline barrier participation under a branch is not analyzed");
}

void CheckPipelines(const KernelGraph& g, DiagnosticSink& sink, CheckCounter& checks) {
  std::map<std::string, std::vector<const OpNode*>> produces, consumes;
  for (const auto& np : g.nodes) {
    if (np->op->has_produce()) produces[np->op->produce().pipeline()].push_back(np.get());
    if (np->op->has_consume()) consumes[np->op->consume().pipeline()].push_back(np.get());
  }
  for (const ir::Pipeline& p : g.kernel->pipelines()) {
    const std::string path = g.DeclPath("pipelines", p.name());
    const auto& prod = produces[p.name()];
    const auto& cons = consumes[p.name()];
    ++checks;
    if (!prod.empty() && cons.empty())
      sink.Error(report::DIAG_PIPE_STAGE_UNREAD)
          .Path(path)
          .Resource(p.name())
          .Condition("every produced generation is consumed")
          .Evidence(absl::StrCat("produced by '", prod.front()->op->id(), "'; no consume"))
          .Message(absl::StrCat("pipeline '", p.name(), "' is filled but never read"));
    ++checks;
    if (prod.empty() && !cons.empty())
      sink.Error(report::DIAG_PIPE_STAGE_UNREAD)
          .Path(path)
          .Resource(p.name())
          .Condition("every consumed generation is produced")
          .Evidence(absl::StrCat("consumed by '", cons.front()->op->id(), "'; no produce"))
          .Message(absl::StrCat("pipeline '", p.name(), "' is read but never filled"));
    const std::set<std::string> producers(p.producers().begin(), p.producers().end());
    const std::set<std::string> consumers(p.consumers().begin(), p.consumers().end());
    for (const OpNode* n : prod) {
      CheckGeneration(g, p, *n, sink, checks);
      CheckParticipation(*n, p.name(), sink, checks);
      ++checks;
      if (!producers.count(n->role))
        sink.Error(report::DIAG_PIPE_ROLE_NOT_PRODUCER)
            .Op(n->op->id())
            .Path(n->path)
            .Resource(p.name())
            .Role(n->role)
            .Condition(absl::StrCat("produce runs in a producer role of '", p.name(),
                                    "': ", absl::StrJoin(p.producers(), ", ")))
            .Message(absl::StrCat("role '", n->role, "' does not produce '", p.name(), "'"));
    }
    for (const OpNode* n : cons) {
      ++checks;
      if (!consumers.count(n->role))
        sink.Error(report::DIAG_PIPE_ROLE_NOT_CONSUMER)
            .Op(n->op->id())
            .Path(n->path)
            .Resource(p.name())
            .Role(n->role)
            .Condition(absl::StrCat("consume runs in a consumer role of '", p.name(),
                                    "': ", absl::StrJoin(p.consumers(), ", ")))
            .Message(absl::StrCat("role '", n->role, "' does not consume '", p.name(), "'"));
      CheckParticipation(*n, p.name(), sink, checks);
      // Generation ownership: the release comes after the final read of the stage's storage.
      int release_at = -1;
      for (size_t i = 0; i < n->children.size(); ++i)
        if (n->children[i]->op->has_release()) release_at = static_cast<int>(i);
      ++checks;
      if (release_at < 0) {
        sink.Error(report::DIAG_PIPE_NOT_RELEASED)
            .Op(n->op->id())
            .Path(n->path)
            .Resource(p.name())
            .Condition("a consume region releases its generation")
            .Repair("add `release { pipeline: ... }` after the last read")
            .Message("stage is never released: its producer would wait forever");
        continue;
      }
      for (size_t i = release_at + 1; i < n->children.size(); ++i)
        for (const std::string& buf : SharedReads(*n->children[i]->op)) {
          auto bi = g.buffers.find(buf);
          ++checks;
          if (bi != g.buffers.end() && bi->second->pipeline() == p.name())
            sink.Error(report::DIAG_PIPE_REUSE_BEFORE_RELEASE)
                .Op(n->children[i]->op->id())
                .Path(n->children[i]->path)
                .Resource(absl::StrCat(p.name(), ".", buf))
                .Role(n->role)
                .Condition("a generation cannot be released while a consumer still reads it")
                .Evidence(absl::StrCat("'", n->children[i]->op->id(), "' reads '", buf,
                                       "' after release '", n->children[release_at]->op->id(),
                                       "'; the producer may already refill that slot"))
                .Repair("move the release after the final shared read")
                .Message("read of a pipeline stage after its release");
        }
      // Matched iteration streams: the consumer walks the same loop nest as the producer.
      for (const OpNode* pn : prod) {
        ++checks;
        if (pn->loop_nest != n->loop_nest)
          sink.Error(report::DIAG_PIPE_DOMAIN_MISMATCH)
              .Op(n->op->id())
              .Path(n->path)
              .Resource(p.name())
              .Condition("producer and consumer of a pipeline iterate the same domain")
              .Evidence(absl::StrCat("produce '", pn->op->id(), "' in [",
                                     absl::StrJoin(pn->loop_nest, ", "), "]; consume in [",
                                     absl::StrJoin(n->loop_nest, ", "), "]"))
              .Message("mismatched pipeline iteration domains");
      }
    }
  }
  // Writes to a ring happen inside a produce of its pipeline, with its transfer mechanism;
  // reads of a ring happen inside a consume of its pipeline.
  for (const auto& np : g.nodes) {
    const ir::Operation& op = *np->op;
    for (const std::string& buf : SharedWrites(op)) {
      auto bi = g.buffers.find(buf);
      if (bi == g.buffers.end() || bi->second->pipeline().empty()) continue;
      const std::string& ring = bi->second->pipeline();
      ++checks;
      if (np->produce != ring) {
        sink.Error(report::DIAG_MISPLACED_OP)
            .Op(op.id())
            .Path(np->path)
            .Resource(buf)
            .Condition(absl::StrCat("'", buf, "' is written inside a produce of '", ring, "'"))
            .Message("write to a pipeline stage without owning a Filling generation");
        continue;
      }
      auto pi = g.pipelines.find(ring);
      ++checks;
      if (op.has_copy() && pi != g.pipelines.end() &&
          op.copy().transfer() != pi->second->transfer())
        sink.Error(report::DIAG_PIPE_TRANSFER_MISMATCH)
            .Op(op.id())
            .Path(np->path)
            .Resource(ring)
            .Condition(absl::StrCat("copies into '", ring, "' use its transfer mechanism (",
                                    ir::Transfer_Name(pi->second->transfer()), ")"))
            .Evidence(absl::StrCat("copy uses ", ir::Transfer_Name(op.copy().transfer())))
            .Repair("async-group waits and transaction-barrier waits are not interchangeable")
            .Message("copy completion mechanism differs from the pipeline's");
      if (op.has_copy() && op.copy().transfer() == ir::TMA)
        CheckTmaStage(g, *np, *bi->second, sink, checks);
    }
    for (const std::string& buf : SharedReads(op)) {
      auto bi = g.buffers.find(buf);
      if (bi == g.buffers.end() || bi->second->pipeline().empty()) continue;
      ++checks;
      if (np->consume != bi->second->pipeline())
        sink.Error(report::DIAG_MISPLACED_OP)
            .Op(op.id())
            .Path(np->path)
            .Resource(buf)
            .Condition(absl::StrCat("'", buf, "' is read inside a consume of '",
                                    bi->second->pipeline(), "'"))
            .Message("read of a pipeline stage that is not Ready for this consumer");
    }
  }
}

}  // namespace

void RunConvergencePass(const PassContext& ctx, DiagnosticSink& sink, CheckCounter& checks) {
  for (const auto& g : ctx.graphs) CheckConvergence(*g, sink, checks);
}

// A rendezvous is a named barrier over the threads of the roles it names: each of them must
// arrive as often, in the same loops, as the others. A role that skips it or leaves its region
// first leaves the rest waiting forever. Arrivals under a per-warp or per-thread branch are
// partial (rejected); under a CTA-uniform branch, or in loops the analysis cannot relate across
// roles, the match is unknown.
void CheckRendezvous(const KernelGraph& g, const TargetInfo& target, DiagnosticSink& sink,
                     CheckCounter& checks) {
  struct Barrier {
    std::vector<std::string> roles;
    std::map<std::string, std::map<std::string, int>> arrivals;  // role -> loop nest -> count
    const OpNode* first = nullptr;
  };
  std::map<std::string, Barrier> barriers;  // by the sorted participant set
  for (const auto& np : g.nodes) {
    if (!np->op->has_rendezvous()) continue;
    const OpNode& n = *np;
    std::vector<std::string> roles(n.op->rendezvous().roles().begin(),
                                   n.op->rendezvous().roles().end());
    std::sort(roles.begin(), roles.end());
    roles.erase(std::unique(roles.begin(), roles.end()), roles.end());
    ++checks;
    if (roles.empty()) {
      sink.Error(report::DIAG_MISSING_FIELD)
          .Op(n.op->id())
          .Path(n.path)
          .Condition("a rendezvous names its participant roles")
          .Message("rendezvous without participants");
      continue;
    }
    bool known = true;
    for (const std::string& r : roles) {
      ++checks;
      if (g.roles.count(r)) continue;
      known = false;
      sink.Error(report::DIAG_UNDEFINED_REFERENCE)
          .Op(n.op->id())
          .Path(n.path)
          .Role(r)
          .Message(absl::StrCat("rendezvous names undeclared role '", r, "'"));
    }
    if (!known) continue;
    ++checks;
    if (!std::binary_search(roles.begin(), roles.end(), n.role)) {
      sink.Error(report::DIAG_MISPLACED_OP)
          .Op(n.op->id())
          .Path(n.path)
          .Role(n.role)
          .Condition("a rendezvous runs in a role it names")
          .Evidence(absl::StrCat("in role '", n.role.empty() ? "(none)" : n.role,
                                 "', participants ", absl::StrJoin(roles, ", ")))
          .Message("rendezvous outside its participants' regions");
      continue;
    }
    ++checks;
    if (const OpNode* branch = EnclosingBranch(n)) {
      const ir::Uniformity u = branch->op->if_uniform().uniformity();
      auto d = u == ir::UNIFORM_WARP || u == ir::NON_UNIFORM
                   ? sink.Error(report::DIAG_RENDEZVOUS_MISMATCH)
                   : sink.Unknown(report::DIAG_RENDEZVOUS_MISMATCH);
      d.Op(n.op->id())
          .Path(n.path)
          .Role(n.role)
          .Condition("every thread of every participant arrives")
          .Evidence(absl::StrCat("'", n.op->id(), "' sits under '", branch->op->id(), "' (",
                                 ir::Uniformity_Name(u), ")"))
          .Repair("hoist the rendezvous out of the branch")
          .Message(u == ir::UNIFORM_WARP || u == ir::NON_UNIFORM
                       ? "some threads of the role skip the named barrier"
                       : "named-barrier arrival under a branch is not analyzed");
      continue;
    }
    Barrier& b = barriers[absl::StrJoin(roles, ",")];
    b.roles = roles;
    if (b.first == nullptr) b.first = &n;
    ++b.arrivals[n.role][absl::StrJoin(n.loop_nest, " > ")];
  }
  // Each participant set is one hardware barrier; id 0 stays the CTA-wide one.
  ++checks;
  if (static_cast<int>(barriers.size()) > target.named_barriers - 1) {
    std::vector<std::string> sets;
    for (const auto& entry : barriers) sets.push_back(absl::StrCat("{", entry.first, "}"));
    sink.Error(report::DIAG_NAMED_BARRIERS_EXCEEDED)
        .Op(barriers.begin()->second.first->op->id())
        .Path(g.path)
        .Resource("named barriers")
        .Condition(
            absl::StrCat("distinct rendezvous participant sets <= ", target.named_barriers - 1,
                         " (", target.named_barriers, " barriers per CTA, id 0 CTA-wide)"))
        .Evidence(absl::StrCat(barriers.size(), " sets: ", absl::StrJoin(sets, " ")))
        .Repair("merge rendezvous over the same roles, or use fewer participant sets")
        .Message("more named barriers than the hardware has");
  }
  // A role's arrivals as loop nests, without the k loops that provably run once (K's declared
  // maximum within one k-tile), or (tiles_only) without any k loop.
  auto nests = [&g](const std::map<std::string, int>& arrivals, bool tiles_only) {
    std::multiset<std::string> out;
    for (const auto& [loops, count] : arrivals) {
      std::vector<std::string> kept;
      for (absl::string_view header : absl::StrSplit(loops, " > ", absl::SkipEmpty())) {
        std::vector<std::string> parts = absl::StrSplit(header, ':');
        if (parts[0] == "k" && parts.size() == 3) {
          if (tiles_only) continue;
          auto si = g.scalars.find(parts[1]);
          int64_t extent = 0;
          if (si != g.scalars.end() && si->second->max() > 0 &&
              absl::SimpleAtoi(parts[2], &extent) && si->second->max() <= extent)
            continue;
        }
        kept.push_back(std::string(header));
      }
      for (int i = 0; i < count; ++i) out.insert(absl::StrJoin(kept, " > "));
    }
    return out;
  };
  for (const auto& entry : barriers) {
    const std::string& key = entry.first;
    const Barrier& b = entry.second;  // named: lambdas below capture it
    ++checks;
    const std::map<std::string, int> none;
    auto arrivals_of = [&](const std::string& r) -> const std::map<std::string, int>& {
      auto it = b.arrivals.find(r);
      return it == b.arrivals.end() ? none : it->second;
    };
    const auto& reference = arrivals_of(b.first->role);
    std::vector<std::string> evidence;
    bool same = true, some_never = false, same_tiles = true;
    for (const std::string& r : b.roles) {
      const auto& mine = arrivals_of(r);
      std::vector<std::string> where;
      for (const auto& [loops, count] : mine)
        where.push_back(absl::StrCat(count, "x in [", loops, "]"));
      evidence.push_back(
          absl::StrCat(r, ": ", where.empty() ? "never arrives" : absl::StrJoin(where, ", ")));
      some_never |= mine.empty();
      same &= nests(mine, false) == nests(reference, false);
      same_tiles &= nests(mine, true) == nests(reference, true);
    }
    if (same) continue;
    // A participant that never arrives, or arrivals that differ only by k loops of the same tile
    // loops (counts differ for some admitted K), deadlock; arrivals in tile loops of other work
    // schedules may still match, which this analysis does not decide (unknown).
    const bool deadlock = some_never || same_tiles;
    auto d = deadlock ? sink.Error(report::DIAG_RENDEZVOUS_MISMATCH)
                      : sink.Unknown(report::DIAG_RENDEZVOUS_MISMATCH);
    d.Op(b.first->op->id())
        .Path(b.first->path)
        .Resource(absl::StrCat("rendezvous {", key, "}"))
        .Condition("every participant role arrives as often, in the same loops")
        .Evidence(absl::StrJoin(evidence, "; "))
        .Repair("give every participant the rendezvous at the same place in its loops")
        .Message(some_never   ? "a participant leaves or skips the named barrier: the others wait "
                                "forever"
                 : same_tiles ? "participants arrive a different number of times per tile (a k "
                                "loop): the barrier's generations drift apart and deadlock"
                              : "participants arrive in loops the analysis cannot relate");
  }
}

void RunRolePass(const PassContext& ctx, DiagnosticSink& sink, CheckCounter& checks) {
  for (const auto& g : ctx.graphs) {
    CheckRoles(*g, sink, checks);
    CheckRegisterBudgets(*g, *ctx.target, sink, checks);
    CheckRendezvous(*g, *ctx.target, sink, checks);
  }
}

void RunPipelinePass(const PassContext& ctx, DiagnosticSink& sink, CheckCounter& checks) {
  for (const auto& g : ctx.graphs) CheckPipelines(*g, sink, checks);
}

}  // namespace cake::compiler
