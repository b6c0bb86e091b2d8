#include "lanes.h"

#include "absl/strings/str_cat.h"
#include "nvml.h"

namespace cake::gpuqueue {
namespace {

class NvmlForeignProcesses : public ForeignProcesses {
 public:
  explicit NvmlForeignProcesses(absl::StatusOr<std::unique_ptr<Nvml>> nvml)
      : nvml_(std::move(nvml)) {}
  absl::StatusOr<size_t> Count(const Device& device) override {
    if (!nvml_.ok()) return nvml_.status();
    unsigned index = static_cast<unsigned>(device.ordinal);
    if (!device.uuid.empty()) {
      auto i = (*nvml_)->IndexOf(device.uuid);
      if (!i.ok()) return i.status();
      index = *i;
    }
    auto procs = (*nvml_)->ComputeProcesses(index);
    if (!procs.ok()) return procs.status();
    return procs->size();
  }

 private:
  absl::StatusOr<std::unique_ptr<Nvml>> nvml_;
};

}  // namespace

std::unique_ptr<ForeignProcesses> ForeignProcesses::FromNvml() {
  return std::make_unique<NvmlForeignProcesses>(Nvml::Load());
}

Lanes::Lanes(LaneWork* work, std::vector<Device> devices, std::unique_ptr<ForeignProcesses> foreign,
             LaneOptions options)
    : work_(work),
      devices_(std::move(devices)),
      foreign_(std::move(foreign)),
      options_(options),
      states_(devices_.size(), "idle"),
      busy_seconds_(devices_.size(), 0.0),
      running_since_(devices_.size()),
      jobs_run_(devices_.size(), 0) {}

Lanes::~Lanes() {
  RequestStop();
  Join();
}

void Lanes::Start() {
  stopping_ = false;
  for (int i = 0; i < options_.cpu_lanes; ++i) threads_.emplace_back([this] { CpuLane(); });
  for (size_t d = 0; d < devices_.size(); ++d) threads_.emplace_back([this, d] { DeviceLane(d); });
}

void Lanes::RequestStop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
}

void Lanes::Join() {
  for (std::thread& t : threads_)
    if (t.joinable()) t.join();
  threads_.clear();
}

void Lanes::Wake() { cv_.notify_all(); }

std::vector<Lanes::DeviceState> Lanes::States() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<DeviceState> out;
  const auto now = std::chrono::steady_clock::now();
  for (size_t d = 0; d < devices_.size(); ++d) {
    double busy = busy_seconds_[d];
    if (running_since_[d]) busy += std::chrono::duration<double>(now - *running_since_[d]).count();
    out.push_back(
        {devices_[d].name, devices_[d].sm_count, states_[d], devices_[d].uuid, busy, jobs_run_[d]});
  }
  return out;
}

void Lanes::SetState(size_t device, std::string state) {
  std::lock_guard<std::mutex> lock(mu_);
  states_[device] = std::move(state);
}

void Lanes::Pause(std::chrono::milliseconds d) {
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait_for(lock, d, [this] { return stopping_.load(); });
}

int64_t Lanes::Claim(const Device* device) {
  std::unique_lock<std::mutex> lock(mu_);
  if (stopping_) return 0;
  // Read under the lock: a job another lane just released is not read back as queued.
  for (int64_t id : work_->Queued(device))
    if (claimed_.insert(id).second) return id;
  cv_.wait_for(lock, options_.idle_poll);
  return 0;
}

void Lanes::Release(int64_t job) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    claimed_.erase(job);
  }
  cv_.notify_all();
}

void Lanes::CpuLane() {
  while (!stopping_) {
    const int64_t job = Claim(nullptr);
    if (job == 0) continue;
    work_->Run(job, nullptr);
    Release(job);
  }
}

size_t Lanes::ForeignCount(size_t d) {
  if (!foreign_) return 0;
  auto n = foreign_->Count(devices_[d]);
  return n.ok() ? *n : 0;  // a count that cannot be read does not hold the device back
}

bool Lanes::WaitForForeign(size_t d) {
  bool told = false;
  while (!stopping_) {
    const size_t n = ForeignCount(d);
    if (n == 0) return true;
    if (!told) work_->OnForeignWait(devices_[d], n);
    told = true;
    SetState(d, absl::StrCat("waiting for ", n, " foreign process(es)"));
    Pause(options_.foreign_poll);
  }
  return false;
}

void Lanes::DeviceLane(size_t d) {
  const Device& device = devices_[d];
  // The device answers a probe in a worker that sees only it before the lane's first job (the
  // boot's probe saw every device at once) and after a job that faulted.
  bool must_probe = true;
  int64_t probe_after = 0;  // the job that faulted; 0 before the first job
  while (!stopping_) {
    if (must_probe) {
      SetState(d, "probing");
      const std::string why = work_->Probe(device, probe_after);
      if (why.empty()) {
        must_probe = false;
        SetState(d, "idle");
      } else {
        SetState(d, absl::StrCat("not answering: ", why));
        Pause(options_.reprobe);
      }
      continue;
    }
    const int64_t job = Claim(&device);
    if (job == 0) continue;
    // A device others compute on takes no job: the job goes back for another lane while this
    // one waits.
    if (ForeignCount(d) > 0) {
      Release(job);
      if (!WaitForForeign(d)) return;
      SetState(d, "idle");
      continue;
    }
    SetState(d, "busy");
    {
      std::lock_guard<std::mutex> lock(mu_);
      running_since_[d] = std::chrono::steady_clock::now();
      ++jobs_run_[d];
    }
    const bool fault = work_->Run(job, &device);
    {
      std::lock_guard<std::mutex> lock(mu_);
      busy_seconds_[d] +=
          std::chrono::duration<double>(std::chrono::steady_clock::now() - *running_since_[d])
              .count();
      running_since_[d].reset();
    }
    SetState(d, "idle");
    Release(job);
    if (fault) {
      must_probe = true;
      probe_after = job;
    }
  }
}

}  // namespace cake::gpuqueue
