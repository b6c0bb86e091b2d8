// The split-K workspace's size as the worker derives it from a lowering's LaunchSpec: exact for
// real shapes, refused (not wrapped) for hostile extents. No GPU needed.
#include <gtest/gtest.h>

#include "compiler/compiler.h"
#include "gpuqueue/worker/kernel.h"
#include "workloads/gemm_bf16/space.h"

namespace cake {
namespace {

report::LaunchSpec::Arg SplitKWorkspaceArg(int slices) {
  workloads::gemm_bf16::WarpGemmParams p;
  p.tile_m = 64, p.tile_n = 64;
  p.k_slices = slices;
  compiler::ParsedModule m;
  m.module = workloads::gemm_bf16::MakeWarpGemm(p);
  auto emitted = compiler::Emit(m, **compiler::TargetByName("sm_90"));
  EXPECT_TRUE(emitted.source.has_value());
  if (!emitted.source.has_value()) return {};
  for (const auto& a : emitted.source->launch.args())
    if (a.kind() == report::LaunchSpec::Arg::WORKSPACE) return a;
  ADD_FAILURE() << "the split-K launch has no workspace argument";
  return {};
}

TEST(WorkspaceBytes, PartialsOfEverySliceThenOneCounterPerTile) {
  const report::LaunchSpec::Arg ws = SplitKWorkspaceArg(3);
  gpuqueue::KernelArgs args;
  args.scalars = {{"M", 130}, {"N", 200}, {"K", 512}};
  // 3 FP32 partials of 130 x 200, then ceil(130/64) * ceil(200/64) = 3 * 4 counters.
  auto bytes = gpuqueue::WorkspaceBytes(ws, args);
  ASSERT_TRUE(bytes.ok()) << bytes.status();
  EXPECT_EQ(*bytes, size_t{4} * 3 * 130 * 200 + 4 * 12);

  args.scalars = {{"M", 0}, {"N", 0}, {"K", 8}};
  bytes = gpuqueue::WorkspaceBytes(ws, args);
  ASSERT_TRUE(bytes.ok());
  EXPECT_EQ(*bytes, 4u) << "an empty problem still binds a valid pointer";
}

TEST(WorkspaceBytes, HostileExtentsAreRefused) {
  const report::LaunchSpec::Arg ws = SplitKWorkspaceArg(64);
  for (auto [m, n] : {std::pair<int64_t, int64_t>{-1, 10},
                      {10, -5},
                      {int64_t{1} << 31, 1},
                      {1, int64_t{1} << 40}}) {
    gpuqueue::KernelArgs args;
    args.scalars = {{"M", m}, {"N", n}, {"K", 64}};
    auto bytes = gpuqueue::WorkspaceBytes(ws, args);
    EXPECT_FALSE(bytes.ok()) << m << " x " << n;
    if (!bytes.ok()) {
      EXPECT_EQ(bytes.status().code(), absl::StatusCode::kInvalidArgument);
    }
  }
  gpuqueue::KernelArgs missing;
  missing.scalars = {{"M", 64}};
  auto bytes = gpuqueue::WorkspaceBytes(ws, missing);
  ASSERT_FALSE(bytes.ok());
  EXPECT_NE(bytes.status().message().find("'N'"), std::string::npos) << bytes.status();
  // The largest legal extents fit in 64-bit arithmetic: 2^31-1 squared times 256 B per element
  // is past 2^62 and refused; a large legal square is exact.
  gpuqueue::KernelArgs big;
  big.scalars = {{"M", (int64_t{1} << 31) - 1}, {"N", (int64_t{1} << 31) - 1}, {"K", 64}};
  EXPECT_FALSE(gpuqueue::WorkspaceBytes(ws, big).ok());
  big.scalars = {{"M", 65536}, {"N", 65536}, {"K", 64}};
  auto large = gpuqueue::WorkspaceBytes(ws, big);
  ASSERT_TRUE(large.ok());
  EXPECT_EQ(*large, size_t{4} * 64 * 65536 * 65536 + 4 * 1024 * 1024);
}

}  // namespace
}  // namespace cake
