// The exported launcher's planning, dispatch and binding checks, which need no device, on an
// operation written here: a guarded member with a split-K workspace and a fallback without one.
#include "cake_launcher.h"

#include <cstdlib>
#include <random>

#include <gtest/gtest.h>

#include "compiler/portfolio.h"

namespace cl = cake_launcher;

namespace {

cl::ArgSpec TensorArg(const std::string& name) {
  cl::ArgSpec a;
  a.name = name;
  return a;
}

cl::OperationSpec Gemm() {
  cl::OperationSpec op;
  op.operation = "gemm_bf16_tn";
  op.contract_id = "ct-test";
  op.scalars = {"M", "N", "K"};
  op.tensors = {{"A", "bf16", 2, {{"M", 0}, {"K", 0}}, 16, false},
                {"B", "bf16", 2, {{"N", 0}, {"K", 0}}, 16, false},
                {"C", "bf16", 2, {{"M", 0}, {"N", 0}}, 16, true}};
  cl::EntrySpec split;
  split.name = "split_k";
  split.kernel_symbol = "k_split";
  split.guard = {{"M", 1, 256, 0}, {"N", 1, 0, 0}, {"K", 1024, 0, 64}};
  split.args = {TensorArg("A"),
                TensorArg("B"),
                TensorArg("C"),
                {cl::ArgKind::kWorkspace, "partials", "M", "N", 64, 64, 0, 0, 16, 4}};
  split.threads_per_cta = 128;
  split.cubin_files["sm_90"] = "cubins/sm_90/split_k.cubin";
  cl::EntrySpec fallback;
  fallback.name = "fallback";
  fallback.kernel_symbol = "k_fallback";
  fallback.guard = {{"M", 1, 0, 0}, {"N", 1, 0, 0}, {"K", 8, 0, 8}};
  fallback.args = {TensorArg("A"), TensorArg("B"), TensorArg("C")};
  fallback.threads_per_cta = 128;
  fallback.cubin_files["sm_90"] = "cubins/sm_90/fallback.cubin";
  op.entries = {split, fallback};
  return op;
}

std::map<std::string, cl::TensorView> Views(const cl::Shape& s) {
  const CUdeviceptr base = CUdeviceptr{1} << 32;
  return {{"A", {base, "bf16", {s.at("M"), s.at("K")}, {}}},
          {"B", {base + (CUdeviceptr{1} << 30), "bf16", {s.at("N"), s.at("K")}, {}}},
          {"C", {base + (CUdeviceptr{2} << 30), "bf16", {s.at("M"), s.at("N")}, {}}}};
}

TEST(Launcher, DispatchTakesTheFirstAdmittingEntryAndNamesTheFallbacksFailedFact) {
  const cl::OperationSpec op = Gemm();
  int entry = -1;
  ASSERT_TRUE(cl::Dispatch(op, {{"M", 128}, {"N", 4096}, {"K", 4096}}, &entry).ok());
  EXPECT_EQ(entry, 0);
  ASSERT_TRUE(cl::Dispatch(op, {{"M", 512}, {"N", 4096}, {"K", 4096}}, &entry).ok());
  EXPECT_EQ(entry, 1) << "M above the member's guard goes to the fallback";
  ASSERT_TRUE(cl::Dispatch(op, {{"M", 128}, {"N", 64}, {"K", 1032}}, &entry).ok());
  EXPECT_EQ(entry, 1) << "K not a multiple of 64";
  const cl::Status none = cl::Dispatch(op, {{"M", 128}, {"N", 64}, {"K", 1030}}, &entry);
  ASSERT_FALSE(none.ok());
  EXPECT_NE(
      none.message().find("the fallback 'fallback' needs K >= 8 and a multiple of 8 (it is 1030)"),
      std::string::npos)
      << none.message();
  EXPECT_NE(
      cl::Dispatch(op, {{"M", 1}, {"N", 1}}, &entry).message().find("no value for scalar 'K'"),
      std::string::npos);
  EXPECT_NE(cl::Dispatch(op, {{"M", 1}, {"N", 1}, {"K", 8}, {"Q", 1}}, &entry)
                .message()
                .find("'Q' is not a scalar"),
            std::string::npos);
}

TEST(Launcher, PlanSizesTheWorkspaceForEveryEntryAtCapacity) {
  const cl::OperationSpec op = Gemm();
  cl::Plan plan;
  // The capacity dispatches to the fallback, yet a smaller live shape may take the split-K
  // entry: the plan's workspace covers it.
  ASSERT_TRUE(cl::MakePlan(op, {{"M", 200}, {"N", 100}, {"K", 2048}}, &plan).ok());
  EXPECT_EQ(plan.entry, 0);
  // 16 * 200 * 100 + 4 * ceil(200/64) * ceil(100/64) = 320000 + 32, a multiple of 4.
  EXPECT_EQ(plan.workspace_bytes, 320032u);
  ASSERT_TRUE(cl::MakePlan(op, {{"M", 300}, {"N", 100}, {"K", 2048}}, &plan).ok());
  EXPECT_EQ(plan.entry, 1);
  EXPECT_EQ(plan.workspace_bytes, 16u * 300 * 100 + 4u * 5 * 2);
}

TEST(Launcher, BindingChecksNameTheArgumentAndWhatItNeeded) {
  const cl::OperationSpec op = Gemm();
  const cl::Shape cap = {{"M", 256}, {"N", 128}, {"K", 2048}};
  cl::Plan plan;
  ASSERT_TRUE(cl::MakePlan(op, cap, &plan).ok());
  const CUdeviceptr ws = CUdeviceptr{1} << 40;
  ASSERT_TRUE(cl::CheckBinding(op, plan, cap, Views(cap), ws, plan.workspace_bytes).ok());
  // A smaller live shape binds with smaller tensors; a larger one is refused.
  const cl::Shape live = {{"M", 100}, {"N", 64}, {"K", 1024}};
  EXPECT_TRUE(cl::CheckBinding(op, plan, live, Views(live), ws, plan.workspace_bytes).ok());
  const cl::Shape over = {{"M", 256}, {"N", 256}, {"K", 2048}};
  EXPECT_NE(cl::CheckBinding(op, plan, over, Views(over), ws, plan.workspace_bytes)
                .message()
                .find("N = 256 exceeds the plan's capacity 128"),
            std::string::npos);
  const cl::Status small = cl::CheckBinding(op, plan, cap, Views(cap), ws, 1000);
  EXPECT_NE(small.message().find("workspace of 1000 bytes is too small: entry 'split_k' needs " +
                                 std::to_string(16 * 256 * 128 + 4 * 4 * 2) + " bytes"),
            std::string::npos)
      << small.message();
  EXPECT_NE(cl::CheckBinding(op, plan, cap, Views(cap), 0, 0).message().find("too small"),
            std::string::npos);
  EXPECT_NE(cl::CheckBinding(op, plan, cap, Views(cap), ws + 4, plan.workspace_bytes)
                .message()
                .find("workspace is not aligned to 256"),
            std::string::npos);
  auto views = Views(cap);
  views["B"].dtype = "f16";
  EXPECT_NE(cl::CheckBinding(op, plan, cap, views, ws, plan.workspace_bytes)
                .message()
                .find("tensor 'B' is f16; the kernel takes bf16"),
            std::string::npos);
  views = Views(cap);
  views["A"].strides = {1, 256};  // column-major
  EXPECT_NE(cl::CheckBinding(op, plan, cap, views, ws, plan.workspace_bytes)
                .message()
                .find("its strides must be [2048, 1]"),
            std::string::npos);
  views = Views(cap);
  views["A"].strides = {2048, 1};  // explicit and contiguous: fine
  EXPECT_TRUE(cl::CheckBinding(op, plan, cap, views, ws, plan.workspace_bytes).ok());
  views = Views(cap);
  views["C"].data += 8;
  EXPECT_NE(cl::CheckBinding(op, plan, cap, views, ws, plan.workspace_bytes)
                .message()
                .find("tensor 'C' at 0x"),
            std::string::npos);
  views = Views(cap);
  views["C"].shape = {128, 256};
  EXPECT_NE(cl::CheckBinding(op, plan, cap, views, ws, plan.workspace_bytes)
                .message()
                .find("tensor 'C' has shape [128, 256]; at this shape it must be [M=256, N=128]"),
            std::string::npos);
  views = Views(cap);
  views["D"] = views["C"];
  EXPECT_NE(cl::CheckBinding(op, plan, cap, views, ws, plan.workspace_bytes)
                .message()
                .find("'D' is not a tensor"),
            std::string::npos);
  views = Views(cap);
  views["A"].data = 0;
  EXPECT_NE(cl::CheckBinding(op, plan, cap, views, ws, plan.workspace_bytes)
                .message()
                .find("null address"),
            std::string::npos);
  EXPECT_NE(cl::CheckBinding(op, cl::Plan{}, cap, Views(cap), ws, plan.workspace_bytes)
                .message()
                .find("plan is empty"),
            std::string::npos);
}

TEST(Launcher, NothingLaunchesBeforePrepareAndPrepareSaysWhyItCannot) {
  const cl::OperationSpec op = Gemm();
  const cl::Shape cap = {{"M", 256}, {"N", 128}, {"K", 2048}};
  cl::Plan plan;
  ASSERT_TRUE(cl::MakePlan(op, cap, &plan).ok());
  cl::Launcher launcher(op, plan, "/nonexistent");
  EXPECT_EQ(launcher.Run().message(), "Run before Prepare");
  EXPECT_EQ(launcher.Bind(cap, Views(cap), 0, 0, nullptr).message(), "Bind before Prepare");
  // A driver that is not there: a clear refusal, and still nothing to run.
  setenv("CAKE_LIBCUDA", "/nonexistent/libcuda.so.1", 1);
  const cl::Status prepared = launcher.Prepare(0);
  unsetenv("CAKE_LIBCUDA");
  ASSERT_FALSE(prepared.ok());
  EXPECT_NE(prepared.message().find("no CUDA driver"), std::string::npos) << prepared.message();
  EXPECT_EQ(launcher.Run().message(), "Run before Prepare");
  cl::Launcher unplanned(op, cl::Plan{}, "/nonexistent");
  EXPECT_NE(unplanned.Prepare(0).message().find("plan is empty"), std::string::npos);
}

// The exported launcher dispatches by the daemon's rule (compiler::Dispatch, under which the
// entries were verified): random guards over random shapes pick the same entry or none.
TEST(Launcher, DispatchAgreesWithTheDaemonsRuleOnRandomGuardsAndShapes) {
  std::mt19937_64 rng(std::random_device{}());
  const std::vector<std::string> names = {"M", "N", "K"};
  int agreed_none = 0, agreed_entry = 0;
  for (int trial = 0; trial < 2000; ++trial) {
    cake::portfolio::DispatcherManifest manifest;
    cl::OperationSpec op;
    op.operation = "random";
    op.scalars = names;
    const int entries = 1 + static_cast<int>(rng() % 4);
    for (int e = 0; e < entries; ++e) {
      cake::portfolio::DispatcherManifest::Entry* me = manifest.add_entries();
      cl::EntrySpec ce;
      ce.name = me->name();
      for (const std::string& n : names) {
        if (rng() % 3 == 0) continue;  // not every guard names every scalar
        cake::portfolio::ScalarGuard* g = me->mutable_guard()->add_scalars();
        g->set_scalar(n);
        g->set_min(static_cast<int64_t>(rng() % 64));
        g->set_max(rng() % 2 ? 0 : g->min() + static_cast<int64_t>(rng() % 512));
        g->set_multiple_of(static_cast<int64_t>(rng() % 5) * 8);
        ce.guard.push_back({n, g->min(), g->max(), g->multiple_of()});
      }
      op.entries.push_back(ce);
    }
    cake::compiler::ScalarValues shape;
    for (const std::string& n : names) shape[n] = static_cast<int64_t>(rng() % 600);
    auto daemon = cake::compiler::Dispatch(manifest, shape);
    int entry = -1;
    const cl::Status launcher = cl::Dispatch(op, shape, &entry);
    ASSERT_EQ(daemon.ok(), launcher.ok()) << trial << ": " << launcher.message();
    if (daemon.ok()) {
      ASSERT_EQ(*daemon, entry) << trial;
      ++agreed_entry;
    } else {
      ++agreed_none;
    }
  }
  // Both outcomes were drawn often enough for the agreement to mean something.
  EXPECT_GT(agreed_entry, 200);
  EXPECT_GT(agreed_none, 200);
}

}  // namespace
