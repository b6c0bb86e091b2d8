// The FP8 GEMM family through the real compiler (nvcc, ptxas, cuobjdump): for SM12x targets each
// point's receipt passes and its SASS holds the form the schedule chose (QMMA.SF...E8 for the
// unit-scale block-scaled form, QMMA.16832 for the legacy one, never the other) with no spills;
// on sm_90 the legacy form compiles to its emulation (HMMA, no QMMA) and the block-scaled form is
// refused by admission, naming the target. No SM120 execution witness: compile and SASS only.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <map>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "compiler/compiler.h"
#include "compiler/parse.h"
#include "compiler/targets.h"
#include "tests/compiler/receipt_util.h"
#include "workloads/gemm_blockscaled/schedules.h"

namespace cake::workloads::gemm_blockscaled {
namespace {

namespace fs = std::filesystem;

using testing::Census;
using testing::CountPrefix;
using testing::RefusedNaming;

class Fp8GemmReceipts : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    store_ = fs::path(::testing::TempDir()) / "cake_fp8_receipts";
    fs::remove_all(store_);
  }
  absl::StatusOr<compiler::CompileResult> Compile(const Fp8GemmPoint& p, const char* target) {
    return testing::CompileSchedule(Fp8GemmSchedule(p), p.Describe(), target, store_.string());
  }
  static fs::path store_;
};
fs::path Fp8GemmReceipts::store_;

TEST_F(Fp8GemmReceipts, Sm12xSassHoldsTheChosenForm) {
  for (const Fp8GemmPoint& p : Fp8GemmPoints())
    for (const char* target : {"sm_120f", "sm_121a"}) {
      SCOPED_TRACE(absl::StrCat(p.Describe(), " on ", target));
      auto r = Compile(p, target);
      ASSERT_TRUE(r.ok()) << r.status();
      ASSERT_TRUE(r->receipt.has_value()) << r->analysis.DebugString();
      const report::LoweringReceipt& receipt = *r->receipt;
      EXPECT_EQ(receipt.outcome(), report::LoweringReceipt::PASS);
      EXPECT_EQ(receipt.lowering_version(), "warp_gemm_fp8/1");
      EXPECT_EQ(receipt.resources().spill_store_bytes(), 0);
      const std::string type = p.operand == NarrowFormat::kE5M2 ? "E5M2" : "E4M3";
      const auto census = Census(receipt);
      const int64_t scaled =
          CountPrefix(census, absl::StrCat("QMMA.SF.16832.F32.", type, ".", type, ".E8"));
      const int64_t legacy = CountPrefix(census, absl::StrCat("QMMA.16832.F32.", type, ".", type));
      // A warp's MMAs per k-tile: one per (m16, n8) fragment pair of its warp tile per 32
      // elements of K (the SASS holds at least one unrolled k-tile).
      const int64_t per_tile =
          int64_t{p.tile_m / p.warps_m / 16} * (p.tile_n / p.warps_n / 8) * (p.tile_k / 32);
      if (p.form == Fp8Form::kUnitScale) {
        EXPECT_GE(scaled, per_tile);
        EXPECT_EQ(legacy, 0);
      } else {
        EXPECT_GE(legacy, per_tile);
        EXPECT_EQ(scaled, 0);
      }
      EXPECT_EQ(CountPrefix(census, "HMMA"), 0);
      // The receipt counts the selected MMA form alone: the legacy form's count never includes
      // the block-scaled QMMA.SF, whose modifiers contain it as a subsequence.
      int mma_forms = 0;
      for (const report::InstructionForm& f : receipt.selected_forms()) {
        if (!absl::StartsWith(f.expected_sass(), "QMMA")) continue;
        ++mma_forms;
        EXPECT_EQ(f.observed_count(), p.form == Fp8Form::kUnitScale ? scaled : legacy)
            << f.expected_sass();
      }
      EXPECT_GT(mma_forms, 0);
      EXPECT_NE(receipt.witness().find("no SM120 execution witness"), std::string::npos)
          << receipt.witness();
      // The forms side by side (ctest -V): what evidence/gemm_blockscaled/ records.
      std::printf("| %s | %s | %d | %lld | %lld | %lld QMMA.SF...E8, %lld QMMA.16832 |\n", target,
                  p.Describe().c_str(), receipt.resources().registers(),
                  static_cast<long long>(receipt.resources().spill_store_bytes()),
                  static_cast<long long>(receipt.resources().shared_dynamic_bytes()),
                  static_cast<long long>(scaled), static_cast<long long>(legacy));
    }
}

