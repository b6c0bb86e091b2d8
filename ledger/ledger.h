// The evidence ledger: SQLite in WAL mode (synchronous=FULL), versioned migrations, typed queries.
// No SQL exists outside ledger/.
//
// File format: application_id 0x43414B45 ("CAKE"); user_version = schema version. Open refuses a
// foreign SQLite file (other application_id, or ours missing on a non-empty database) and a
// newer schema, and never writes to them. Tables (schema v1):
//   contracts(id, name, body)                 immutable (trigger refuses UPDATE/DELETE)
//   incumbents(contract_id, candidate_id)     current incumbent per contract
//   promotions(contract_id, candidate_id, previous_id, reason)
//   candidates(id, seq, contract_id, schedule_hash, schedule_text, state, rejected_at, ...)
//   hypotheses(candidate_id, body)
//   jobs(id, candidate_id, kind, state, attempt, boot_id, request, error, worker_pid, ...)
//   job_attempts(job_id, attempt, outcome, error)  UNIQUE(job_id, attempt): exactly-once records
//   analysis_reports / receipts(candidate_id, target, body) ; artifacts(key, dir, cubin_sha256)
//   validations(candidate_id, job_id, passed, body)
//   measurements(candidate_id, incumbent_id, run, verdict, body) + measurement_samples
//   events(id, created_ms, kind, candidate_id, job_id, message)
// Schema v2 adds:
//   evidence_records(candidate_id, job_id, kind, tool, status, body)  one row per record, never
//     updated: the latest (highest id) per kind and tool is current
//   measurements.invalid / invalid_reason         an invalid run is kept but never ranked
//   measurement_samples.mode, cache, discarded, incumbent/challenger_sm_mhz, temperature_c,
//     power_w, incumbent/challenger_span_us      (NULL where not read)
// Schema v3 adds:
//   contracts.body_sha256                     checked on every read: a flipped bit is refused
//   measure_requests(idempotency_key, candidate_id, job_id)  a retried Measure queues nothing
//   write_probe(id, at_ms)                    written at open: a full disk refuses the start
//   job_attempts.outcome 'SHUTDOWN'           killed by a graceful stop: re-queued, not counted
// Schema v4 keeps every shape as a workload's arm of contract.ProblemShape: stored contracts,
//   validations and evidence records are rewritten from the GEMM-only fields they had.
// Opening an older ledger migrates it to v4 in one transaction.
//
// Values (requests, reports, record bodies) above kMaxBoundBytes (sqlite.h, 32 MiB) are refused
// with RESOURCE_EXHAUSTED, whatever table they are for.
//
// Thread-safety: all methods are safe to call from any thread (one connection, serialized by a
// mutex). Atomically() runs several calls in one IMMEDIATE transaction. Never carry a Ledger
// across fork(); workers get no database handle.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "cake/contract.pb.h"
#include "cake/evidence.pb.h"
#include "cake/report.pb.h"

namespace cake::ledger {

class Db;

inline constexpr int64_t kApplicationId = 0x43414B45;  // "CAKE"
inline constexpr int kSchemaVersion = 4;

enum class JobState { kQueued, kRunning, kDone, kFailed, kInterrupted };
std::string JobStateName(JobState s);

struct Job {
  int64_t id = 0;
  std::string candidate_id;
  std::string kind;  // "compile" | "validate" | "measure" | "probe"
  JobState state = JobState::kQueued;
  int attempt = 0;
  std::string request;  // serialized cake.worker.Request
  std::string error;
  int64_t created_ms = 0, started_ms = 0, finished_ms = 0;
  int64_t worker_pid = 0;
};

struct Event {
  int64_t id = 0;
  int64_t created_ms = 0;
  std::string kind, candidate_id, message;
  int64_t job_id = 0;
};

struct RecoveryReport {
  int requeued = 0;              // RUNNING jobs of an earlier boot put back in the queue
  int failed = 0;                // ... that had used up their attempts
  int queued = 0;                // jobs waiting in the queue after recovery
  std::vector<Job> interrupted;  // every RUNNING job of an earlier boot (worker_pid as recorded)
  std::vector<Job> gave_up;      // those marked FAILED: the caller settles their candidates
};

class Ledger {
 public:
  // Opens (creating or migrating) the ledger at `path`. FailedPrecondition for a foreign or newer
  // file, DataLoss for a corrupt one; the file is left untouched in both cases.
  static absl::StatusOr<std::unique_ptr<Ledger>> Open(const std::string& path);
  ~Ledger();

  // Starts a boot: RUNNING jobs of earlier boots become INTERRUPTED, then are re-queued while
  // fewer than max_attempts of their attempts were interrupted by a crash (graceful shutdowns
  // do not count), else FAILED. Each is logged as an event.
  absl::StatusOr<RecoveryReport> BeginBoot(const std::string& boot_id, int max_attempts);

