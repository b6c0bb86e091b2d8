// The daemon's search: one more proposer, with an agent's rights. It enumerates the contract
// workload's schedule space (Workload::SearchSpace), ranks the points not yet tried with the tile
// cost model fitted to this device's measured rows of every contract of the workload
// (search_model.h), proposes the best few, lets the normal jobs compile, validate, sanitize and
// time them against the incumbent (promotion stays the orchestrator's), refits on what was measured
// and repeats until its budget of time or proposals ends or the space is exhausted. Before three
// schedules are measured on the device the model is uncalibrated and the space's own order decides
// (the workload's list first).
//
// It reaches the daemon only through SearchBackend: the contract, its candidates, Propose, the
// execution device and the ledger's search rows. Its whole state is the SearchReport saved after
// every change, so a restarted daemon resumes it (proposals carry idempotency keys: one lost
// between Propose and the save comes back as the same candidate).
//
// Thread-safety: a Search is driven by one thread; backends are called from it.
#pragma once

#include <atomic>
#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "cake/contract.pb.h"
#include "cake/evidence.pb.h"
#include "cake/service.pb.h"
#include "calibration/tile_cost_model.h"
#include "workloads/workload.h"

namespace cake::search {

struct ExecutionDevice {
  std::string name;  // as measurements name it, e.g. "NVIDIA H100 80GB HBM3"
  int sm_count = 0;
};

// Another contract of the searched workload, with its candidates (schedule texts included).
struct ContractCandidates {
  contract::Contract contract;
  std::vector<evidence::Candidate> candidates;
};

class SearchBackend {
 public:
  virtual ~SearchBackend() = default;
  virtual absl::StatusOr<contract::Contract> Contract(const std::string& id) = 0;
  // The contract's incumbent candidate id ("" before the baseline compiled).
  virtual absl::StatusOr<std::string> Incumbent(const std::string& contract_id) = 0;
  // Every candidate of the contract with its state, receipt, schedule text and measurements.
  virtual absl::StatusOr<std::vector<evidence::Candidate>> Candidates(
      const std::string& contract_id) = 0;
  // The other contracts of `operation` (not `except`): their rows measured on this device
  // calibrate the model too, so a new contract's search starts from what the device showed.
  virtual absl::StatusOr<std::vector<ContractCandidates>> OtherContracts(
      const std::string& operation, const std::string& except) = 0;
  // As an agent would, recorded with proposer "search".
  virtual absl::StatusOr<v1::ProposeReply> Propose(const v1::ProposeRequest& req) = 0;
  // The device that times the contract's candidates, or FailedPrecondition saying why there is
  // none (the search is refused, nothing proposed).
  virtual absl::StatusOr<ExecutionDevice> Device(const contract::Contract& c) = 0;
  virtual absl::Status Save(const v1::SearchReport& report) = 0;
  virtual absl::Status SaveCalibration(const v1::SearchReport& report) = 0;
  // Returns when something may have changed (an event), or after `timeout`.
  virtual void WaitForChange(std::chrono::milliseconds timeout) = 0;
  virtual int64_t NowMs() = 0;
};

// Limits of StartSearchRequest (INVALID_ARGUMENT naming the field beyond them).
inline constexpr int64_t kMaxBudgetSeconds = 86400;
inline constexpr int kMaxCandidates = 2000, kDefaultCandidates = 200;
inline constexpr int kMaxBatch = 64, kDefaultBatch = 8;
// A proposal unsettled this long no longer holds a place in the batch.
inline constexpr int64_t kStalledAfterMs = 15 * 60 * 1000;

// The first field of a StartSearchRequest out of its limits, and why; nullopt when none is.
struct FieldError {
  std::string field, message;
};
std::optional<FieldError> CheckStartRequest(const v1::StartSearchRequest& req);

// A new search's report from a request, or INVALID_ARGUMENT naming the field; FAILED_PRECONDITION
// when the contract's workload has no space the model can rank or no device executes it.
absl::StatusOr<v1::SearchReport> NewSearch(const v1::StartSearchRequest& req,
                                           const std::string& search_id, SearchBackend& backend);

class Search {
 public:
  Search(v1::SearchReport report, SearchBackend* backend)
      : report_(std::move(report)), backend_(backend) {}
  // Runs until the budget, the candidate limit or the space ends it, or `stop` is set (a daemon
  // stopping: the report stays "running" and is resumed at the next start). Returns the report.
  v1::SearchReport Run(const std::atomic<bool>& stop);
  // One round: refresh, refit, propose what the batch allows. False when the search ended.
  bool Step();
  const v1::SearchReport& report() const { return report_; }

 private:
  absl::Status Refresh(const std::vector<evidence::Candidate>& candidates);
  void Finish(const std::string& state, const std::string& reason);

  v1::SearchReport report_;
  SearchBackend* backend_;
  std::vector<workloads::Proposal> space_;  // the workload's search space, once
  std::vector<std::optional<calibration::TileSchedule>> space_tiles_;
  int64_t calibrated_samples_ = -1;
};

// A candidate state that is final for the search's purposes: measured, rejected or promoted.
bool Settled(evidence::CandidateState s);

}  // namespace cake::search
