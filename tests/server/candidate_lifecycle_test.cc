// The candidate state machine without a daemon: every (state, step) pair against a table written
// from the design (not from the code), rejection is final, promotion needs a challenger.
#include <gtest/gtest.h>

#include <map>
#include <set>
#include <utility>

#include "server/candidate_lifecycle.h"

namespace cake::server {
namespace {

using evidence::CandidateState;

const CandidateState kStates[] = {
    evidence::PROPOSED, evidence::ANALYZED,   evidence::COMPILED,         evidence::VALIDATED,
    evidence::MEASURED, evidence::CHALLENGER, evidence::CONFIRMED_WINNER, evidence::REJECTED};
const Step kSteps[] = {Step::kAnalysisRejected,
                       Step::kAnalyzed,
                       Step::kReceiptFailed,
                       Step::kCompileJobFailed,
                       Step::kCompiled,
                       Step::kEvidenceFailed,
                       Step::kEligible,
                       Step::kBecameIncumbent,
                       Step::kNotFaster,
                       Step::kConfirmationQueued,
                       Step::kPromoted,
                       Step::kTimedOutputFailed,
                       Step::kNote};

// (from, step) -> (to, rejected_at) for every allowed pair; every other pair is refused.
std::map<std::pair<CandidateState, Step>, std::pair<CandidateState, CandidateState>> Expected() {
  std::map<std::pair<CandidateState, Step>, std::pair<CandidateState, CandidateState>> t;
  const CandidateState none = evidence::CANDIDATE_STATE_UNSPECIFIED;
  t[{evidence::PROPOSED, Step::kAnalysisRejected}] = {evidence::REJECTED, evidence::ANALYZED};
  t[{evidence::PROPOSED, Step::kAnalyzed}] = {evidence::ANALYZED, none};
  t[{evidence::PROPOSED, Step::kCompileJobFailed}] = {evidence::REJECTED, evidence::COMPILED};
  t[{evidence::ANALYZED, Step::kCompileJobFailed}] = {evidence::REJECTED, evidence::COMPILED};
  t[{evidence::ANALYZED, Step::kReceiptFailed}] = {evidence::REJECTED, evidence::COMPILED};
  t[{evidence::ANALYZED, Step::kCompiled}] = {evidence::COMPILED, none};
  t[{evidence::COMPILED, Step::kEvidenceFailed}] = {evidence::REJECTED, evidence::VALIDATED};
  t[{evidence::COMPILED, Step::kEligible}] = {evidence::VALIDATED, none};
  t[{evidence::VALIDATED, Step::kBecameIncumbent}] = {evidence::CONFIRMED_WINNER, none};
  for (CandidateState s : {evidence::VALIDATED, evidence::MEASURED, evidence::CHALLENGER,
                           evidence::CONFIRMED_WINNER}) {
    t[{s, Step::kNotFaster}] = {evidence::MEASURED, none};
    t[{s, Step::kConfirmationQueued}] = {evidence::CHALLENGER, none};
    t[{s, Step::kTimedOutputFailed}] = {evidence::REJECTED, evidence::MEASURED};
  }
  t[{evidence::CHALLENGER, Step::kPromoted}] = {evidence::CONFIRMED_WINNER, none};
  for (CandidateState s : kStates)
    if (s != evidence::REJECTED) t[{s, Step::kNote}] = {s, none};
  return t;
}

TEST(CandidateLifecycle, EveryStateAndStepAgainstTheTable) {
  const auto expected = Expected();
  int allowed = 0;
  for (CandidateState from : kStates)
    for (Step step : kSteps) {
      const auto next = Next(from, evidence::CANDIDATE_STATE_UNSPECIFIED, step);
      const auto it = expected.find({from, step});
      SCOPED_TRACE(evidence::CandidateState_Name(from) + " + " + StepName(step));
      if (it == expected.end()) {
        ASSERT_FALSE(next.ok());
        EXPECT_EQ(next.status().code(), absl::StatusCode::kFailedPrecondition);
        EXPECT_NE(next.status().message().find(StepName(step)), std::string::npos);
        EXPECT_NE(next.status().message().find(evidence::CandidateState_Name(from)),
                  std::string::npos);
        continue;
      }
      ++allowed;
      ASSERT_TRUE(next.ok()) << next.status();
      EXPECT_EQ(next->state, it->second.first);
      EXPECT_EQ(next->rejected_at, it->second.second);
    }
  EXPECT_EQ(allowed, static_cast<int>(expected.size()));
}

TEST(CandidateLifecycle, RejectionIsFinalAndSaysWhere) {
  for (Step step : kSteps) {
    const auto next = Next(evidence::REJECTED, evidence::VALIDATED, step);
    ASSERT_FALSE(next.ok()) << StepName(step);
    EXPECT_NE(next.status().message().find("rejected at VALIDATED"), std::string::npos);
  }
}

TEST(CandidateLifecycle, NoteKeepsStateAndRejectedAt) {
  const auto next = Next(evidence::COMPILED, evidence::CANDIDATE_STATE_UNSPECIFIED, Step::kNote);
  ASSERT_TRUE(next.ok());
  EXPECT_EQ(next->state, evidence::COMPILED);
}

TEST(CandidateLifecycle, NoCandidateIsPromotedOnOneRun) {
  // A validated candidate that wins its first paired run becomes a challenger, not a winner.
  EXPECT_FALSE(Next(evidence::VALIDATED, {}, Step::kPromoted).ok());
  EXPECT_FALSE(Next(evidence::MEASURED, {}, Step::kPromoted).ok());
  auto c = Next(evidence::VALIDATED, {}, Step::kConfirmationQueued);
  ASSERT_TRUE(c.ok());
  auto w = Next(c->state, c->rejected_at, Step::kPromoted);
  ASSERT_TRUE(w.ok());
  EXPECT_EQ(w->state, evidence::CONFIRMED_WINNER);
}

TEST(CandidateLifecycle, TheWholePathOfAWinner) {
  CandidateState s = evidence::PROPOSED;
  for (Step step : {Step::kAnalyzed, Step::kCompiled, Step::kEligible, Step::kNotFaster,
                    Step::kConfirmationQueued, Step::kPromoted}) {
    auto n = Next(s, {}, step);
    ASSERT_TRUE(n.ok()) << StepName(step) << ": " << n.status();
    s = n->state;
  }
  EXPECT_EQ(s, evidence::CONFIRMED_WINNER);
}

}  // namespace
}  // namespace cake::server
