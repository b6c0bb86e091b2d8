#include "candidate_lifecycle.h"

#include <initializer_list>

#include "absl/strings/str_cat.h"

namespace cake::server {
namespace {

using evidence::CandidateState;

// States from which a measurement of the candidate against the incumbent can report. A former
// incumbent (ConfirmedWinner, dethroned) may be measured again.
bool Measurable(CandidateState s) {
  return s == evidence::VALIDATED || s == evidence::MEASURED || s == evidence::CHALLENGER ||
         s == evidence::CONFIRMED_WINNER;
}

bool In(CandidateState s, std::initializer_list<CandidateState> states) {
  for (CandidateState t : states)
    if (s == t) return true;
  return false;
}

}  // namespace

std::string StepName(Step s) {
  switch (s) {
    case Step::kAnalysisRejected:
      return "analysis_rejected";
    case Step::kAnalyzed:
      return "analyzed";
    case Step::kReceiptFailed:
      return "receipt_failed";
    case Step::kCompileJobFailed:
      return "compile_job_failed";
    case Step::kCompiled:
      return "compiled";
    case Step::kEvidenceFailed:
      return "evidence_failed";
    case Step::kEligible:
      return "eligible";
    case Step::kBecameIncumbent:
      return "became_incumbent";
    case Step::kNotFaster:
      return "not_faster";
    case Step::kConfirmationQueued:
      return "confirmation_queued";
    case Step::kPromoted:
      return "promoted";
    case Step::kTimedOutputFailed:
      return "timed_output_failed";
    case Step::kNote:
      return "note";
  }
  return "unknown";
}

absl::StatusOr<StateChange> Next(CandidateState from, CandidateState rejected_at, Step step) {
  auto to = [](CandidateState s) { return StateChange{s, evidence::CANDIDATE_STATE_UNSPECIFIED}; };
  auto reject = [](CandidateState at) { return StateChange{evidence::REJECTED, at}; };
  bool allowed = false;
  StateChange next;
  switch (step) {
    case Step::kAnalysisRejected:
      allowed = from == evidence::PROPOSED;
      next = reject(evidence::ANALYZED);
      break;
    case Step::kAnalyzed:
      allowed = from == evidence::PROPOSED;
      next = to(evidence::ANALYZED);
      break;
    case Step::kReceiptFailed:
      allowed = from == evidence::ANALYZED;
      next = reject(evidence::COMPILED);
      break;
    case Step::kCompileJobFailed:
      allowed = In(from, {evidence::PROPOSED, evidence::ANALYZED});
      next = reject(evidence::COMPILED);
      break;
    case Step::kCompiled:
      allowed = from == evidence::ANALYZED;
      next = to(evidence::COMPILED);
      break;
    case Step::kEvidenceFailed:
      allowed = from == evidence::COMPILED;
      next = reject(evidence::VALIDATED);
      break;
    case Step::kEligible:
      allowed = from == evidence::COMPILED;
      next = to(evidence::VALIDATED);
      break;
    case Step::kBecameIncumbent:
      allowed = from == evidence::VALIDATED;
      next = to(evidence::CONFIRMED_WINNER);
      break;
    case Step::kNotFaster:
      allowed = Measurable(from);
      next = to(evidence::MEASURED);
      break;
    case Step::kConfirmationQueued:
      allowed = Measurable(from);
      next = to(evidence::CHALLENGER);
      break;
    case Step::kPromoted:
      // Only a challenger: no candidate is promoted on one paired run.
      allowed = from == evidence::CHALLENGER;
      next = to(evidence::CONFIRMED_WINNER);
      break;
    case Step::kTimedOutputFailed:
      allowed = Measurable(from);
      next = reject(evidence::MEASURED);
      break;
    case Step::kNote:
      allowed = from != evidence::REJECTED && from != evidence::CANDIDATE_STATE_UNSPECIFIED;
      next = StateChange{from, rejected_at};
      break;
  }
  if (!allowed)
    return absl::FailedPreconditionError(absl::StrCat(
        "candidate state machine: step ", StepName(step), " cannot happen in state ",
        evidence::CandidateState_Name(from),
        from == evidence::REJECTED
            ? absl::StrCat(" (rejected at ", evidence::CandidateState_Name(rejected_at),
                           ", which is final)")
            : ""));
  return next;
}

}  // namespace cake::server
