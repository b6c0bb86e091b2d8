// The candidate state machine, pure:
//   Proposed -> Analyzed -> Compiled -> Validated -> Measured <-> Challenger -> ConfirmedWinner
// with Rejected (and the stage it was rejected at) reachable from every stage and final. Each
// step a job's result can take is named; Next() says where it leads from a state, or refuses it
// (an orchestrator bug, never a user error). Notes (why a candidate waits) do not change state.
#pragma once

#include <string>

#include "absl/status/statusor.h"
#include "cake/evidence.pb.h"

namespace cake::server {

enum class Step {
  kAnalysisRejected,    // a target's analysis rejected the schedule, or could not decide
  kAnalyzed,            // every target's analysis verified it
  kReceiptFailed,       // a target's lowering receipt failed (SASS, spills, ...)
  kCompileJobFailed,    // the compile job itself failed
  kCompiled,            // every receipt passed
  kEvidenceFailed,      // a validation or sanitizer record failed (or its worker died)
  kEligible,            // every required record passed
  kBecameIncumbent,     // the contract's eligible baseline becomes its first incumbent
  kNotFaster,           // a paired run did not beat the incumbent: incumbent kept
  kConfirmationQueued,  // a paired run beat the incumbent; the confirmation run is queued
  kPromoted,            // the confirmation run beat it too
  kTimedOutputFailed,   // what was timed was wrong: the timed-output check failed
  kNote,                // waiting, missing evidence, an invalid run: state unchanged
};
std::string StepName(Step s);

struct StateChange {
  evidence::CandidateState state = evidence::CANDIDATE_STATE_UNSPECIFIED;
  // The stage a rejection happened at; UNSPECIFIED unless state is REJECTED.
  evidence::CandidateState rejected_at = evidence::CANDIDATE_STATE_UNSPECIFIED;
};

// Where `step` leads from `from` (rejected_at: the candidate's, kept by kNote).
// FAILED_PRECONDITION names the state and step when the step cannot happen there.
absl::StatusOr<StateChange> Next(evidence::CandidateState from,
                                 evidence::CandidateState rejected_at, Step step);

}  // namespace cake::server
