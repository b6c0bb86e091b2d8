#include "device_profiles.h"

namespace cake::calibration {

std::optional<DeviceCeilings> CeilingsFor(const std::string& device) {
  // One run on an H200 (sm_90), 2026-12-02: an mma.sync BF16 issue-rate microbenchmark and a
  // large device-to-device copy. Hopper-witness ceilings; they say nothing about SM120.
  if (device == "NVIDIA H200")
    return DeviceCeilings{device, 650.0, 3.95,
                          "measured on an H200, 2026-12-02: mma.sync BF16 issue rate, "
                          "device-to-device copy"};
  return std::nullopt;
}

}  // namespace cake::calibration
