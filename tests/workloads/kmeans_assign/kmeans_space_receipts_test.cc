// Every point of the KMeans search space compiles for sm_120f (the bundled contract's compile
// target) with a passing receipt and no spill, and every point the space leaves out for spilling
// still spills there: with another ptxas the test says which points to move. Compiles in
// parallel, one artifact store per thread. Needs nvcc.
#include <gtest/gtest.h>

#include <atomic>
#include <filesystem>
#include <mutex>
#include <set>
#include <thread>

#include "compiler/compiler.h"
#include "compiler/parse.h"
#include "compiler/targets.h"
#include "workloads/kmeans_assign/kmeans_assign.h"

namespace cake {
namespace {

namespace fs = std::filesystem;

struct Outcome {
  std::string label;
  bool passed = false;
  int64_t spill_bytes = 0;
  std::string error;
};

std::vector<Outcome> CompileAll(const std::vector<workloads::Proposal>& points) {
  std::vector<Outcome> out(points.size());
  std::atomic<size_t> next{0};
  const unsigned threads = std::max(2u, std::thread::hardware_concurrency());
  std::vector<std::thread> pool;
  for (unsigned t = 0; t < threads; ++t)
    pool.emplace_back([&, t] {
      compiler::CompileOptions opts;
      opts.store_root =
          (fs::path(::testing::TempDir()) / ("cake_kmeans_space_" + std::to_string(t))).string();
      const compiler::TargetInfo* target = *compiler::TargetByName("sm_120f");
      for (size_t i = next++; i < points.size(); i = next++) {
        Outcome& o = out[i];
        o.label = points[i].label;
        auto parsed = compiler::ParseModuleText(points[i].schedule_text, o.label);
        if (!parsed.ok()) {
          o.error = std::string(parsed.status().message());
          continue;
        }
        auto r = compiler::Compile(*parsed, *target, opts);
        if (!r.ok()) {
          o.error = std::string(r.status().message());
        } else if (!r->receipt.has_value()) {
          o.error = "no receipt (analysis did not verify)";
        } else {
          o.passed = r->receipt->outcome() == report::LoweringReceipt::PASS;
          o.spill_bytes = r->receipt->resources().spill_store_bytes();
        }
      }
    });
  for (std::thread& t : pool) t.join();
  return out;
}

TEST(KMeansSpaceReceipts, EverySearchPointCompilesForSm120fWithoutSpillsAndTheLeftOutStillSpill) {
  const workloads::Workload* w = workloads::FindWorkload("kmeans_assign");
  ASSERT_NE(w, nullptr);
  for (const Outcome& o : CompileAll(w->SearchSpace())) {
    EXPECT_TRUE(o.error.empty()) << o.label << ": " << o.error;
    EXPECT_TRUE(o.passed) << o.label << " fails its sm_120f receipt (spill " << o.spill_bytes
                          << " B): leave it out of the space";
    EXPECT_EQ(o.spill_bytes, 0) << o.label;
  }
  const auto left_out = workloads::kmeans_assign::PointsThatSpillOnSm120f();
  EXPECT_EQ(left_out.size(), 14u);
  for (const Outcome& o : CompileAll(left_out)) {
    EXPECT_TRUE(o.error.empty()) << o.label << ": " << o.error;
    EXPECT_FALSE(o.passed) << o.label << " no longer fails on sm_120f: put it back in the space";
    EXPECT_GT(o.spill_bytes, 0) << o.label;
  }
}

}  // namespace
}  // namespace cake
