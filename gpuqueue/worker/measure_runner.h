// The measurement runner: paired timing of an incumbent and a challenger kernel on one row, in one
// configuration (mode eager|graph, cache cold|warm), the protocol that decides promotion:
//   - every timed launch gets its own input set, freshly generated on the GPU before the sample,
//     so nothing can be reused, cached or batched across calls; after the sample each launch's
//     outputs are checked against an independent oracle of its inputs and the inputs are
//     checksummed (the workload's timed-output check, device_workload.h);
//   - a blocking kernel holds the stream while a sample's launches are queued, so host launch
//     latency stays out; CUDA events around each launch; cold = L2 flushed (a write of the L2
//     size) before each launch, warm = the same launch ran just before (its output re-poisoned);
//     graph mode replays a captured graph of the same sequence;
//   - pairs A B / B A alternate, after warm-up, until the noise-based stopping criterion; the SM
//     clock (NVML) is read after every sample and pairs below the throttle fraction of the
//     default clock are kept out of the verdict (stored, flagged); CUPTI kernel spans are
//     recorded beside the event times when CUPTI is present.
// One runner per worker process; not thread-safe.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "cake/contract.pb.h"
#include "cake/evidence.pb.h"
#include "cupti_spans.h"
#include "device_session.h"
#include "device_workload.h"
#include "gpuqueue/nvml.h"
#include "helper_kernels.h"
#include "protocol/stopping.h"

namespace cake::gpuqueue {

struct Arm {
  const Kernel* kernel = nullptr;
  int extra_launches = 0;  // planted extra work, counted as zero launches (benchmark only)
};

struct MeasureOptions {
  int warmup_samples = 3;
  int min_launches = 1;  // launches per sample at least (more for short kernels)
  protocol::StoppingParams stopping;
  double throttle_fraction = 0.75;
  bool inputs_mutable = false;
  double blocker_timeout_s = 2;
  unsigned nvml_index = 0;  // NVML's index of the device timed on (VisibleDeviceNvmlIndex)
};

class MeasureRunner {
 public:
  static absl::StatusOr<std::unique_ptr<MeasureRunner>> Create(const Gpu& g,
                                                               const MeasureOptions& options,
                                                               const Nvml* nvml, CuptiSpans* cupti);
  ~MeasureRunner();

  // Pairs on one row in one configuration until the stopping rule; fills samples, clocks, spans
  // and the stop reason (the verdict is left to JudgeRow). FailedPrecondition at the first
  // timed-output failure of either arm (see output_check); any CUDA error as it comes.
  absl::StatusOr<evidence::RowTiming> TimeRow(const DeviceWorkload& workload,
                                              const contract::Contract& contract,
                                              const contract::ProblemShape& shape,
                                              const protocol::TimingConfig& config,
                                              const Arm& incumbent, const Arm& challenger,
                                              uint64_t seed);

  // Fingerprint/checksum results over every sample so far; arm 0 incumbent, 1 challenger.
  const evidence::TimedOutputCheck& output_check(int arm) const { return checks_[arm]; }
  float default_sm_mhz() const { return default_mhz_; }
  const std::string& notes() const { return notes_; }

 private:
  struct Row;
  MeasureRunner(const Gpu& g, const MeasureOptions& o) : g_(g), o_(o) {}
  absl::Status PrepareRow(Row& row, int slots) const;
  // `capturing`: events become external event-record nodes of a graph (a plain record in a
  // capturing stream is only a dependency marker and cannot be timed).
  absl::Status EnqueueTimed(Row& row, const Arm& arm, int launches, const protocol::TimingConfig& c,
                            bool capturing) const;
  struct ArmSample {
    double event_us = 0, span_us = 0, gpu_seconds = 0;
    float sm_mhz = 0;
    bool blocker_timed_out = false;
  };
  absl::StatusOr<ArmSample> RunArm(Row& row, int arm_index, const Arm& arm,
                                   const protocol::TimingConfig& c, uint64_t salt);

  const Gpu& g_;
  MeasureOptions o_;
  const Nvml* nvml_ = nullptr;
  CuptiSpans* cupti_ = nullptr;
  std::unique_ptr<HelperKernels> helpers_;
  CUstream stream_ = nullptr;
  std::optional<DeviceBuffer> flush_;  // L2-sized scratch written before cold launches
  int* flags_host_ = nullptr;          // [0] release, [1] blocker timed out (host-mapped)
  CUdeviceptr flags_dev_ = 0;
  float default_mhz_ = 0;
  std::string notes_;
  evidence::TimedOutputCheck checks_[2];
};

}  // namespace cake::gpuqueue
