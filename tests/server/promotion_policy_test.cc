// The promotion policy without a daemon: admission after evidence, and the decision after each
// judged paired measurement (ties and required-row regressions keep the incumbent; promotion
// needs every confirmation run against the same incumbent; what was timed must be correct).
#include <gtest/gtest.h>

#include "server/promotion_policy.h"

namespace cake::server {
namespace {

evidence::Eligibility Eligible(bool eligible, bool failed = false) {
  evidence::Eligibility e;
  e.set_eligible(eligible);
  if (failed) e.add_failed("numerical_contract (wrong)");
  return e;
}

TEST(Admission, EachOutcome) {
  EXPECT_EQ(Admit(Eligible(false, true), "c2", "c1", false), Admission::kReject);
  EXPECT_EQ(Admit(Eligible(false), "c2", "c1", false), Admission::kWaitForEvidence);
  EXPECT_EQ(Admit(Eligible(true), "c1", "c1", true), Admission::kAlreadyIncumbent);
  EXPECT_EQ(Admit(Eligible(true), "c2", "c1", false), Admission::kMeasure);
  EXPECT_EQ(Admit(Eligible(true), "c2", "", false), Admission::kWaitForBaseline);
  EXPECT_EQ(Admit(Eligible(true), "c1", "", true), Admission::kBecomeFirstIncumbent);
  // A failed record rejects even the baseline.
  EXPECT_EQ(Admit(Eligible(false, true), "c1", "", true), Admission::kReject);
}

evidence::Measurement PairedRun(int run, evidence::TimingVerdict v,
                                const std::string& incumbent = "c1") {
  evidence::Measurement m;
  m.set_candidate("c2");
  m.set_incumbent(incumbent);
  m.set_run(run);
  m.set_verdict(v);
  m.set_weighted_geomean_ratio(v == evidence::FASTER ? 0.8 : 1.0);
  m.set_worst_row("big");
  return m;
}

TEST(MeasurementDecision, TieAndSlowerKeepTheIncumbent) {
  for (auto v : {evidence::TIE, evidence::SLOWER}) {
    const auto d = DecideOnMeasurement(PairedRun(0, v), false, "c2", "c1", 1);
    EXPECT_EQ(d.action, MeasurementDecision::kKeepIncumbent) << evidence::TimingVerdict_Name(v);
  }
}

TEST(MeasurementDecision, RequiredRowRegressionBlocksEvenWhenFaster) {
  auto m = PairedRun(1, evidence::FASTER);
  m.set_required_regression("required row 'skinny' is 1.3x slower");
  const auto d = DecideOnMeasurement(m, false, "c2", "c1", 1);
  EXPECT_EQ(d.action, MeasurementDecision::kKeepIncumbent);
  EXPECT_NE(d.summary.find("skinny"), std::string::npos);
}

TEST(MeasurementDecision, ConfirmationRunsThenPromotion) {
  // confirmation_runs 0 means 1: run 0 confirms, run 1 promotes.
  auto d = DecideOnMeasurement(PairedRun(0, evidence::FASTER), false, "c2", "c1", 0);
  EXPECT_EQ(d.action, MeasurementDecision::kConfirm);
  EXPECT_EQ(d.next_run, 1);
  EXPECT_EQ(DecideOnMeasurement(PairedRun(1, evidence::FASTER), false, "c2", "c1", 0).action,
            MeasurementDecision::kPromote);
  // Two confirmation runs: runs 0 and 1 confirm, run 2 promotes.
  EXPECT_EQ(DecideOnMeasurement(PairedRun(0, evidence::FASTER), false, "c2", "c1", 2).next_run, 1);
  d = DecideOnMeasurement(PairedRun(1, evidence::FASTER), false, "c2", "c1", 2);
  EXPECT_EQ(d.action, MeasurementDecision::kConfirm);
  EXPECT_EQ(d.next_run, 2);
  EXPECT_EQ(DecideOnMeasurement(PairedRun(2, evidence::FASTER), false, "c2", "c1", 2).action,
            MeasurementDecision::kPromote);
}

TEST(MeasurementDecision, AChangedIncumbentMeansMeasuringAgainFromRunZero) {
  const auto d = DecideOnMeasurement(PairedRun(1, evidence::FASTER, "c1"), false, "c2", "c3", 1);
  EXPECT_EQ(d.action, MeasurementDecision::kRemeasure);
  EXPECT_EQ(d.next_run, 0);
}

// Two confirmation runs of one candidate were queued (a Measure beside the daemon's own); the
// first promoted it. The second must neither re-measure it against itself nor demote it.
TEST(MeasurementDecision, ARunEndingAfterThePromotionDecidesNothing) {
  for (auto v : {evidence::FASTER, evidence::TIE, evidence::SLOWER}) {
    const auto d = DecideOnMeasurement(PairedRun(1, v, "c1"), false, "c2", "c2", 1);
    EXPECT_EQ(d.action, MeasurementDecision::kAlreadyIncumbent) << evidence::TimingVerdict_Name(v);
    EXPECT_NE(d.summary.find("became the incumbent"), std::string::npos) << d.summary;
  }
}

TEST(MeasurementDecision, WrongTimedOutputRejectsBeforeAnyVerdict) {
  auto m = PairedRun(1, evidence::FASTER);
  m.set_invalid(true);
  m.set_invalid_reason("challenger output changed on launch 7");
  const auto d = DecideOnMeasurement(m, true, "c2", "c1", 1);
  EXPECT_EQ(d.action, MeasurementDecision::kRejectTimedOutput);
  EXPECT_NE(d.summary.find("launch 7"), std::string::npos);
}

TEST(MeasurementDecision, InvalidRunIsNeverRanked) {
  auto m = PairedRun(0, evidence::FASTER);
  m.set_invalid(true);
  m.set_invalid_reason("throttled");
  EXPECT_EQ(DecideOnMeasurement(m, false, "c2", "c1", 1).action,
            MeasurementDecision::kRecordInvalid);
  EXPECT_EQ(DecideOnMeasurement(PairedRun(0, evidence::INVALID), false, "c2", "c1", 1).action,
            MeasurementDecision::kRecordInvalid);
}

TEST(TimedOutputChecks, ChallengerGetsARecordIncumbentAnEvent) {
  evidence::Measurement m = PairedRun(0, evidence::FASTER);
  auto* inc = m.add_output_checks();
  inc->set_arm("incumbent");
  inc->set_mismatches(1);
  inc->set_first_failure("incumbent wrong");
  auto* cha = m.add_output_checks();
  cha->set_arm("challenger");
  cha->set_launches_checked(40);
  cha->set_inputs_modified(2);
  auto strict = ReadTimedOutputChecks(m, false);
  ASSERT_EQ(strict.records.size(), 1u);
  EXPECT_EQ(strict.records[0].kind(), evidence::TIMED_OUTPUT);
  EXPECT_EQ(strict.records[0].status(), evidence::FAILED);  // inputs modified
  EXPECT_EQ(strict.records[0].coverage().launches(), 40);
  EXPECT_TRUE(strict.challenger_failed);
  ASSERT_EQ(strict.incumbent_failures.size(), 1u);
  EXPECT_NE(strict.incumbent_failures[0].find("incumbent wrong"), std::string::npos);
  // Where the contract lets kernels write their inputs, a changed input is no failure.
  auto lenient = ReadTimedOutputChecks(m, true);
  EXPECT_EQ(lenient.records[0].status(), evidence::PASSED);
  EXPECT_FALSE(lenient.challenger_failed);
}

}  // namespace
}  // namespace cake::server
