// Memory effects: the set of global elements each CTA writes. A tile-scoped store writes its
// CTA's output tile; CTAs of distinct tiles write disjoint sets, and the k_slices CTAs of one
// tile (split-K) write the same set, which is a race unless the schedule merges their partials.
// A store whose write set cannot be derived from the tile loop is reported unknown, not accepted.
#include "absl/strings/str_cat.h"
#include "passes.h"
#include "schedule_limits.h"

namespace cake::compiler {
namespace {

bool SameShape(const ir::Shape& a, const ir::Shape& b) {
  if (a.dims_size() != b.dims_size()) return false;
  for (int i = 0; i < a.dims_size(); ++i)
    if (a.dims(i).size() != b.dims(i).size() || a.dims(i).symbol() != b.dims(i).symbol())
      return false;
  return true;
}

struct GlobalWrite {
  std::string tensor;
  bool mergeable = false;  // the ordered workspace merge exists for this operation kind
};

// The global tensors an operation writes.
std::vector<GlobalWrite> WritesOf(const ir::Operation& op) {
  if (op.has_store_accumulator()) return {{op.store_accumulator().dst(), true}};
  if (op.has_arg_reduce()) {
    std::vector<GlobalWrite> out = {{op.arg_reduce().index_dst(), false}};
    if (!op.arg_reduce().value_dst().empty()) out.push_back({op.arg_reduce().value_dst(), false});
    return out;
  }
  return {};
}

void CheckWrite(const KernelGraph& g, const OpNode& n, const GlobalWrite& w, DiagnosticSink& sink,
                CheckCounter& checks) {
  ++checks;
  std::string work;
  const ir::StaticTiles* tiles = EnclosingTiles(g, n, &work);
  if (tiles == nullptr) {
    sink.Unknown(report::DIAG_MEM_WRITE_SET_UNKNOWN)
        .Op(n.op->id())
        .Path(n.path)
        .Resource(w.tensor)
        .Condition("a global store lies in a tile loop whose tiles partition its tensor")
        .Message(absl::StrCat("write set of '", w.tensor,
                              "' not derived: the store is in no static or persistent tile loop"));
    return;
  }
  // A tensor of the tiled output's shape is partitioned by the same tiles (arg_reduce writes an
  // index and a value tensor of one shape; the work schedule names one of them).
  auto written = g.tensors.find(w.tensor), tiled = g.tensors.find(tiles->output());
  const bool same_partition = written != g.tensors.end() && tiled != g.tensors.end() &&
                              SameShape(written->second->shape(), tiled->second->shape());
  if (w.tensor != tiles->output() && !same_partition) {
    sink.Unknown(report::DIAG_MEM_WRITE_SET_UNKNOWN)
        .Op(n.op->id())
        .Path(n.path)
        .Resource(w.tensor)
        .Condition(absl::StrCat("the store writes the tensor work '", work, "' tiles"))
        .Evidence(absl::StrCat("work '", work, "' tiles '", tiles->output(), "'"))
        .Message(absl::StrCat("write set of '", w.tensor,
                              "' not derived: it is neither the tensor the tile loop partitions "
                              "nor of its shape"));
    return;
  }
  ++checks;
  const int slices = std::max(tiles->k_slices(), 1);
  if (slices == 1) return;  // one CTA per tile: disjoint write sets
  const bool merged = w.mergeable && tiles->k_merge() == ir::K_MERGE_ORDERED_WORKSPACE;
  if (merged) {
    ++checks;
    auto acc = g.accumulators.find(n.op->store_accumulator().acc());
    if (acc != g.accumulators.end() && acc->second->dtype() != ir::F32)
      sink.Error(report::DIAG_ACCUMULATOR_TYPE_MISMATCH)
          .Op(n.op->id())
          .Path(n.path)
          .Resource(acc->first)
          .Condition("the ordered workspace merge adds FP32 partials")
          .Evidence(
              absl::StrCat("accumulator '", acc->first, "' is ", DTypeName(acc->second->dtype())))
          .Message("split-K partials must be FP32 accumulators");
    return;
  }
  sink.Error(report::DIAG_MEM_WRITE_RACE)
      .Op(n.op->id())
      .Path(n.path)
      .Resource(w.tensor)
      .Condition("at most one CTA writes each output element, or the slices' writes are merged")
      .Evidence(absl::StrCat("work '", work, "': k_slices = ", slices, " CTAs per ",
                             tiles->tile_m(), "x", tiles->tile_n(), " tile of '", tiles->output(),
                             "', k_merge = ", ir::KMerge_Name(tiles->k_merge()),
                             w.mergeable ? "" : "; this operation has no merge"))
      .Repair(w.mergeable ? "k_merge: K_MERGE_ORDERED_WORKSPACE" : "k_slices: 1")
      .Message(absl::StrCat(slices, " CTAs store the same elements of '", w.tensor,
                            "' with plain stores: the result is whichever slice wrote last"));
}

}  // namespace

void RunMemoryEffectsPass(const PassContext& ctx, DiagnosticSink& sink, CheckCounter& checks) {
  for (const auto& g : ctx.graphs) {
    for (const ir::WorkSchedule& w : g->kernel->work()) {
      const ir::StaticTiles* tiles = w.has_static_tiles() ? &w.static_tiles()
                                     : w.has_persistent() ? &w.persistent().tiles()
                                                          : nullptr;
      if (tiles == nullptr) continue;
      ++checks;
      if (tiles->k_slices() < 0 || tiles->k_slices() > kMaxKSlices)
        sink.Error(report::DIAG_INVALID_VALUE)
            .Path(g->DeclPath("work", w.name()))
            .Resource(w.name())
            .Condition(absl::StrCat("0 <= k_slices <= ", kMaxKSlices))
            .Evidence(absl::StrCat("k_slices = ", tiles->k_slices()))
            .Message("k_slices out of range");
    }
    for (const auto& node : g->nodes)
      for (const GlobalWrite& w : WritesOf(*node->op)) CheckWrite(*g, *node, w, sink, checks);
  }
}

}  // namespace cake::compiler
