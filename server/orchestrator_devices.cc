// The orchestrator's devices (server/orchestrator.h): which device runs or times a contract,
// what each lane is offered (server/lane_admission.h), and the probes that say whether a device
// answers.
#include <set>

#include "absl/strings/str_cat.h"
#include "compiler/targets.h"
#include "job_requests.h"
#include "lane_admission.h"
#include "orchestrator.h"
#include "spdlog/spdlog.h"

namespace cake::server {

absl::StatusOr<gpuqueue::Device> Orchestrator::ExecutionDeviceFor(
    const contract::Contract& c) const {
  if (!execution_device_) return absl::FailedPreconditionError(device_note_);
  auto target = compiler::TargetByName(c.execution_target());
  if (!target.ok()) return absl::FailedPreconditionError(target.status().message());
  if (std::optional<gpuqueue::Device> d = MeasurementDevice(**target, devices_, NotAnswering()))
    return *d;
  return absl::FailedPreconditionError(
      absl::StrCat(NoDeviceForTarget(**target, devices_),
                   "; compiled and receipted only: ", (*target)->witness));
}

std::set<std::string> Orchestrator::NotAnswering() const {
  absl::MutexLock lock(&not_answering_mu_);
  return not_answering_;
}

const compiler::TargetInfo* Orchestrator::ExecutionTargetOf(const std::string& contract_id) {
  {
    absl::MutexLock lock(&targets_mu_);
    if (auto it = target_of_contract_.find(contract_id); it != target_of_contract_.end())
      return it->second;
  }
  auto c = ledger_->contracts().Get(contract_id);
  if (!c.ok()) return nullptr;  // read again next time: the ledger may answer then
  auto target = compiler::TargetByName(c->execution_target());
  const compiler::TargetInfo* t = target.ok() ? *target : nullptr;
  absl::MutexLock lock(&targets_mu_);
  target_of_contract_[contract_id] = t;
  return t;
}

std::vector<int64_t> Orchestrator::Queued(const gpuqueue::Device* device) {
  auto queued = ledger_->jobs().Queued();
  if (!queued.ok()) {
    spdlog::error("reading the job queue failed: {}", queued.status().ToString());
    return {};
  }
  return Admitted(*queued, device, device == nullptr ? std::set<std::string>{} : NotAnswering());
}

std::vector<int64_t> Orchestrator::Admitted(const std::vector<ledger::JobQueue::QueuedJob>& queued,
                                            const gpuqueue::Device* device,
                                            const std::set<std::string>& not_answering) {
  const bool gpu = device != nullptr;
  std::vector<int64_t> ids;
  // A job of a kind this build does not know goes to a CPU lane, which fails it with the reason.
  for (const ledger::JobQueue::QueuedJob& j : queued) {
    if (RunsOnGpu(j.kind) != gpu) continue;
    // A device lane takes only what its device may run; a job no lane admits stays queued
    // (its candidate's note and status say why), never failed on the wrong card.
    if (gpu) {
      const compiler::TargetInfo* target = ExecutionTargetOf(j.contract_id);
      if (target == nullptr || !LaneAdmits(*device, j.kind, *target, devices_, not_answering))
        continue;
    }
    ids.push_back(j.id);
  }
  return ids;
}

void Orchestrator::OnForeignWait(const gpuqueue::Device& device, size_t processes) {
  const std::string msg = absl::StrCat(device.name, " is used by ", processes,
                                       " foreign process(es); waiting, never evicting");
  spdlog::warn("{}", msg);
  (void)ledger_->events().Add("device_wait", "", 0, msg);
}

absl::StatusOr<worker::Reply> Orchestrator::RunProbe(const std::string& job_id,
                                                     const gpuqueue::Device* device) {
  worker::Request probe;
  probe.set_job_id(job_id);
  probe.mutable_probe();
  return gpuqueue::RunInWorker(probe,
                               WorkerOptions(job_id, true, device, std::chrono::seconds(60)));
}

std::string Orchestrator::Probe(const gpuqueue::Device& device, int64_t after_job) {
  // Named per device: lanes probe at once as they start, each in its own job directory.
  auto reply = RunProbe(absl::StrCat("probe-d", device.ordinal, "-after-", after_job), &device);
  std::string why;
  if (!reply.ok()) {
    why = std::string(reply.status().message());
  } else if (reply->probe().device_count() == 0) {
    why = reply->probe().reason().empty() ? "the device is not visible" : reply->probe().reason();
  }
  const std::string when =
      after_job == 0 ? "as its lane starts" : absl::StrCat("after job ", after_job);
  const std::string label = device.uuid.empty() ? device.name : device.name + " " + device.uuid;
  const std::string msg = why.empty() ? absl::StrCat(label, " answers ", when)
                                      : absl::StrCat(label, " does not answer ", when, ": ", why,
                                                     "; its lane takes no job until it does");
  if (why.empty()) {
    spdlog::info("{}", msg);
  } else {
    spdlog::error("{}", msg);
  }
  {
    absl::MutexLock lock(&not_answering_mu_);
    if (why.empty()) {
      not_answering_.erase(DeviceLabel(device));
    } else {
      not_answering_.insert(DeviceLabel(device));
    }
  }
  // A probe before the lane's first job is logged only when the device does not answer.
  if (after_job == 0 && why.empty()) return why;
  auto job = ledger_->jobs().Get(after_job);
  (void)ledger_->events().Add(why.empty() ? "device_probe_ok" : "device_probe_failed",
                              job.ok() ? job->candidate_id : "", after_job, msg);
  return why;
}

}  // namespace cake::server
