// The NVFP4 GEMM family through the real compiler (nvcc, ptxas, cuobjdump): for SM12x targets each
// point's receipt passes and its SASS holds OMMA.SF.16864...UE4M3 (never the k32 QMMA rate of
// kind::f8f6f4), with no spills and the scale tensors among the launch arguments; sm_90 and plain
// sm_120 refuse the form by admission, naming the target. No SM120 execution witness: compile and
// SASS only.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdio>
#include <filesystem>
#include <map>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "compiler/compiler.h"
#include "compiler/parse.h"
#include "compiler/targets.h"
#include "tests/compiler/receipt_util.h"
#include "workloads/gemm_nvfp4/schedules.h"
#include "workloads/workload.h"

namespace cake::workloads::gemm_nvfp4 {
namespace {

namespace fs = std::filesystem;

using testing::Census;
using testing::CountPrefix;
using testing::RefusedNaming;

class Nvfp4GemmReceipts : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    store_ = fs::path(::testing::TempDir()) / "cake_nvfp4_receipts";
    fs::remove_all(store_);
  }
  static void TearDownTestSuite() { fs::remove_all(store_); }
  absl::StatusOr<compiler::CompileResult> Compile(const Nvfp4GemmPoint& p, const char* target) {
    return testing::CompileSchedule(Nvfp4GemmSchedule(p), p.Describe(), target, store_.string());
  }
  static fs::path store_;
};
fs::path Nvfp4GemmReceipts::store_;

TEST_F(Nvfp4GemmReceipts, Sm12xSassHoldsTheScaledFp4FormAndTheLaunchTakesTheScales) {
  for (const Nvfp4GemmPoint& p : Nvfp4GemmPoints())
    for (const char* target : {"sm_120f", "sm_121a"}) {
      SCOPED_TRACE(absl::StrCat(p.Describe(), " on ", target));
      auto r = Compile(p, target);
      ASSERT_TRUE(r.ok()) << r.status();
      ASSERT_TRUE(r->receipt.has_value()) << r->analysis.DebugString();
      const report::LoweringReceipt& receipt = *r->receipt;
      EXPECT_EQ(receipt.outcome(), report::LoweringReceipt::PASS);
      EXPECT_EQ(receipt.lowering_version(), "warp_gemm_nvfp4/1");
      EXPECT_EQ(receipt.resources().spill_store_bytes(), 0);
      const auto census = Census(receipt);
      // One MMA per (m16, n8) fragment pair of a warp tile per 64 elements of K.
      const int64_t per_tile =
          int64_t{p.tile_m / p.warps_m / 16} * (p.tile_n / p.warps_n / 8) * (p.tile_k / 64);
      const int64_t fp4 = CountPrefix(census, "OMMA.SF.16864.F32.E2M1.E2M1.UE4M3");
      EXPECT_GE(fp4, per_tile);
      EXPECT_EQ(CountPrefix(census, "QMMA"), 0);  // never the k32 f8f6f4 rate
      EXPECT_EQ(CountPrefix(census, "HMMA"), 0);
      int mma_forms = 0;
      for (const report::InstructionForm& f : receipt.selected_forms())
        if (absl::StartsWith(f.expected_sass(), "OMMA")) {
          ++mma_forms;
          EXPECT_EQ(f.observed_count(), fp4);
        }
      EXPECT_EQ(mma_forms, 1);
      // The scale tensors are launch arguments, after B, as the kernel takes them.
      std::vector<std::string> args;
      for (const auto& a : receipt.launch().args()) args.push_back(a.name());
      EXPECT_EQ(args, (std::vector<std::string>{"A", "B", "SA", "SB", "C", "M", "N", "K"}));
      EXPECT_NE(receipt.witness().find("no SM120 execution witness"), std::string::npos)
          << receipt.witness();
      std::printf("| %s | %s | %d | %lld | %lld | %lld OMMA.SF.16864...UE4M3 |\n", target,
                  p.Describe().c_str(), receipt.resources().registers(),
                  static_cast<long long>(receipt.resources().spill_store_bytes()),
                  static_cast<long long>(receipt.resources().shared_dynamic_bytes()),
                  static_cast<long long>(fp4));
    }
  // Neither Hopper nor plain sm_120 has the block-scaled FP4 form: refused, naming the target.
  for (const char* target : {"sm_90", "sm_120"}) {
    auto refused = Compile(Nvfp4GemmPoints().front(), target);
    ASSERT_TRUE(refused.ok()) << refused.status();
    EXPECT_FALSE(refused->receipt.has_value()) << target;
    EXPECT_TRUE(RefusedNaming(refused->analysis, target)) << refused->analysis.DebugString();
  }
}

