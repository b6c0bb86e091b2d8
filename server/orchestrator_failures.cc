// How the orchestrator records a job that failed. The schedule's fault settles the candidate as
// the job kind says (OnJobFailed). The machine's (server/machine_failures.h) is retried after a
// delay or BLOCKED, the candidate only noted (OnMachineFailure). Retry re-queues what was
// blocked. Tick records job ends the ledger could not take when they happened (a full disk).
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "base/status_macros.h"
#include "base/text.h"
#include "orchestrator.h"
#include "spdlog/spdlog.h"

namespace cake::server {

using ledger::JobKind;

absl::Status Orchestrator::OnJobFailed(const ledger::Job& job, const std::string& reason,
                                       worker::FailureClass failure_class) {
  if (failure_class == worker::INFRASTRUCTURE) return OnMachineFailure(job, reason);
  return ledger_->Atomically([&]() -> absl::Status {
    CAKE_RETURN_IF_ERROR(ledger_->jobs().Finish(job.id, false, reason));
    switch (job.kind) {
      case JobKind::kCompile:
        return Advance(job.candidate_id, Step::kCompileJobFailed,
                       absl::StrCat("compile job failed: ", reason));
      case JobKind::kValidate: {
        // The worker died or hung past its limit: that is a failed numerical record.
        evidence::EvidenceRecord r;
        r.set_kind(evidence::NUMERICAL_CONTRACT);
        r.set_status(evidence::FAILED);
        r.set_failure(absl::StrCat("validation worker failed: ", reason));
        r.set_summary(r.failure());
        CAKE_RETURN_IF_ERROR(ledger_->evidence().PutRecord(job.candidate_id, job.id, r));
        return Advance(job.candidate_id, Step::kEvidenceFailed,
                       absl::StrCat("validation job failed: ", reason));
      }
      case JobKind::kSanitize:
        // Missing evidence, not a defect: the candidate stays where it is, not eligible.
        return Advance(
            job.candidate_id, Step::kNote,
            absl::StrCat("sanitizer job failed (evidence missing, not eligible): ", reason));
      case JobKind::kMeasure: {
        // The run is recorded as invalid with the reason; it never enters a ranking.
        worker::Request req;
        evidence::Measurement m;
        if (req.ParseFromString(job.request)) {
          m.set_incumbent(req.measure().incumbent().candidate());
          m.set_run(req.measure().run());
        }
        m.set_candidate(job.candidate_id);
        m.set_invalid(true);
        m.set_invalid_reason(absl::StrCat("measure worker failed: ", reason));
        m.set_verdict(evidence::INVALID);
        CAKE_RETURN_IF_ERROR(ledger_->evidence().PutMeasurement(job.candidate_id, m));
        return Advance(job.candidate_id, Step::kNote,
                       absl::StrCat("measurement run invalid (no timing ranked): ", reason));
      }
      case JobKind::kRegress:  // the job's failure is the record (jobs and events)
      case JobKind::kUnknown:
        break;
    }
    return absl::OkStatus();
  });
}

absl::Status Orchestrator::OnMachineFailure(const ledger::Job& job, const std::string& reason) {
  const MachineRetry next = NextMachineRetry(machine_retry_, job.infra_failures);
  const std::string kind = ledger::JobKindName(job.kind);
  const int failures = job.infra_failures + 1;
  {
    absl::MutexLock lock(&machine_mu_);
    last_machine_failure_ = absl::StrCat(
        absl::FormatTime("%Y-%m-%dT%H:%M:%SZ", absl::Now(), absl::UTCTimeZone()), " job ", job.id,
        " (", kind, ", ", job.candidate_id, "): ", base::Utf8Prefix(reason, 400));
  }
  spdlog::warn("job {} ({}, candidate {}): the machine failed it ({} of {}): {}", job.id, kind,
               job.candidate_id, failures, machine_retry_.max_failures, reason);
  return ledger_->Atomically([&]() -> absl::Status {
    if (next.block) {
      CAKE_RETURN_IF_ERROR(ledger_->jobs().Block(job.id, reason));
      return Advance(job.candidate_id, Step::kNote,
                     absl::StrCat("waiting on the machine: its ", kind, " job failed ", failures,
                                  " times for reasons not the schedule's (", reason,
                                  "); `cakectl retry ", job.candidate_id, "` re-queues it"));
    }
    CAKE_RETURN_IF_ERROR(
        ledger_->jobs().RetryLater(job.id, reason, ledger::NowMs() + next.delay_ms));
    return Advance(job.candidate_id, Step::kNote,
                   absl::StrCat("waiting on the machine: its ", kind, " job failed (", reason,
                                "); retry ", failures, " of ", machine_retry_.max_failures - 1,
                                " in ", next.delay_ms / 1000, " s"));
  });
}

absl::StatusOr<v1::RetryReply> Orchestrator::Retry(const std::string& candidate) {
  CAKE_RETURN_IF_ERROR(ledger_->candidates().HeadOf(candidate).status());
  // The re-queue and its note are one write.
  int n = 0;
  CAKE_RETURN_IF_ERROR(ledger_->Atomically([&]() -> absl::Status {
    CAKE_ASSIGN_OR_RETURN(n, ledger_->jobs().Unblock(candidate));
    if (n == 0) return absl::OkStatus();
    return Advance(candidate, Step::kNote, absl::StrCat(n, " blocked job(s) re-queued by a retry"));
  }));
  if (n > 0 && lanes_) lanes_->Wake();
  v1::RetryReply reply;
  reply.set_requeued_jobs(n);
  return reply;
}

void Orchestrator::Tick() {
  std::vector<std::pair<ledger::Job, std::string>> pending;
  {
    absl::MutexLock lock(&machine_mu_);
    pending.swap(unsettled_);
  }
  std::vector<std::pair<ledger::Job, std::string>> still;
  for (auto& [job, why] : pending) {
    if (absl::Status s = OnMachineFailure(job, why); s.ok()) {
      spdlog::info("job {}: its failure is recorded now; it runs again", job.id);
      if (lanes_) lanes_->Wake();
    } else {
      still.emplace_back(std::move(job), std::move(why));
    }
  }
  absl::MutexLock lock(&machine_mu_);
  for (auto& p : still) unsettled_.push_back(std::move(p));
}

}  // namespace cake::server
