#include "jobs.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "connection.h"
#include "events.h"

namespace cake::ledger {
namespace {

JobState ParseJobState(const std::string& s) {
  if (s == "RUNNING") return JobState::kRunning;
  if (s == "DONE") return JobState::kDone;
  if (s == "FAILED") return JobState::kFailed;
  if (s == "INTERRUPTED") return JobState::kInterrupted;
  if (s == "BLOCKED") return JobState::kBlocked;
  return JobState::kQueued;
}

Job ReadJob(const Stmt& s) {
  Job j;
  j.id = s.Int(0);
  j.candidate_id = s.Text(1);
  j.kind = ParseJobKind(s.Text(2));
  j.state = ParseJobState(s.Text(3));
  j.attempt = static_cast<int>(s.Int(4));
  j.request = s.Blob(5);
  j.error = s.Text(6);
  j.created_ms = s.Int(7);
  j.started_ms = s.Int(8);
  j.finished_ms = s.Int(9);
  j.worker_pid = s.Int(10);
  j.infra_failures = static_cast<int>(s.Int(11));
  j.not_before_ms = s.Int(12);
  j.device = s.Text(13);
  return j;
}

constexpr const char* kJobColumns =
    "id, candidate_id, kind, state, attempt, request, error, created_ms, started_ms, "
    "finished_ms, worker_pid, infra_failures, not_before_ms, device";

constexpr std::pair<JobKind, const char*> kJobKindNames[] = {{JobKind::kCompile, "compile"},
                                                             {JobKind::kValidate, "validate"},
                                                             {JobKind::kSanitize, "sanitize"},
                                                             {JobKind::kMeasure, "measure"},
                                                             {JobKind::kRegress, "regress"}};

}  // namespace

std::string JobKindName(JobKind k) {
  for (const auto& [kind, name] : kJobKindNames)
    if (kind == k) return name;
  return "unknown";
}

JobKind ParseJobKind(const std::string& name) {
  for (const auto& [kind, n] : kJobKindNames)
    if (name == n) return kind;
  return JobKind::kUnknown;
}

std::string JobStateName(JobState s) {
  switch (s) {
    case JobState::kQueued:
      return "QUEUED";
    case JobState::kRunning:
      return "RUNNING";
    case JobState::kDone:
      return "DONE";
    case JobState::kFailed:
      return "FAILED";
    case JobState::kInterrupted:
      return "INTERRUPTED";
    case JobState::kBlocked:
      return "BLOCKED";
  }
  return "QUEUED";
}

absl::StatusOr<RecoveryReport> JobQueue::Recover(const std::string& boot_id, int max_attempts) {
  RecoveryReport report;
  boot_id_ = boot_id;
  absl::Status s = conn_->Atomically([&]() -> absl::Status {
    CAKE_ASSIGN_OR_RETURN(Stmt running,
                          conn_->db().Prepare(absl::StrCat("SELECT ", kJobColumns,
                                                           " FROM jobs WHERE state = 'RUNNING'")));
    while (running.Step()) report.interrupted.push_back(ReadJob(running));
    CAKE_RETURN_IF_ERROR(running.status());
    for (const Job& j : report.interrupted) {
      CAKE_ASSIGN_OR_RETURN(
          Stmt rec,
          conn_->db().Prepare(
              "INSERT OR IGNORE INTO job_attempts(job_id, attempt, outcome, error, finished_ms, "
              "device) VALUES (?, ?, 'INTERRUPTED', 'daemon restarted while the job ran', ?, ?)"));
      CAKE_RETURN_IF_ERROR(
          rec.Bind(1, j.id).Bind(2, j.attempt).Bind(3, NowMs()).Bind(4, j.device).Run());
      // Only crashes count: attempts a graceful shutdown killed were re-queued as SHUTDOWN.
      CAKE_ASSIGN_OR_RETURN(Stmt n, conn_->db().Prepare("SELECT COUNT(*) FROM job_attempts WHERE "
                                                        "job_id = ? AND outcome = 'INTERRUPTED'"));
      n.Bind(1, j.id);
      if (!n.Step()) return n.status().ok() ? absl::InternalError("no count") : n.status();
      const int64_t crashes = n.Int(0);
      const bool retry = crashes < max_attempts;
      const std::string error =
          retry ? ""
                : absl::StrCat("interrupted by daemon crashes in ", crashes, " of ", max_attempts,
                               " allowed attempts; blocked until retried (cakectl retry ",
                               j.candidate_id, ")");
      CAKE_ASSIGN_OR_RETURN(
          Stmt up,
          conn_->db().Prepare("UPDATE jobs SET state = ?, error = ?, worker_pid = 0 WHERE id = ?"));
      CAKE_RETURN_IF_ERROR(
          up.Bind(1, retry ? "QUEUED" : "BLOCKED").Bind(2, error).Bind(3, j.id).Run());
      CAKE_RETURN_IF_ERROR(
          events_->Add(retry ? "job_requeued" : "job_blocked", j.candidate_id, j.id,
                       absl::StrCat(JobKindName(j.kind), " job ", j.id,
                                    " was running when the daemon stopped (attempt ", j.attempt,
                                    "); ", retry ? "re-queued" : error)));
      if (retry) {
        ++report.requeued;
      } else {
        ++report.blocked;
        Job blocked = j;
        blocked.state = JobState::kBlocked;
        blocked.error = error;
        report.gave_up.push_back(std::move(blocked));
      }
    }
    return absl::OkStatus();
  });
  if (!s.ok()) return s;
  CAKE_ASSIGN_OR_RETURN(int64_t queued, Count(JobState::kQueued));
  report.queued = static_cast<int>(queued);
  return report;
}

absl::StatusOr<std::optional<std::pair<std::string, int64_t>>> JobQueue::MeasureForKey(
    const std::string& idempotency_key) {
  auto lock = conn_->Lock();
  CAKE_ASSIGN_OR_RETURN(
      Stmt s, conn_->db().Prepare("SELECT candidate_id, job_id FROM measure_requests WHERE "
                                  "idempotency_key = ?"));
  s.Bind(1, idempotency_key);
  if (s.Step()) return std::make_optional(std::make_pair(s.Text(0), s.Int(1)));
  CAKE_RETURN_IF_ERROR(s.status());
  return std::optional<std::pair<std::string, int64_t>>();
}

absl::StatusOr<std::vector<JobQueue::KindStateCount>> JobQueue::CountsByKindAndState() {
  auto lock = conn_->Lock();
  CAKE_ASSIGN_OR_RETURN(
      Stmt s, conn_->db().Prepare(
                  "SELECT kind, state, COUNT(*), SUM(CASE WHEN started_ms > 0 AND finished_ms >= "
                  "started_ms THEN finished_ms - started_ms ELSE 0 END) FROM jobs GROUP BY 1, 2 "
                  "ORDER BY 1, 2"));
  std::vector<KindStateCount> out;
  while (s.Step())
    out.push_back({s.Text(0), s.Text(1), s.Int(2), static_cast<double>(s.Int(3)) / 1000.0});
  CAKE_RETURN_IF_ERROR(s.status());
  return out;
}

absl::StatusOr<int64_t> JobQueue::ActiveJob(const std::string& candidate, JobKind kind) {
  auto lock = conn_->Lock();
  CAKE_ASSIGN_OR_RETURN(
      Stmt s, conn_->db().Prepare("SELECT id FROM jobs WHERE candidate_id = ? AND kind = ? AND "
                                  "state IN (?, ?) ORDER BY id LIMIT 1"));
  s.Bind(1, candidate).Bind(2, JobKindName(kind));
  s.Bind(3, JobStateName(JobState::kQueued)).Bind(4, JobStateName(JobState::kRunning));
  if (s.Step()) return s.Int(0);
  CAKE_RETURN_IF_ERROR(s.status());
  return int64_t{0};
}

absl::Status JobQueue::InsertMeasureRequest(const std::string& idempotency_key,
                                            const std::string& candidate, int64_t job_id) {
  auto lock = conn_->Lock();
  CAKE_ASSIGN_OR_RETURN(
      Stmt s, conn_->db().Prepare("INSERT INTO measure_requests(idempotency_key, "
                                  "candidate_id, job_id, created_ms) VALUES (?, ?, ?, ?)"));
  return s.Bind(1, idempotency_key).Bind(2, candidate).Bind(3, job_id).Bind(4, NowMs()).Run();
}

absl::StatusOr<int64_t> JobQueue::Enqueue(const std::string& candidate, JobKind kind,
                                          const std::string& request) {
  int64_t id = 0;
  absl::Status st = conn_->Atomically([&]() -> absl::Status {
    CAKE_ASSIGN_OR_RETURN(
        Stmt s,
        conn_->db().Prepare("INSERT INTO jobs(candidate_id, kind, state, request, created_ms) "
                            "VALUES (?, ?, 'QUEUED', ?, ?)"));
    CAKE_RETURN_IF_ERROR(s.Bind(1, candidate)
                             .Bind(2, JobKindName(kind))
                             .BindBlob(3, request)
                             .Bind(4, NowMs())
                             .Run());
    id = conn_->db().LastInsertId();
    return events_->Add("job_queued", candidate, id,
                        absl::StrCat(JobKindName(kind), " job ", id, " queued"));
  });
  if (!st.ok()) return st;
  return id;
}

absl::StatusOr<std::vector<JobQueue::QueuedJob>> JobQueue::Queued() {
  auto lock = conn_->Lock();
  CAKE_ASSIGN_OR_RETURN(
      Stmt s,
      conn_->db().Prepare("SELECT j.id, j.kind, j.candidate_id, coalesce(c.contract_id, '') FROM "
                          "jobs j LEFT JOIN candidates c ON c.id = j.candidate_id WHERE j.state = "
                          "'QUEUED' AND j.not_before_ms <= ? ORDER BY j.id"));
  s.Bind(1, NowMs());
  std::vector<QueuedJob> out;
  while (s.Step()) out.push_back({s.Int(0), ParseJobKind(s.Text(1)), s.Text(2), s.Text(3)});
  CAKE_RETURN_IF_ERROR(s.status());
  return out;
}

absl::StatusOr<int64_t> JobQueue::Count(JobState state) {
  auto lock = conn_->Lock();
  CAKE_ASSIGN_OR_RETURN(Stmt s, conn_->db().Prepare("SELECT COUNT(*) FROM jobs WHERE state = ?"));
  s.Bind(1, JobStateName(state));
  if (!s.Step()) return s.status();
  return s.Int(0);
}

absl::StatusOr<Job> JobQueue::Get(int64_t id) {
  auto lock = conn_->Lock();
  CAKE_ASSIGN_OR_RETURN(
      Stmt s, conn_->db().Prepare(absl::StrCat("SELECT ", kJobColumns, " FROM jobs WHERE id = ?")));
  s.Bind(1, id);
  if (!s.Step()) {
    CAKE_RETURN_IF_ERROR(s.status());
    return absl::NotFoundError(absl::StrCat("no job ", id));
  }
  return ReadJob(s);
}

absl::Status JobQueue::MarkRunning(int64_t id, int64_t pid, const std::string& device) {
  return conn_->Atomically([&]() -> absl::Status {
    CAKE_ASSIGN_OR_RETURN(
        Stmt s,
        conn_->db().Prepare("UPDATE jobs SET state = 'RUNNING', attempt = "
                            "attempt + 1, boot_id = ?, started_ms = ?, "
                            "worker_pid = ?, device = ? WHERE id = ? AND state = 'QUEUED'"));
    CAKE_RETURN_IF_ERROR(
        s.Bind(1, boot_id_).Bind(2, NowMs()).Bind(3, pid).Bind(4, device).Bind(5, id).Run());
    if (conn_->db().Changes() == 0) return absl::FailedPreconditionError("job is not queued");
    return absl::OkStatus();
  });
}

absl::Status JobQueue::SetPid(int64_t id, int64_t pid) {
  auto lock = conn_->Lock();
  CAKE_ASSIGN_OR_RETURN(Stmt s, conn_->db().Prepare("UPDATE jobs SET worker_pid = ? WHERE id = ?"));
  return s.Bind(1, pid).Bind(2, id).Run();
}

absl::Status JobQueue::RequeueAfterShutdown(int64_t id) {
  return conn_->Atomically([&]() -> absl::Status {
    CAKE_ASSIGN_OR_RETURN(Job j, Get(id));
    if (j.state != JobState::kRunning) return absl::OkStatus();
    CAKE_ASSIGN_OR_RETURN(
        Stmt rec,
        conn_->db().Prepare("INSERT OR IGNORE INTO job_attempts(job_id, attempt, outcome, "
                            "error, finished_ms, device) VALUES (?, ?, 'SHUTDOWN', "
                            "'killed by a graceful daemon stop', ?, ?)"));
    CAKE_RETURN_IF_ERROR(
        rec.Bind(1, id).Bind(2, j.attempt).Bind(3, NowMs()).Bind(4, j.device).Run());
    CAKE_ASSIGN_OR_RETURN(
        Stmt up,
        conn_->db().Prepare("UPDATE jobs SET state = 'QUEUED', worker_pid = 0 WHERE id = ?"));
    CAKE_RETURN_IF_ERROR(up.Bind(1, id).Run());
    return events_->Add(
        "job_requeued", j.candidate_id, id,
        absl::StrCat(JobKindName(j.kind), " job ", id,
                     " stopped by the daemon's shutdown (attempt ", j.attempt, "); re-queued"));
  });
}

absl::Status JobQueue::Finish(int64_t id, bool ok, const std::string& error) {
  return conn_->Atomically([&]() -> absl::Status {
    CAKE_ASSIGN_OR_RETURN(Job j, Get(id));
    // A job ends once: finishing an already finished one (recovery gave up on it) records
    // nothing more.
    if (j.state == JobState::kDone || j.state == JobState::kFailed) return absl::OkStatus();
    CAKE_ASSIGN_OR_RETURN(
        Stmt rec, conn_->db().Prepare(
                      "INSERT INTO job_attempts(job_id, attempt, outcome, error, finished_ms, "
                      "device) VALUES (?, ?, ?, ?, ?, ?)"));
    CAKE_RETURN_IF_ERROR(rec.Bind(1, id)
                             .Bind(2, j.attempt)
                             .Bind(3, ok ? "DONE" : "FAILED")
                             .Bind(4, error)
                             .Bind(5, NowMs())
                             .Bind(6, j.device)
                             .Run());
    CAKE_ASSIGN_OR_RETURN(
        Stmt s,
        conn_->db().Prepare("UPDATE jobs SET state = ?, error = ?, finished_ms = ? WHERE id = ?"));
    CAKE_RETURN_IF_ERROR(
        s.Bind(1, ok ? "DONE" : "FAILED").Bind(2, error).Bind(3, NowMs()).Bind(4, id).Run());
    if (!ok)
      CAKE_RETURN_IF_ERROR(
          events_->Add("job_failed", j.candidate_id, id,
                       absl::StrCat(JobKindName(j.kind), " job ", id, " failed: ", error)));
    return absl::OkStatus();
  });
}

absl::Status JobQueue::RecordMachineAttempt(const Job& j, const std::string& error) {
  CAKE_ASSIGN_OR_RETURN(
      Stmt rec, conn_->db().Prepare("INSERT OR IGNORE INTO job_attempts(job_id, attempt, outcome, "
                                    "error, finished_ms, device) VALUES (?, ?, 'INFRA', ?, ?, ?)"));
  return rec.Bind(1, j.id)
      .Bind(2, j.attempt)
      .Bind(3, error)
      .Bind(4, NowMs())
      .Bind(5, j.device)
      .Run();
}

absl::Status JobQueue::RetryLater(int64_t id, const std::string& error, int64_t not_before_ms) {
  return conn_->Atomically([&]() -> absl::Status {
    CAKE_ASSIGN_OR_RETURN(Job j, Get(id));
    if (j.state != JobState::kRunning) return absl::OkStatus();
    CAKE_RETURN_IF_ERROR(RecordMachineAttempt(j, error));
    CAKE_ASSIGN_OR_RETURN(
        Stmt up, conn_->db().Prepare("UPDATE jobs SET state = 'QUEUED', error = ?, worker_pid = "
                                     "0, infra_failures = infra_failures + 1, not_before_ms = ? "
                                     "WHERE id = ?"));
    CAKE_RETURN_IF_ERROR(up.Bind(1, error).Bind(2, not_before_ms).Bind(3, id).Run());
    return events_->Add(
        "job_retry", j.candidate_id, id,
        absl::StrCat(JobKindName(j.kind), " job ", id, " failed for the machine, not the schedule",
                     " (attempt ", j.attempt, "): ", error, "; retried in ",
                     std::max<int64_t>(0, not_before_ms - NowMs()) / 1000, " s"));
  });
}

absl::Status JobQueue::Block(int64_t id, const std::string& error) {
  return conn_->Atomically([&]() -> absl::Status {
    CAKE_ASSIGN_OR_RETURN(Job j, Get(id));
    if (j.state != JobState::kRunning) return absl::OkStatus();
    CAKE_RETURN_IF_ERROR(RecordMachineAttempt(j, error));
    CAKE_ASSIGN_OR_RETURN(
        Stmt up, conn_->db().Prepare("UPDATE jobs SET state = 'BLOCKED', error = ?, worker_pid = "
                                     "0, infra_failures = infra_failures + 1 WHERE id = ?"));
    CAKE_RETURN_IF_ERROR(up.Bind(1, error).Bind(2, id).Run());
    return events_->Add(
        "job_blocked", j.candidate_id, id,
        absl::StrCat(JobKindName(j.kind), " job ", id, " blocked: the machine failed it ",
                     j.infra_failures + 1, " times (", error, "); cakectl retry ", j.candidate_id,
                     " re-queues it"));
  });
}

absl::StatusOr<int> JobQueue::Unblock(const std::string& candidate) {
  int n = 0;
  absl::Status st = conn_->Atomically([&]() -> absl::Status {
    CAKE_ASSIGN_OR_RETURN(
        Stmt s, conn_->db().Prepare("UPDATE jobs SET state = 'QUEUED', infra_failures = 0, "
                                    "not_before_ms = 0 WHERE state = 'BLOCKED' AND "
                                    "(? = '' OR candidate_id = ?)"));
    CAKE_RETURN_IF_ERROR(s.Bind(1, candidate).Bind(2, candidate).Run());
    n = conn_->db().Changes();
    if (n == 0) return absl::OkStatus();
    return events_->Add(
        "job_requeued", candidate, 0,
        absl::StrCat(n, " blocked job(s) re-queued", candidate.empty() ? "" : " of ", candidate));
  });
  if (!st.ok()) return st;
  return n;
}

absl::StatusOr<std::vector<Job>> JobQueue::Blocked() {
  auto lock = conn_->Lock();
  CAKE_ASSIGN_OR_RETURN(
      Stmt s, conn_->db().Prepare(absl::StrCat("SELECT ", kJobColumns,
                                               " FROM jobs WHERE state = 'BLOCKED' ORDER BY id")));
  std::vector<Job> out;
  while (s.Step()) out.push_back(ReadJob(s));
  CAKE_RETURN_IF_ERROR(s.status());
  return out;
}

absl::StatusOr<std::vector<Job>> JobQueue::RecentFailed(int limit) {
  auto lock = conn_->Lock();
  CAKE_ASSIGN_OR_RETURN(Stmt s, conn_->db().Prepare(absl::StrCat(
                                    "SELECT ", kJobColumns,
                                    " FROM jobs WHERE state = 'FAILED' ORDER BY id DESC LIMIT ?")));
  s.Bind(1, limit);
  std::vector<Job> out;
  while (s.Step()) out.push_back(ReadJob(s));
  CAKE_RETURN_IF_ERROR(s.status());
  return out;
}

}  // namespace cake::ledger
