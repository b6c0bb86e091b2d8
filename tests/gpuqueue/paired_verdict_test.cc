// The paired-timing decision logic on recorded sample fixtures (no GPU).
#include <gtest/gtest.h>

#include <random>

#include "gpuqueue/paired_verdict.h"

namespace cake {
namespace {

evidence::RowTiming Row(const std::string& name, double incumbent, double challenger, double noise,
                        int pairs, uint64_t seed, bool required = true) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> n(0, noise);
  evidence::RowTiming r;
  r.set_row(name);
  r.set_required(required);
  for (int i = 0; i < pairs; ++i) {
    r.add_incumbent_us(incumbent * (1 + n(rng)));
    r.add_challenger_us(challenger * (1 + n(rng)));
    r.add_challenger_first(i % 2);
  }
  return r;
}

contract::Contract Contract() {
  contract::Contract c;
  c.mutable_protocol()->set_practical_floor(0.02);
  for (const char* n : {"a", "b"}) {
    auto* r = c.add_rows();
    r->set_name(n);
    r->set_weight(1);
    r->set_required(true);
  }
  return c;
}

TEST(PairedVerdict, SignTestIntervalBracketsTheMedian) {
  std::vector<double> v;
  for (int i = 1; i <= 20; ++i) v.push_back(i);
  auto s = gpuqueue::SummarizeRatios(v);
  EXPECT_DOUBLE_EQ(s.median, 10.5);
  EXPECT_DOUBLE_EQ(s.low, 6);  // rank 5 (0-based) for n = 20: P(X <= 5) = 0.0207
  EXPECT_DOUBLE_EQ(s.high, 15);
  auto few = gpuqueue::SummarizeRatios({1, 2, 3});
  EXPECT_TRUE(std::isinf(few.high)) << "too few pairs cannot bound the median";
}

TEST(PairedVerdict, IdenticalKernelsAreATieNotAWin) {
  int decisive = 0;
  for (uint64_t seed = 0; seed < 200; ++seed) {
    auto r = Row("a", 500, 500, 0.004, 20, seed);
    gpuqueue::JudgeRow(&r, 0.02);
    decisive += r.verdict() == evidence::FASTER || r.verdict() == evidence::SLOWER;
  }
  EXPECT_EQ(decisive, 0);
}

TEST(PairedVerdict, ClearSpeedupIsFasterAndSlowdownIsSlower) {
  auto fast = Row("a", 500, 450, 0.004, 20, 1);
  gpuqueue::JudgeRow(&fast, 0.02);
  EXPECT_EQ(fast.verdict(), evidence::FASTER);
  EXPECT_NEAR(fast.median_ratio(), 0.9, 0.01);
  auto slow = Row("a", 500, 550, 0.004, 20, 2);
  gpuqueue::JudgeRow(&slow, 0.02);
  EXPECT_EQ(slow.verdict(), evidence::SLOWER);
}

TEST(PairedVerdict, NoisyRowIsAmbiguousAndNeverPromotes) {
  auto r = Row("a", 500, 485, 0.08, 20, 3);
  gpuqueue::JudgeRow(&r, 0.02);
  EXPECT_EQ(r.verdict(), evidence::AMBIGUOUS);
  evidence::Measurement m;
  *m.add_rows() = Row("a", 500, 400, 0.004, 20, 4);
  *m.add_rows() = r;
  m.mutable_rows(1)->set_row("b");
  gpuqueue::JudgeMeasurement(&m, Contract());
  EXPECT_EQ(m.verdict(), evidence::AMBIGUOUS);
}

TEST(PairedVerdict, RequiredRowRegressionBlocksWhateverTheMean) {
  evidence::Measurement m;
  *m.add_rows() = Row("a", 500, 250, 0.004, 20, 5);  // twice as fast
  *m.add_rows() = Row("b", 500, 540, 0.004, 20, 6);  // 8 % slower
  gpuqueue::JudgeMeasurement(&m, Contract());
  EXPECT_LT(m.weighted_geomean_ratio(), 0.8) << "the mean looks great";
  EXPECT_EQ(m.verdict(), evidence::SLOWER);
  EXPECT_EQ(m.worst_row(), "b");
}

TEST(PairedVerdict, AllRequiredFasterIsFasterAndMixedTieIsTie) {
  evidence::Measurement fast;
  *fast.add_rows() = Row("a", 500, 450, 0.004, 20, 7);
  *fast.add_rows() = Row("b", 500, 460, 0.004, 20, 8);
  gpuqueue::JudgeMeasurement(&fast, Contract());
  EXPECT_EQ(fast.verdict(), evidence::FASTER);
  evidence::Measurement tie;
  *tie.add_rows() = Row("a", 500, 450, 0.004, 20, 9);
  *tie.add_rows() = Row("b", 500, 500, 0.004, 20, 10);
  gpuqueue::JudgeMeasurement(&tie, Contract());
  EXPECT_EQ(tie.verdict(), evidence::TIE) << "ties keep the incumbent";
}

}  // namespace
}  // namespace cake
