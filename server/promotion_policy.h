// Promotion policy, pure: what the orchestrator does once a candidate's evidence is complete
// (admission), and once a paired measurement of it against the incumbent is judged. Promotion
// is the orchestrator's alone: an eligible candidate, no required-row regression, faster than
// the incumbent beyond the practical floor in every one of 1 + confirmation_runs paired runs
// against the same incumbent; a tie keeps the incumbent.
#pragma once

#include <string>
#include <vector>

#include "cake/evidence.pb.h"

namespace cake::server {

enum class Admission {
  kReject,               // a record failed
  kWaitForEvidence,      // a required record is missing (missing is not success)
  kAlreadyIncumbent,     // nothing to measure against
  kMeasure,              // measure against the incumbent (run 0)
  kWaitForBaseline,      // no incumbent yet, and only the contract's baseline becomes the first
  kBecomeFirstIncumbent  // the eligible baseline of a contract without an incumbent
};

Admission Admit(const evidence::Eligibility& e, const std::string& candidate,
                const std::string& incumbent, bool is_contract_baseline);

// The timed-output evidence of a measurement: one TIMED_OUTPUT record for the challenger's
// check, and the incumbent's failures (events, not records: the incumbent is not on trial).
struct TimedOutputEvidence {
  std::vector<evidence::EvidenceRecord> records;
  bool challenger_failed = false;
  std::vector<std::string> incumbent_failures;
};
TimedOutputEvidence ReadTimedOutputChecks(const evidence::Measurement& m, bool inputs_mutable);

struct MeasurementDecision {
  enum Action {
    kRejectTimedOutput,  // what was timed was wrong
    kRecordInvalid,      // the run is kept, never ranked; state unchanged
    kKeepIncumbent,      // slower, a tie or a required-row regression
    kRemeasure,          // faster, but the incumbent changed meanwhile: run 0 against the new one
    kConfirm,            // faster; queue run `next_run` against the same incumbent
    kPromote,            // faster in every run
    kAlreadyIncumbent,   // a run queued before the candidate's promotion: kept, nothing decided
  } action = kKeepIncumbent;
  int next_run = 0;
  std::string summary;  // the run's verdict in words, for notes and the promotion reason
};

// `m` (a run of `candidate`) judged by the daemon (protocol::JudgeMeasurement);
// `current_incumbent` the contract's incumbent now; confirmation_runs as in the contract (0
// means 1).
MeasurementDecision DecideOnMeasurement(const evidence::Measurement& m, bool timed_output_failed,
                                        const std::string& candidate,
                                        const std::string& current_incumbent,
                                        int confirmation_runs);

}  // namespace cake::server