TEST_F(Fp8GemmReceipts, HopperEmulatesTheLegacyFormAndRefusesTheBlockScaledOne) {
  // The emulation's unpacking costs registers: the 128x128 tile spills on sm_90 (255 registers,
  // 72 B, receipt FAIL, measured with ptxas 13.0); the 128x64 tile is the Hopper witness.
  Fp8GemmPoint legacy;
  legacy.form = Fp8Form::kLegacy;
  legacy.tile_n = 64;
  legacy.tile_k = 128;
  legacy.stages = 2;
  auto r = Compile(legacy, "sm_90");
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_TRUE(r->receipt.has_value()) << r->analysis.DebugString();
  EXPECT_EQ(r->receipt->outcome(), report::LoweringReceipt::PASS);
  const auto census = Census(*r->receipt);
  EXPECT_GT(CountPrefix(census, "HMMA.16816.F32"), 0);  // FP8 unpacked to F16, then HMMA
  EXPECT_EQ(CountPrefix(census, "QMMA"), 0);

  Fp8GemmPoint scaled;
  scaled.form = Fp8Form::kUnitScale;
  auto refused = Compile(scaled, "sm_90");
  ASSERT_TRUE(refused.ok()) << refused.status();
  EXPECT_FALSE(refused->receipt.has_value());
  EXPECT_EQ(refused->analysis.verdict(), report::REJECTED);
  EXPECT_TRUE(RefusedNaming(refused->analysis, "sm_90")) << refused->analysis.DebugString();
}

// Plain sm_120 (no a/f suffix) has the legacy QMMA but not the block-scaled form: the schedule
// that chose it is refused by admission with the target named, never retargeted.
TEST_F(Fp8GemmReceipts, PlainSm120RefusesTheBlockScaledFormAndKeepsTheLegacyOne) {
  Fp8GemmPoint scaled;
  auto refused = Compile(scaled, "sm_120");
  ASSERT_TRUE(refused.ok()) << refused.status();
  EXPECT_FALSE(refused->receipt.has_value());
  EXPECT_EQ(refused->analysis.verdict(), report::REJECTED);
  EXPECT_TRUE(RefusedNaming(refused->analysis, "sm_120")) << refused->analysis.DebugString();

  Fp8GemmPoint legacy;
  legacy.form = Fp8Form::kLegacy;
  auto r = Compile(legacy, "sm_120");
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_TRUE(r->receipt.has_value()) << r->analysis.DebugString();
  EXPECT_EQ(r->receipt->outcome(), report::LoweringReceipt::PASS);
  EXPECT_GT(CountPrefix(Census(*r->receipt), "QMMA.16832.F32.E4M3.E4M3"), 0);
}

// The schedule text is data: every point parses and names its form in the description only.
TEST(Fp8GemmSchedules, BothFormsOfEachTileForEachOperand) {
  const std::vector<Fp8GemmPoint> points = Fp8GemmPoints();
  ASSERT_EQ(points.size(), 8u);
  std::set<std::string> labels;
  for (const Fp8GemmPoint& p : points) {
    EXPECT_TRUE(labels.insert(p.Describe()).second) << p.Describe();
    const std::string text = Fp8GemmSchedule(p);
    EXPECT_TRUE(compiler::ParseModuleText(text, p.Describe()).ok()) << text;
    EXPECT_EQ(text.find("block_scale") != std::string::npos, p.form == Fp8Form::kUnitScale);
  }
}

}  // namespace
}  // namespace cake::workloads::gemm_blockscaled
