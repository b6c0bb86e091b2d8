// The durable job queue (jobs, job_attempts, measure_requests tables): jobs are queued, claimed
// (RUNNING, one attempt more), finished exactly once, and recovered at boot.
// Thread-safety: safe from any thread.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"

namespace cake::ledger {

class Connection;
class EventLog;

// What a job does. Stored by name; a name this build does not know reads as kUnknown.
enum class JobKind { kUnknown, kCompile, kValidate, kSanitize, kMeasure, kRegress };
std::string JobKindName(JobKind k);
JobKind ParseJobKind(const std::string& name);

// BLOCKED: the machine failed the job more often than a retry may fix (a disk full, a tool
// missing, a daemon crashing during it); it waits for an operator's retry, never a verdict.
enum class JobState { kQueued, kRunning, kDone, kFailed, kInterrupted, kBlocked };
std::string JobStateName(JobState s);

struct Job {
  int64_t id = 0;
  std::string candidate_id;
  JobKind kind = JobKind::kUnknown;
  JobState state = JobState::kQueued;
  int attempt = 0;
  std::string request;  // serialized cake.worker.Request
  std::string error;
  int64_t created_ms = 0, started_ms = 0, finished_ms = 0;
  int64_t worker_pid = 0;
  int infra_failures = 0;     // attempts the machine failed since the job was last unblocked
  int64_t not_before_ms = 0;  // a retry waits until then (0 = now)
  std::string device;  // the lane's device (UUID, else name) of the latest attempt; "" on CPU
};

struct RecoveryReport {
  int requeued = 0;              // RUNNING jobs of an earlier boot put back in the queue
  int blocked = 0;               // ... that had used up their attempts (BLOCKED, not failed)
  int queued = 0;                // jobs waiting in the queue after recovery
  std::vector<Job> interrupted;  // every RUNNING job of an earlier boot (worker_pid as recorded)
  std::vector<Job> gave_up;      // those now BLOCKED: the caller notes it on their candidates
};

class JobQueue {
 public:
  JobQueue(Connection* conn, EventLog* events) : conn_(conn), events_(events) {}

  // Starts a boot: RUNNING jobs of earlier boots become INTERRUPTED, then are re-queued while
  // fewer than max_attempts of their attempts were interrupted by a crash (graceful shutdowns
  // do not count), else BLOCKED: a daemon crash is the machine's failure, never a verdict on the
  // job's schedule. Each is logged as an event.
  absl::StatusOr<RecoveryReport> Recover(const std::string& boot_id, int max_attempts);

  absl::StatusOr<int64_t> Enqueue(const std::string& candidate, JobKind kind,
                                  const std::string& request);
  // The queue as lanes poll it, oldest first: ids and kinds only (Get() reads a job whole).
  struct QueuedJob {
    int64_t id = 0;
    JobKind kind = JobKind::kUnknown;
    std::string candidate_id;
    std::string contract_id;  // its candidate's ("" when the candidate is not in the ledger)
  };
  absl::StatusOr<std::vector<QueuedJob>> Queued();
  absl::StatusOr<int64_t> Count(JobState state);
  absl::StatusOr<Job> Get(int64_t id);
  // QUEUED -> RUNNING under this boot; FailedPrecondition when it is not queued (taken).
  // `device`: the lane's device (UUID, else name), "" for a CPU lane; kept on the job and on the
  // attempt's record.
  absl::Status MarkRunning(int64_t id, int64_t pid, const std::string& device = "");
  absl::Status SetPid(int64_t id, int64_t pid);
  // A RUNNING job killed by a graceful shutdown: its attempt is recorded as SHUTDOWN and the job
  // goes back to the queue (not counted against max_attempts).
  absl::Status RequeueAfterShutdown(int64_t id);
  // Ends a job once; finishing an ended job records nothing more.
  absl::Status Finish(int64_t id, bool ok, const std::string& error);
  // A RUNNING job the machine failed: its attempt is recorded as INFRA, infra_failures counts
  // it, and the job waits in the queue until `not_before_ms`.
  absl::Status RetryLater(int64_t id, const std::string& error, int64_t not_before_ms);
  // A RUNNING job the machine failed once too often: its attempt is recorded as INFRA and the
  // job is BLOCKED until Unblock.
  absl::Status Block(int64_t id, const std::string& error);
  // BLOCKED jobs of `candidate` (every candidate's when empty) back in the queue, their
  // infra_failures reset; how many.
  absl::StatusOr<int> Unblock(const std::string& candidate);
  absl::StatusOr<std::vector<Job>> Blocked();                // oldest first
  absl::StatusOr<std::vector<Job>> RecentFailed(int limit);  // newest first
  // Jobs by kind and state, with the seconds the ended ones ran (started to finished).
  struct KindStateCount {
    std::string kind, state;
    int64_t count = 0;
    double run_seconds = 0;
  };
  absl::StatusOr<std::vector<KindStateCount>> CountsByKindAndState();
  // The oldest queued or running job of `kind` for the candidate, 0 if none.
  absl::StatusOr<int64_t> ActiveJob(const std::string& candidate, JobKind kind);

  // The measurement job an idempotency key queued: (candidate, job id), or nullopt.
  absl::StatusOr<std::optional<std::pair<std::string, int64_t>>> MeasureForKey(
      const std::string& idempotency_key);
  absl::Status InsertMeasureRequest(const std::string& idempotency_key,
                                    const std::string& candidate, int64_t job_id);

 private:
  // The attempt of RUNNING job `j` recorded as the machine's failure (outcome INFRA).
  absl::Status RecordMachineAttempt(const Job& j, const std::string& error);

  Connection* conn_;
  EventLog* events_;
  std::string boot_id_;  // written by Recover before any job is claimed
};

}  // namespace cake::ledger
