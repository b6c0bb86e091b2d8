// The timing half of the CI gate: an incumbent that lost its win over the baseline, or whose
// median on a primary row grew beyond the floor since its recorded run, is a regression; an
// ambiguous or invalid run is inconclusive, never a pass.
#include <gtest/gtest.h>

#include <random>

#include "server/regress_policy.h"

namespace cake::server {
namespace {

evidence::Measurement TimedRun(const std::string& candidate, const std::string& against,
                               evidence::TimingVerdict v, double candidate_us, double against_us) {
  evidence::Measurement m;
  m.set_candidate(candidate);
  m.set_incumbent(against);
  m.set_verdict(v);
  evidence::RowTiming* t = m.add_rows();
  t->set_row("square_4k");
  t->set_mode("eager");
  t->set_cache("cold");
  t->set_primary(true);
  t->set_challenger_median_us(candidate_us);
  t->set_incumbent_median_us(against_us);
  return m;
}

TEST(RegressTiming, StillFasterAndAsFastAsRecordedIsOk) {
  std::mt19937 rng(std::random_device{}());
  const double us = std::uniform_real_distribution<double>(200, 900)(rng);
  const auto recorded = TimedRun("c4", "c1", evidence::FASTER, us, us * 1.18);  // its promotion run
  const auto fresh = TimedRun("c4", "c1", evidence::FASTER, us * 1.01, us * 1.19);
  const RegressTiming t = DecideRegressTiming(fresh, &recorded, "c4", "c1", 0.02);
  EXPECT_EQ(t.result, RegressTiming::kOk) << t.summary;
  EXPECT_NE(t.summary.find("1 row(s) compared"), std::string::npos) << t.summary;
}

TEST(RegressTiming, SlowerThanItsOwnRecordBeyondTheFloorIsARegression) {
  const auto recorded = TimedRun("c4", "c1", evidence::FASTER, 500, 600);
  const auto fresh = TimedRun("c4", "c1", evidence::FASTER, 530, 640);  // both drifted: 6% > 2%
  const RegressTiming t = DecideRegressTiming(fresh, &recorded, "c4", "c1", 0.02);
  EXPECT_EQ(t.result, RegressTiming::kRegression);
  EXPECT_NE(t.summary.find("row square_4k: median 530.00 us now, 500.00 us recorded"),
            std::string::npos)
      << t.summary;
}

TEST(RegressTiming, NoLongerFasterThanTheBaselineIsARegression) {
  const auto recorded = TimedRun("c4", "c1", evidence::FASTER, 500, 600);
  for (auto v : {evidence::TIE, evidence::SLOWER}) {
    const auto fresh = TimedRun("c4", "c1", v, 500, 505);
    const RegressTiming t = DecideRegressTiming(fresh, &recorded, "c4", "c1", 0.02);
    EXPECT_EQ(t.result, RegressTiming::kRegression) << evidence::TimingVerdict_Name(v);
    EXPECT_NE(t.summary.find("no longer faster than the baseline"), std::string::npos);
  }
  auto faster_but = TimedRun("c4", "c1", evidence::FASTER, 500, 600);
  faster_but.set_required_regression("required row tails is slower");
  EXPECT_EQ(DecideRegressTiming(faster_but, &recorded, "c4", "c1", 0.02).result,
            RegressTiming::kRegression);
}

TEST(RegressTiming, UnknownIsNotAPass) {
  const auto recorded = TimedRun("c4", "c1", evidence::FASTER, 500, 600);
  EXPECT_EQ(DecideRegressTiming(TimedRun("c4", "c1", evidence::AMBIGUOUS, 500, 600), &recorded,
                                "c4", "c1", 0.02)
                .result,
            RegressTiming::kInconclusive);
  auto invalid = TimedRun("c4", "c1", evidence::INVALID, 500, 600);
  invalid.set_invalid(true);
  EXPECT_EQ(DecideRegressTiming(invalid, &recorded, "c4", "c1", 0.02).result,
            RegressTiming::kInconclusive);
  // The baseline as incumbent, with no recorded run of it: nothing was compared.
  EXPECT_EQ(
      DecideRegressTiming(TimedRun("c1", "c1", evidence::TIE, 500, 500), nullptr, "c1", "c1", 0.02)
          .result,
      RegressTiming::kInconclusive);
  // Its record as another run's incumbent arm counts.
  const auto as_incumbent = TimedRun("c2", "c1", evidence::SLOWER, 700, 500);
  EXPECT_EQ(DecideRegressTiming(TimedRun("c1", "c1", evidence::TIE, 503, 502), &as_incumbent, "c1",
                                "c1", 0.02)
                .result,
            RegressTiming::kOk);
}

}  // namespace
}  // namespace cake::server
