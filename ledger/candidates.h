// Candidates: their schedules, hypotheses, states and idempotency keys (candidates, hypotheses
// tables). Get() assembles a candidate with the evidence recorded about it.
// Thread-safety: safe from any thread.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "cake/evidence.pb.h"

namespace cake::ledger {

// What makes two hypotheses the same claim: the parent, the set of changed decisions and the
// expected effect, each lower-cased with its whitespace collapsed (the decisions' order does not
// count; a sweep that states each point's effect is not a repeat). "" when the hypothesis names
// no parent or no decision (nothing to match).
std::string HypothesisKey(const evidence::Hypothesis& h);

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
  // What a proposal checks of another candidate, without assembling its evidence.
  struct Head {
    std::string id, contract_id, branch, schedule_hash, status_note;
    evidence::CandidateState state = evidence::CANDIDATE_STATE_UNSPECIFIED;
    evidence::CandidateState rejected_at = evidence::CANDIDATE_STATE_UNSPECIFIED;
    int64_t seq = 0;  // order of proposal
  };
  absl::StatusOr<Head> HeadOf(const std::string& id);  // NOT_FOUND if none
  // The newest candidate of the contract whose hypothesis has `key` and whose evidence refuted
  // it: rejected by its analysis, validation or timed outputs, or measured without beating the
  // incumbent. A failed compile does not count (a worker crash says nothing of the hypothesis).
  // nullopt if none.
  absl::StatusOr<std::optional<Head>> LatestFailure(const std::string& contract_id,
                                                    const std::string& key);
  // The contract's newest failures (rejected at any stage, or measured and not faster), newest
  // first, at most `limit`.
  absl::StatusOr<std::vector<Head>> Failures(const std::string& contract_id, int limit);
  // The contract's first candidate, its baseline ("" if none).
  absl::StatusOr<std::string> Oldest(const std::string& contract_id);
  // The hypothesis a candidate was proposed with (empty if none).
  absl::StatusOr<evidence::Hypothesis> HypothesisOf(const std::string& id);
  // A contract's branches, by their first proposal.
  struct Branch {
    std::string name;
    int64_t candidates = 0, rejected = 0;
    std::string first, head;  // oldest and newest candidate
    std::string forked_from;  // the first candidate's parent ("" for none)
  };
  absl::StatusOr<std::vector<Branch>> Branches(const std::string& contract_id);
  absl::StatusOr<int64_t> CountOnBranch(const std::string& contract_id, const std::string& branch);
  // Newest first: up to `limit` candidates with seq < before_seq (0 = from the newest).
  struct CandidatePage {
    std::vector<evidence::Candidate> candidates;
    int64_t last_seq = 0;  // seq of the last one returned
    bool more = false;     // older candidates remain
  };
  // `branch` "" lists every branch.
  absl::StatusOr<CandidatePage> List(const std::string& contract_id, int limit,
                                     int64_t before_seq = 0, const std::string& branch = "");
  // Ids of a contract's candidates in `state`, oldest first.
  absl::StatusOr<std::vector<std::string>> InState(const std::string& contract_id,
                                                   evidence::CandidateState state);
  absl::StatusOr<std::map<std::string, int64_t>> CountsByState();          // state name -> count
  absl::StatusOr<std::string> ForKey(const std::string& idempotency_key);  // "" if none

 private:
  // The candidate's hypothesis (nullopt if none); the caller holds the connection's lock.
  absl::StatusOr<std::optional<evidence::Hypothesis>> ReadHypothesis(const std::string& id);

  Connection* conn_;
  EventLog* events_;
  EvidenceStore* evidence_;
};

}  // namespace cake::ledger