// Every point of the workload's search space compiles for sm_120f (the bundled contract's
// compile target) with a passing receipt and no spill, and every point the grid leaves out for
// spilling still spills there: with another ptxas the test says which points to move. Two
// threads, one artifact store each.
TEST_F(Nvfp4GemmReceipts, TheSearchSpaceCompilesWithoutSpillsAndTheLeftOutPointsStillSpill) {
  std::vector<std::pair<std::string, std::string>> points;  // label, schedule
  for (const Proposal& p : FindWorkload("gemm_nvfp4")->SearchSpace())
    points.emplace_back(p.label, p.schedule_text);
  const size_t in_space = points.size();
  for (const std::string& label : Nvfp4PointsThatSpill()) {
    for (const Nvfp4GemmPoint& g : Nvfp4GemmGrid()) ASSERT_NE(g.Describe(), label);
    Nvfp4GemmPoint p;  // "TMxTNxTK w2x2 sS nvfp4"
    ASSERT_EQ(
        std::sscanf(label.c_str(), "%dx%dx%d w2x2 s%d", &p.tile_m, &p.tile_n, &p.tile_k, &p.stages),
        4)
        << label;
    ASSERT_EQ(p.Describe(), label);
    points.emplace_back(label, Nvfp4GemmSchedule(p));
  }
  std::vector<int64_t> spills(points.size(), -1);
  std::vector<bool> passed(points.size(), false);
  std::atomic<size_t> next{0};
  std::vector<std::thread> pool;
  for (int t = 0; t < 2; ++t)
    pool.emplace_back([&, t] {
      const std::string store = (store_ / ("space_" + std::to_string(t))).string();
      for (size_t i = next++; i < points.size(); i = next++) {
        auto r = testing::CompileSchedule(points[i].second, points[i].first, "sm_120f", store);
        if (!r.ok() || !r->receipt.has_value()) continue;
        passed[i] = r->receipt->outcome() == report::LoweringReceipt::PASS;
        spills[i] = r->receipt->resources().spill_store_bytes();
      }
    });
  for (std::thread& t : pool) t.join();
  for (size_t i = 0; i < points.size(); ++i) {
    SCOPED_TRACE(points[i].first);
    if (i < in_space) {
      EXPECT_TRUE(passed[i]);
      EXPECT_EQ(spills[i], 0);
    } else {
      EXPECT_GT(spills[i], 0) << "no longer spills: move it back into the space";
    }
  }
}

// The lane that holds each row's and column's scale word, as the lowering emits it, against the
// scale-factor layouts of the m16n8k64 block-scaled MMA written independently as CUTLASS states
// them (cute's SM120_16x8x64_TN_VS traits, read, not copied): SFA maps thread t = t0 + 2 t1 + 4 t2
// (t0, t1 < 2, t2 < 8) to row 8 t0 + t2, t1 a broadcast; SFB maps t = t0 + 4 t1 to column t1, t0 a
// broadcast. Every lane's word must be the one those layouts give it.
TEST(Nvfp4ScaleLanes, TheEmittedLaneMapIsTheMmaScaleLayout) {
  for (int lane = 0; lane < 32; ++lane) {
    const int t0 = lane & 1, t2 = lane >> 2;
    const int sfa_row = 8 * t0 + t2;                              // SFA: (2,2,8):(8,0,1) over M16
    const int sfb_col = lane >> 2;                                // SFB: (4,8):(0,1) over N8
    EXPECT_EQ((lane >> 2) + ((lane & 1) << 3), sfa_row) << lane;  // the emitted row term
    EXPECT_EQ(lane >> 2, sfb_col) << lane;                        // the emitted column term
  }
  // The emitted source holds exactly those terms.
  auto parsed = compiler::ParseModuleText(Nvfp4GemmSchedule(Nvfp4GemmPoints().front()), "nvfp4");
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  const compiler::EmitResult emitted =
      compiler::Emit(*parsed, **compiler::TargetByName("sm_120f"), {});
  ASSERT_TRUE(emitted.source.has_value()) << emitted.analysis.DebugString();
  const std::string& text = emitted.source->text;
  EXPECT_NE(text.find("i * 16 + (lane >> 2) + ((lane & 1) << 3);"), std::string::npos) << text;
  EXPECT_NE(text.find("j * 8 + (lane >> 2);"), std::string::npos) << text;
  // One 32-bit word a row per MMA k step (four UE4M3 scales of 16), selectors {0, 0}.
  EXPECT_NE(text.find("row * K64 + kstep"), std::string::npos);
  EXPECT_NE(text.find("%10, {0, 0}, %11, {0, 0};"), std::string::npos);
}

// The schedule text is data: every point parses, every grid point fits the shared budget.
TEST(Nvfp4GemmSchedules, PointsAndGridParse) {
  std::set<std::string> labels;
  for (const Nvfp4GemmPoint& p : Nvfp4GemmGrid()) {
    EXPECT_TRUE(labels.insert(p.Describe()).second) << p.Describe();
    EXPECT_TRUE(compiler::ParseModuleText(Nvfp4GemmSchedule(p), p.Describe()).ok());
  }
  EXPECT_GE(labels.size(), 12u);
  for (const Nvfp4GemmPoint& p : Nvfp4GemmPoints())
    EXPECT_TRUE(compiler::ParseModuleText(Nvfp4GemmSchedule(p), p.Describe()).ok());
}

}  // namespace
}  // namespace cake::workloads::gemm_nvfp4
