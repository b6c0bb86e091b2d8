// The device side of a workload, for the measurement protocol: every timed launch runs on its
// own inputs, generated on the GPU from a seed before the sample, and every launch's outputs
// are checked afterwards against an independent oracle of those inputs (a workload's
// timed-output check: projections for a GEMM, sampled points for an assignment). The workload
// supplies it from its folder (workloads/<name>/device/) and registers it here
// (CAKE_REGISTER_DEVICE_WORKLOAD); the runner (measure_runner.h) names no workload.
// Registered device workloads are immutable; a TimedSet is used by one thread.
#pragma once

#include <cuda.h>

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "cake/contract.pb.h"
#include "device_session.h"
#include "helper_kernels.h"
#include "kernel.h"

namespace cake::gpuqueue {

// One row's device state for timing: `slots` independent input/output sets.
class TimedSet {
 public:
  virtual ~TimedSet() = default;
  // Enqueued before a sample's clock runs: fresh inputs in slots [0, n) from `salt`, whatever
  // the oracle side of the check needs, and a checksum of the inputs.
  virtual absl::Status Prepare(CUstream s, uint64_t salt, int n) = 0;
  // Enqueued: the outputs of one slot poisoned (all bytes 0xFF).
  virtual absl::Status Poison(CUstream s, int slot) = 0;
  virtual const KernelArgs& Args(int slot) const = 0;
  // Enqueued after the sample: the candidate side of the check, inputs checksummed again.
  virtual absl::Status Check(CUstream s, uint64_t salt, int n) = 0;
  // After the stream finished: one verdict per launch of the sample.
  struct LaunchCheck {
    std::string failure;  // "" when the outputs match the oracle
    bool inputs_modified = false;
  };
  virtual absl::StatusOr<std::vector<LaunchCheck>> Collect(int n) = 0;
};

class DeviceWorkload {
 public:
  virtual ~DeviceWorkload() = default;
  virtual std::string operation() const = 0;
  // What the timed-output check sees, for its record ("4 random +-1 projections u^T C v").
  virtual std::string check_scope() const = 0;
  // Device bytes of one slot (inputs, outputs and the check's scratch): the memory budget.
  virtual size_t SlotBytes(const contract::ProblemShape& s, const contract::Contract& c) const = 0;
  virtual absl::StatusOr<std::unique_ptr<TimedSet>> Prepare(const Gpu& g,
                                                            const HelperKernels& helpers,
                                                            const contract::ProblemShape& s,
                                                            const contract::Contract& c,
                                                            int slots) const = 0;
};

const DeviceWorkload* FindDeviceWorkload(const std::string& operation);
bool RegisterDeviceWorkload(std::unique_ptr<DeviceWorkload> w);
#define CAKE_REGISTER_DEVICE_WORKLOAD(Type)                          \
  [[maybe_unused]] static const bool cake_device_registered_##Type = \
      ::cake::gpuqueue::RegisterDeviceWorkload(std::make_unique<Type>())

// Seeds of one slot's pieces: Mix64(salt ^ Mix64(tag << 32 | slot)).
uint64_t SlotSeed(uint64_t salt, uint64_t tag, uint64_t slot);

}  // namespace cake::gpuqueue
