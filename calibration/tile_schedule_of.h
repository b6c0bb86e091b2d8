// The tile schedule (calibration/tile_cost_model.h) of a warp-tiled kernel, read from its IR and
// its receipt: the accumulator's CTA tile and warp grid, the first pipeline's depth and transfer,
// the k-extent of that pipeline's staged buffers, the work schedule's split-K and raster bands, a
// producer role beside the accumulator's owner (a loader warp), an epilogue staged through
// shared memory, and an arg-reduce epilogue (a CTA walks its whole row of tiles). Any schedule an
// agent proposes is read the same way, so the cost model can be fitted on every measured candidate,
// not only on the points a proposer made. Pure; thread-safe.
#pragma once

#include <cstdint>
#include <optional>

#include "cake/ir.pb.h"
#include "tile_cost_model.h"

namespace cake::calibration {

// nullopt when the module's first kernel is not warp-tiled (no accumulator with a static CTA
// tile and a warp partition, or no staged pipeline feeding it).
std::optional<TileSchedule> TileScheduleOf(const ir::Module& module, int registers,
                                           int64_t shared_bytes);

}  // namespace cake::calibration
