// The orchestrator's read-only views: Status, the metrics snapshot, the event feed and idleness.
// Nothing here changes the ledger.
#include <set>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "job_requests.h"
#include "lane_admission.h"
#include "orchestrator.h"
#include "request_limits.h"

namespace cake::server {

absl::StatusOr<MetricsInput> Orchestrator::MetricsSnapshot() {
  MetricsInput m;
  CAKE_ASSIGN_OR_RETURN(m.status, Status());
  CAKE_ASSIGN_OR_RETURN(m.jobs, ledger_->jobs().CountsByKindAndState());
  CAKE_ASSIGN_OR_RETURN(m.promotions, ledger_->contracts().PromotionCounts());
  return m;
}

absl::StatusOr<v1::StatusReply> Orchestrator::Status() {
  v1::StatusReply s;
  s.set_version(CAKE_VERSION);
  s.set_boot_id(boot_id_);
  s.set_containment(containment_ ? containment_->Describe() : "not started");
  s.set_worker_sandbox(sandbox_note_);
  s.set_execution_device(execution_device_);
  s.set_device_note(device_note_);
  if (lanes_) {
    // The queue is read once for every lane's admitted count and the unplaced jobs.
    CAKE_ASSIGN_OR_RETURN(const std::vector<ledger::JobQueue::QueuedJob> due,
                          ledger_->jobs().Queued());
    const std::set<std::string> not_answering = NotAnswering();
    std::set<int64_t> placed;
    const std::vector<gpuqueue::Lanes::DeviceState> states = lanes_->States();
    for (size_t i = 0; i < states.size() && i < devices_.size(); ++i) {
      const gpuqueue::Lanes::DeviceState& d = states[i];
      v1::DeviceStatus* ds = s.add_devices();
      ds->set_name(d.name);
      ds->set_state(d.state);
      ds->set_sm_count(d.sm_count);
      ds->set_uuid(d.uuid);
      ds->set_busy_seconds(d.busy_seconds);
      ds->set_jobs_run(d.jobs_run);
      const std::vector<int64_t> admitted = Admitted(due, &devices_[i], not_answering);
      placed.insert(admitted.begin(), admitted.end());
      ds->set_admitted_queued_jobs(static_cast<int64_t>(admitted.size()));
      ds->set_profile(DeviceProfile(devices_[i]));
    }
    for (const ledger::JobQueue::QueuedJob& q : due)
      if (RunsOnGpu(q.kind) && !placed.count(q.id)) s.set_unplaced_jobs(s.unplaced_jobs() + 1);
  }
  CAKE_ASSIGN_OR_RETURN(int64_t queued, ledger_->jobs().Count(ledger::JobState::kQueued));
  CAKE_ASSIGN_OR_RETURN(int64_t running, ledger_->jobs().Count(ledger::JobState::kRunning));
  s.set_queued_jobs(queued);
  s.set_running_jobs(running);
  std::vector<std::string> corrupt;
  CAKE_ASSIGN_OR_RETURN(auto contracts, ledger_->contracts().List(&corrupt));
  for (const std::string& id : corrupt) s.add_corrupt_contracts(id);
  for (const auto& [id, c] : contracts) {
    v1::ContractStatus* cs = s.add_contracts();
    cs->set_contract_id(id);
    cs->set_name(c.name());
    auto device = ExecutionDeviceFor(c);
    cs->set_execution(device.ok() ? absl::StrCat(c.execution_target(), " on ", device->name)
                                  : std::string(device.status().message()));
    CAKE_ASSIGN_OR_RETURN(std::string inc, ledger_->contracts().Incumbent(id));
    cs->set_incumbent(inc);
    if (!inc.empty()) {
      CAKE_ASSIGN_OR_RETURN(evidence::Candidate ic, ledger_->candidates().Get(inc));
      cs->set_incumbent_schedule_hash(ic.schedule_hash());
    }
  }
  CAKE_ASSIGN_OR_RETURN(auto failures, ledger_->jobs().RecentFailed(5));
  for (const ledger::Job& j : failures) {
    v1::JobFailure* f = s.add_recent_failures();
    f->set_job_id(j.id);
    f->set_candidate_id(j.candidate_id);
    f->set_kind(ledger::JobKindName(j.kind));
    f->set_error(j.error);
  }
  CAKE_ASSIGN_OR_RETURN(auto blocked, ledger_->jobs().Blocked());
  for (const ledger::Job& j : blocked) {
    v1::JobFailure* f = s.add_blocked_jobs();
    f->set_job_id(j.id);
    f->set_candidate_id(j.candidate_id);
    f->set_kind(ledger::JobKindName(j.kind));
    f->set_error(j.error);
  }
  {
    absl::MutexLock lock(&machine_mu_);
    s.set_machine_failure(last_machine_failure_);
  }
  CAKE_ASSIGN_OR_RETURN(auto counts, ledger_->candidates().CountsByState());
  for (const auto& [k, v] : counts) (*s.mutable_candidates_by_state())[k] = v;
  return s;
}

absl::StatusOr<std::vector<ledger::Event>> Orchestrator::Events(int64_t after, int limit) {
  if (limit < 0 || limit > kMaxEventsPerPage)
    return absl::InvalidArgumentError(
        absl::StrCat("limit ", limit, " is out of range (0-", kMaxEventsPerPage, ")"));
  return ledger_->events().After(after, limit > 0 ? limit : 100);
}

void Orchestrator::WaitForEvent(int64_t after, std::chrono::milliseconds timeout) {
  ledger_->events().WaitAfter(after, timeout);
}

absl::StatusOr<bool> Orchestrator::Idle() {
  CAKE_ASSIGN_OR_RETURN(int64_t queued, ledger_->jobs().Count(ledger::JobState::kQueued));
  CAKE_ASSIGN_OR_RETURN(int64_t running, ledger_->jobs().Count(ledger::JobState::kRunning));
  return queued == 0 && running == 0;
}

}  // namespace cake::server
