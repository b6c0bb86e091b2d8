// Candidates: their schedules, hypotheses, states and idempotency keys (candidates, hypotheses
// tables). Get() assembles a candidate with the evidence recorded about it.
// Thread-safety: safe from any thread.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "cake/evidence.pb.h"

namespace cake::ledger {

class Connection;
class EventLog;
class EvidenceStore;

class CandidateStore {
 public:
  CandidateStore(Connection* conn, EventLog* events, EvidenceStore* evidence)
      : conn_(conn), events_(events), evidence_(evidence) {}

  struct Inserted {
    std::string id;
    bool existed = false;  // the contract had this schedule already: its candidate is returned
  };
  absl::StatusOr<Inserted> Insert(const evidence::Candidate& c, const std::string& idempotency_key);
  absl::Status SetState(const std::string& id, evidence::CandidateState state,
                        evidence::CandidateState rejected_at, const std::string& note);
  absl::StatusOr<evidence::Candidate> Get(const std::string& id);
  // Only the state, without assembling the evidence.
  struct StateOf {
    evidence::CandidateState state = evidence::CANDIDATE_STATE_UNSPECIFIED;
    evidence::CandidateState rejected_at = evidence::CANDIDATE_STATE_UNSPECIFIED;
  };
  absl::StatusOr<StateOf> State(const std::string& id);
  // Newest first: up to `limit` candidates with seq < before_seq (0 = from the newest).
  struct CandidatePage {
    std::vector<evidence::Candidate> candidates;
    int64_t last_seq = 0;  // seq of the last one returned
    bool more = false;     // older candidates remain
  };
  absl::StatusOr<CandidatePage> List(const std::string& contract_id, int limit,
                                     int64_t before_seq = 0);
  // Ids of a contract's candidates in `state`, oldest first.
  absl::StatusOr<std::vector<std::string>> InState(const std::string& contract_id,
                                                   evidence::CandidateState state);
  absl::StatusOr<std::map<std::string, int64_t>> CountsByState();          // state name -> count
  absl::StatusOr<std::string> ForKey(const std::string& idempotency_key);  // "" if none

 private:
  Connection* conn_;
  EventLog* events_;
  EvidenceStore* evidence_;
};

}  // namespace cake::ledger
