// The orchestrator's side of machine failures (server/machine_failures.h): a job the machine
// failed is retried after a delay or BLOCKED, its candidate only noted; Retry re-queues what was
// blocked; Tick records job ends the ledger could not take when they happened (a full disk).
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "base/status_macros.h"
#include "base/text.h"
#include "orchestrator.h"
#include "spdlog/spdlog.h"

namespace cake::server {

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
  CAKE_ASSIGN_OR_RETURN(int n, ledger_->jobs().Unblock(candidate));
  if (n > 0) {
    CAKE_RETURN_IF_ERROR(
        Advance(candidate, Step::kNote, absl::StrCat(n, " blocked job(s) re-queued by a retry")));
    if (lanes_) lanes_->Wake();
  }
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
