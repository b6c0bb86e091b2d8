// NVML, loaded at run time: foreign processes on a device (waited for, never evicted), and the
// SM clock, temperature and power read beside every timing sample. Absent NVML is reported, not
// fatal. Calls run on a helper thread with a timeout, so a stuck NVML cannot stall the queue or a
// measurement. Thread-safe.
#pragma once

#include <memory>
#include <set>
#include <string>

#include "absl/status/statusor.h"

namespace cake::gpuqueue {

class Nvml {
 public:
  // Unavailable when libnvidia-ml.so.1 ($CAKE_LIBNVML) cannot be loaded or initialized.
  static absl::StatusOr<std::unique_ptr<Nvml>> Load();
  ~Nvml();
  // NVML's index of the device with this UUID ("GPU-..."): CUDA_VISIBLE_DEVICES renumbers CUDA's
  // devices, never NVML's, so a worker confined to one device finds it here.
  absl::StatusOr<unsigned> IndexOf(const std::string& uuid) const;
  // PIDs of compute processes on device `index`.
  absl::StatusOr<std::set<unsigned>> ComputeProcesses(unsigned index) const;

  // Readings right now; a value NVML cannot give is NaN.
  struct Reading {
    float sm_mhz, temperature_c, power_w;
  };
  Reading Read(unsigned index) const;
  // The clock the throttle filter compares with: the default applications SM clock, else the
  // maximum SM clock. Unavailable when NVML gives neither.
  absl::StatusOr<float> DefaultSmMhz(unsigned index) const;

 private:
  Nvml() = default;
  void* handle_ = nullptr;
  void* get_handle_ = nullptr;
  void* get_procs_ = nullptr;
  void* by_uuid_ = nullptr;
  void* get_index_ = nullptr;
  void* shutdown_ = nullptr;
  void* clock_info_ = nullptr;
  void* default_clock_ = nullptr;
  void* max_clock_ = nullptr;
  void* temperature_ = nullptr;
  void* power_ = nullptr;
};

}  // namespace cake::gpuqueue