  // Runs fn inside one IMMEDIATE transaction (nested calls join it).
  absl::Status Atomically(const std::function<absl::Status()>& fn);

  // Contracts (immutable; each read is checked against the digest stored with it: DataLoss).
  absl::StatusOr<bool> InsertContract(const std::string& id, const contract::Contract& c);
  absl::StatusOr<contract::Contract> GetContract(const std::string& id);
  // Every contract that passes its check; the ids of those that do not go to `corrupt`.
  absl::StatusOr<std::vector<std::pair<std::string, contract::Contract>>> ListContracts(
      std::vector<std::string>* corrupt = nullptr);
  absl::Status SetIncumbent(const std::string& contract_id, const std::string& candidate_id,
                            const std::string& reason);
  absl::StatusOr<std::string> Incumbent(const std::string& contract_id);  // "" if none

  // Candidates.
  struct Inserted {
    std::string id;
    bool existed = false;
  };
  absl::StatusOr<Inserted> InsertCandidate(const evidence::Candidate& c,
                                           const std::string& idempotency_key);
  absl::Status SetCandidateState(const std::string& id, evidence::CandidateState state,
                                 evidence::CandidateState rejected_at, const std::string& note);
  absl::Status PutAnalysis(const std::string& candidate, const report::AnalysisReport& r);
  absl::Status PutReceipt(const std::string& candidate, const report::LoweringReceipt& r);
  absl::StatusOr<report::LoweringReceipt> GetReceipt(const std::string& candidate,
                                                     const std::string& target);
  absl::Status PutValidation(const std::string& candidate, int64_t job_id,
                             const evidence::Validation& v);
  absl::Status PutMeasurement(const std::string& candidate, const evidence::Measurement& m);
  absl::Status PutEvidence(const std::string& candidate, int64_t job_id,
                           const evidence::EvidenceRecord& r);
  // The latest record of each kind and tool.
  absl::StatusOr<std::vector<evidence::EvidenceRecord>> LatestEvidence(
      const std::string& candidate);
  absl::StatusOr<evidence::Candidate> GetCandidate(const std::string& id);
  // Newest first: up to `limit` candidates with seq < before_seq (0 = from the newest).
  struct CandidatePage {
    std::vector<evidence::Candidate> candidates;
    int64_t last_seq = 0;  // seq of the last one returned
    bool more = false;     // older candidates remain
  };
  absl::StatusOr<CandidatePage> ListCandidates(const std::string& contract_id, int limit,
                                               int64_t before_seq = 0);
  // Ids of a contract's candidates in `state`, oldest first.
  absl::StatusOr<std::vector<std::string>> CandidatesInState(const std::string& contract_id,
                                                             evidence::CandidateState state);
  absl::StatusOr<std::map<std::string, int64_t>> CandidateCounts();  // state name -> count
  absl::StatusOr<std::string> CandidateForKey(const std::string& idempotency_key);
  // The measurement request an idempotency key queued: (candidate, job id), or nullopt.
  absl::StatusOr<std::optional<std::pair<std::string, int64_t>>> MeasureForKey(
      const std::string& idempotency_key);
  absl::Status InsertMeasureRequest(const std::string& idempotency_key,
                                    const std::string& candidate, int64_t job_id);

  // Jobs.
  absl::StatusOr<int64_t> EnqueueJob(const std::string& candidate, const std::string& kind,
                                     const std::string& request);
  absl::StatusOr<std::vector<Job>> QueuedJobs();
  absl::StatusOr<int64_t> CountJobs(JobState state);
  absl::StatusOr<Job> GetJob(int64_t id);
  absl::Status MarkJobRunning(int64_t id, int64_t pid);
  absl::Status SetJobPid(int64_t id, int64_t pid);
  // A RUNNING job killed by a graceful shutdown: its attempt is recorded as SHUTDOWN and the job
  // goes back to the queue (not counted against max_attempts).
  absl::Status RequeueAfterShutdown(int64_t id);
  absl::Status FinishJob(int64_t id, bool ok, const std::string& error);
  absl::StatusOr<std::vector<Job>> RecentFailedJobs(int limit);

  // Events.
  absl::Status AddEvent(const std::string& kind, const std::string& candidate, int64_t job_id,
                        const std::string& message);
  absl::StatusOr<std::vector<Event>> EventsAfter(int64_t after_id, int limit);

  const std::string& path() const { return path_; }

 private:
  Ledger() = default;
  absl::Status Migrate();
  absl::Status MigrateToV3();
  absl::Status MigrateToV4();
  absl::Status ProbeWrite();
  std::recursive_mutex mu_;
  int depth_ ABSL_GUARDED_BY(mu_) = 0;  // Atomically() nesting
  std::unique_ptr<Db> db_;
  std::string path_;
  std::string boot_id_;
};

int64_t NowMs();

}  // namespace cake::ledger
