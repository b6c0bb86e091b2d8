#include "tile_schedule_of.h"

#include <algorithm>

namespace cake::calibration {
namespace {

bool HasArgReduce(const google::protobuf::RepeatedPtrField<ir::Operation>& ops) {
  for (const ir::Operation& op : ops)
    if (op.has_arg_reduce() || HasArgReduce(op.body())) return true;
  return false;
}

bool StagesInShared(const google::protobuf::RepeatedPtrField<ir::Operation>& ops) {
  for (const ir::Operation& op : ops) {
    if (op.has_store_accumulator() && op.store_accumulator().stage_in_shared()) return true;
    if (StagesInShared(op.body())) return true;
  }
  return false;
}

int64_t StaticSize(const ir::Dim& d) { return d.has_size() ? d.size() : 0; }

}  // namespace

std::optional<TileSchedule> TileScheduleOf(const ir::Module& module, int registers,
                                           int64_t shared_bytes) {
  if (module.kernels_size() == 0) return std::nullopt;
  const ir::Kernel& k = module.kernels(0);
  if (k.accumulators_size() == 0 || k.pipelines_size() == 0) return std::nullopt;
  const ir::Accumulator& acc = k.accumulators(0);
  if (acc.shape().dims_size() != 2 || !acc.has_partition()) return std::nullopt;
  TileSchedule s;
  s.tile_m = int(StaticSize(acc.shape().dims(0)));
  s.tile_n = int(StaticSize(acc.shape().dims(1)));
  s.warps_m = acc.partition().rows();
  s.warps_n = acc.partition().cols();
  const ir::Pipeline& ring = k.pipelines(0);
  s.stages = ring.stages();
  s.tma = ring.transfer() == ir::TMA;
  s.tile_k = 0;
  for (const ir::Buffer& b : k.buffers())
    if (b.pipeline() == ring.name() && b.shape().dims_size() == 2)
      s.tile_k = int(StaticSize(b.shape().dims(1)));
  if (s.tile_m <= 0 || s.tile_n <= 0 || s.tile_k <= 0 || s.warps_m <= 0 || s.warps_n <= 0 ||
      s.stages <= 0)
    return std::nullopt;
  for (const ir::WorkSchedule& w : k.work()) {
    const ir::StaticTiles* tiles = w.has_static_tiles() ? &w.static_tiles()
                                   : w.has_persistent() ? &w.persistent().tiles()
                                                        : nullptr;
    if (tiles == nullptr) continue;
    s.k_slices = std::max(1, tiles->k_slices());
    s.raster_group_m = std::max(1, tiles->raster_group_m());
  }
  for (const ir::Role& r : k.roles())
    if (r.name() != acc.owner()) s.loader_warp = true;
  s.staged_store = StagesInShared(k.ops());
  s.row_walk = HasArgReduce(k.ops());
  s.registers = registers;
  s.shared_bytes = shared_bytes;
  return s;
}

}  // namespace cake::calibration
