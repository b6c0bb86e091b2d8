// Measured ceilings of the devices this project has timed on, for reports (roofline roofs).
// Only measured numbers live here, each with where it came from; a device without a profile has
// no ceiling, and a report says so instead of drawing one. Pure; thread-safe.
#pragma once

#include <optional>
#include <string>

namespace cake::calibration {

struct DeviceCeilings {
  std::string device;     // as the driver names it, e.g. "NVIDIA H200"
  double mma_tflops = 0;  // dense BF16 warp-MMA (mma.sync) issue ceiling
  double dram_tbps = 0;   // device-to-device copy bandwidth (read + write bytes)
  std::string source;     // how and when it was measured
};

// The profile whose device name equals `device` exactly, or nullopt.
std::optional<DeviceCeilings> CeilingsFor(const std::string& device);

}  // namespace cake::calibration
