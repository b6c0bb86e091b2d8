// The exported launcher (launcher/cake_launcher.h) launches by the rules the daemon's worker
// (gpuqueue/worker/kernel.h) validated and timed the schedule under: the same workspace bytes, the
// same grid and the same tensor-map geometry, or both refuse, on random launch fields and extents
// (hostile ones included).
#include <random>

#include <gtest/gtest.h>

#include "cake_launcher.h"
#include "gpuqueue/worker/kernel.h"

namespace cake {
namespace {

// The exported launcher sizes a caller's workspace exactly as the worker sized the one the
// schedule was validated and timed with: the same bytes, or both refuse, on random fields and
// extents (hostile ones included).
TEST(LaunchRules, WorkspaceBytesAgree) {
  std::mt19937_64 rng(std::random_device{}());
  int sized = 0, refused = 0;
  for (int trial = 0; trial < 20000; ++trial) {
    report::LaunchSpec::Arg a;
    a.set_kind(report::LaunchSpec::Arg::WORKSPACE);
    a.set_name("ws");
    a.set_rows("M");
    a.set_cols("N");
    a.set_box_rows(static_cast<int32_t>(rng() % 300) - 2);
    a.set_box_cols(static_cast<int32_t>(rng() % 300) - 2);
    a.set_bytes_per_element(static_cast<int64_t>(rng() % 5000) - 10);
    a.set_bytes_per_tile(static_cast<int64_t>(rng() % 5000) - 10);
    auto extent = [&] {
      switch (rng() % 4) {
        case 0:
          return static_cast<int64_t>(rng() % 5000);
        case 1:
          return static_cast<int64_t>(rng() % (int64_t{1} << 31));
        case 2:
          return (int64_t{1} << 31) - static_cast<int64_t>(rng() % 3);
        default:
          return -static_cast<int64_t>(rng() % 3);
      }
    };
    gpuqueue::KernelArgs args;
    args.scalars = {{"M", extent()}, {"N", extent()}};
    cake_launcher::ArgSpec spec{cake_launcher::ArgKind::kWorkspace,
                                a.name(),
                                a.rows(),
                                a.cols(),
                                a.box_rows(),
                                a.box_cols(),
                                0,
                                0,
                                a.bytes_per_element(),
                                a.bytes_per_tile()};
    auto worker = gpuqueue::WorkspaceBytes(a, args);
    uint64_t launcher = 0;
    const cake_launcher::Status s = cake_launcher::WorkspaceArgBytes(
        spec, {args.scalars.begin(), args.scalars.end()}, &launcher);
    ASSERT_EQ(worker.ok(), s.ok()) << a.DebugString() << " M=" << args.scalars["M"]
                                   << " N=" << args.scalars["N"] << ": " << s.message();
    if (worker.ok()) {
      ASSERT_EQ(*worker, launcher) << a.DebugString();
      ++sized;
    } else {
      ++refused;
    }
  }
  EXPECT_GT(sized, 1000);
  EXPECT_GT(refused, 1000);
}

TEST(LaunchRules, GridsAgree) {
  std::mt19937_64 rng(std::random_device{}());
  const std::vector<std::string> extents = {"", "M", "N", "Q"};  // Q: never bound
  int launched = 0, refused = 0;
  for (int trial = 0; trial < 20000; ++trial) {
    report::LaunchSpec launch;
    cake_launcher::EntrySpec entry;
    report::LaunchSpec::GridDim* dims[3] = {launch.mutable_grid_x(), launch.mutable_grid_y(),
                                            launch.mutable_grid_z()};
    for (int d = 0; d < 3; ++d) {
      dims[d]->set_extent(extents[rng() % extents.size()]);
      dims[d]->set_divisor(static_cast<int32_t>(rng() % 300) - 2);
      dims[d]->set_count(static_cast<int32_t>(rng() % 8) - 2);
      entry.grid[d] = {dims[d]->extent(), dims[d]->divisor(), dims[d]->count()};
    }
    launch.set_persistent(rng() % 2 == 0);
    entry.persistent = launch.persistent();
    const int64_t resident = static_cast<int64_t>(rng() % 2000);
    std::map<std::string, int64_t> scalars = {{"M", static_cast<int64_t>(rng() % (1 << 20))},
                                              {"N", static_cast<int64_t>(rng() % (1 << 20)) - 5}};
    auto worker = gpuqueue::LaunchGrid(launch, scalars, resident);
    unsigned grid[3] = {0, 0, 0};
    const cake_launcher::Status s =
        cake_launcher::LaunchGrid(entry, {scalars.begin(), scalars.end()}, resident, grid);
    ASSERT_EQ(worker.ok(), s.ok()) << launch.DebugString() << s.message();
    if (!worker.ok()) {
      ++refused;
      continue;
    }
    ++launched;
    for (int d = 0; d < 3; ++d) ASSERT_EQ((*worker)[d], grid[d]) << launch.DebugString();
  }
  EXPECT_GT(launched, 1000);
  EXPECT_GT(refused, 1000);
}

TEST(LaunchRules, TensorMapGeometriesAgree) {
  std::mt19937_64 rng(std::random_device{}());
  const std::vector<int> elements = {0, 1, 2, 3, 4, 8}, swizzles = {0, 16, 32, 64, 128, 256};
  int encoded = 0, refused = 0;
  for (int trial = 0; trial < 20000; ++trial) {
    report::LaunchSpec::Arg a;
    a.set_kind(report::LaunchSpec::Arg::TENSOR_MAP);
    a.set_name("A");
    a.set_rows(rng() % 8 == 0 ? "Q" : "M");  // Q: never bound
    a.set_cols("K");
    a.set_box_rows(static_cast<int32_t>(rng() % 260) - 2);
    a.set_box_cols(static_cast<int32_t>(rng() % 260) - 2);
    a.set_element_bytes(elements[rng() % elements.size()]);
    a.set_swizzle_bytes(swizzles[rng() % swizzles.size()]);
    cake_launcher::ArgSpec spec{cake_launcher::ArgKind::kTensorMap,
                                a.name(),
                                a.rows(),
                                a.cols(),
                                a.box_rows(),
                                a.box_cols(),
                                a.element_bytes(),
                                a.swizzle_bytes(),
                                0,
                                0};
    const std::map<std::string, int64_t> scalars = {{"M", static_cast<int64_t>(rng() % 70000) - 3},
                                                    {"K", static_cast<int64_t>(rng() % 70000) - 3}};
    auto worker = gpuqueue::TensorMapGeometryOf(a, scalars);
    cake_launcher::TensorMapGeometry g;
    const cake_launcher::Status s =
        cake_launcher::TensorMapGeometryOf(spec, {scalars.begin(), scalars.end()}, &g);
    ASSERT_EQ(worker.ok(), s.ok()) << a.DebugString() << s.message();
    if (!worker.ok()) {
      ++refused;
      continue;
    }
    ++encoded;
    EXPECT_EQ(worker->type, g.type);
    EXPECT_EQ(worker->swizzle, g.swizzle);
    EXPECT_EQ(worker->dims[0], g.dims[0]);
    EXPECT_EQ(worker->dims[1], g.dims[1]);
    EXPECT_EQ(worker->pitch[0], g.pitch[0]);
    EXPECT_EQ(worker->box[0], g.box[0]);
    EXPECT_EQ(worker->box[1], g.box[1]);
  }
  EXPECT_GT(encoded, 1000);
  EXPECT_GT(refused, 1000);
}

}  // namespace
}  // namespace cake
