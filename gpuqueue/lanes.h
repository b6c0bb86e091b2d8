// The exclusive queue's lanes. CPU lanes run CPU jobs (compiles) in parallel. Each execution
// device has one lane that runs that device's jobs one at a time: before a job it waits out
// other processes computing on its device (waiting, never evicting), and before its first job
// and after a fault (a hang, a sticky CUDA error, a killed worker, a device that could not be
// opened) it probes the device in a fresh worker before taking the next job; a device that does not
// answer takes no job and is probed again until it does, while the other devices' lanes go on. What
// a job is and how it runs belongs to the caller (LaneWork).
//
// Thread-safety: all methods are thread-safe; LaneWork is called from the lane threads.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"

namespace cake::gpuqueue {

struct Device {
  int ordinal = 0;   // the CUDA ordinal the probe saw
  std::string name;  // "0: NVIDIA H200 (9.0)"
  std::string uuid;  // "GPU-..."; CUDA_VISIBLE_DEVICES and NVML both take it ("" if unknown)
  int sm_count = 0;  // streaming multiprocessors (0 = not read)
  int cc_major = 0, cc_minor = 0;  // compute capability (0.0 = not read)
};

class LaneWork {
 public:
  virtual ~LaneWork() = default;
  // Jobs the lane of `device` (null: a CPU lane) may take, oldest first. A device lane is
  // offered only jobs its device may run (the caller's admission rule).
  virtual std::vector<int64_t> Queued(const Device* device) = 0;
  // Runs one job to its end, on `device` (null on a CPU lane). True when the device must be
  // probed before its next job.
  virtual bool Run(int64_t job, const Device* device) = 0;
  // "" when a fresh worker sees `device` answer after job `after_job` (0: before the lane's first
  // job), else why not.
  virtual std::string Probe(const Device& device, int64_t after_job) = 0;
  // A lane starts waiting for `processes` foreign compute processes on its device.
  virtual void OnForeignWait(const Device& device, size_t processes) = 0;
};

// Compute processes of others on a device.
class ForeignProcesses {
 public:
  virtual ~ForeignProcesses() = default;
  virtual absl::StatusOr<size_t> Count(const Device& device) = 0;
  // Through NVML ($CAKE_LIBNVML); without NVML every count is Unavailable and lanes do not wait.
  static std::unique_ptr<ForeignProcesses> FromNvml();
};

struct LaneOptions {
  int cpu_lanes = 2;
  std::chrono::milliseconds idle_poll{500};      // queue re-read when nothing woke a lane
  std::chrono::milliseconds foreign_poll{1000};  // foreign processes re-counted
  std::chrono::milliseconds reprobe{10000};      // a device that did not answer is probed again
};

class Lanes {
 public:
  Lanes(LaneWork* work, std::vector<Device> devices, std::unique_ptr<ForeignProcesses> foreign,
        LaneOptions options);
  ~Lanes();

  void Start();
  // Lanes take no further job and stop waiting; a running job is the caller's to end (its
  // worker killed). Join() then returns once every lane has left.
  void RequestStop();
  void Join();
  bool stopping() const { return stopping_.load(); }
  // A job was queued or ended: idle lanes look at the queue now.
  void Wake();

  struct DeviceState {
    std::string name;
    int sm_count = 0;
    std::string
        state;  // idle | busy | waiting for N foreign process(es) | probing | not answering: ...
    std::string uuid;
    double busy_seconds = 0;  // jobs run on this device since Start, ended or running
    int64_t jobs_run = 0;     // job attempts this lane started
  };
  std::vector<DeviceState> States() const;
  const std::vector<Device>& devices() const { return devices_; }

 private:
  void CpuLane();
  void DeviceLane(size_t index);
  // Claims the oldest unclaimed job queued for `device` (null: a CPU lane); 0 when none (after
  // waiting a while).
  int64_t Claim(const Device* device);
  void Release(int64_t job);
  void SetState(size_t device, std::string state);
  // Foreign compute processes on device `d` now; 0 when they cannot be counted.
  size_t ForeignCount(size_t d);
  // Waits while the device has foreign processes; false when stopping.
  bool WaitForForeign(size_t device);
  void Pause(std::chrono::milliseconds d);

  LaneWork* work_;
  const std::vector<Device> devices_;
  std::unique_ptr<ForeignProcesses> foreign_;
  const LaneOptions options_;
  std::atomic<bool> stopping_{false};

  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::set<int64_t> claimed_ ABSL_GUARDED_BY(mu_);
  std::vector<std::string> states_ ABSL_GUARDED_BY(mu_);
  // Per device: seconds of ended jobs, the running job's start (nullopt when idle), attempts.
  std::vector<double> busy_seconds_ ABSL_GUARDED_BY(mu_);
  std::vector<std::optional<std::chrono::steady_clock::time_point>> running_since_
      ABSL_GUARDED_BY(mu_);
  std::vector<int64_t> jobs_run_ ABSL_GUARDED_BY(mu_);
  std::vector<std::thread> threads_;
};

}  // namespace cake::gpuqueue
