// NVML, loaded at run time, to notice foreign processes on a device before a GPU job starts (they
// are waited for, never evicted). Absent NVML is reported, not fatal. Calls run on a helper
// thread with a timeout, so a stuck NVML cannot stall the queue. Thread-safe.
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
  // PIDs of compute processes on device `index`.
  absl::StatusOr<std::set<unsigned>> ComputeProcesses(unsigned index) const;

 private:
  Nvml() = default;
  void* handle_ = nullptr;
  void* get_handle_ = nullptr;
  void* get_procs_ = nullptr;
  void* shutdown_ = nullptr;
};

}  // namespace cake::gpuqueue
