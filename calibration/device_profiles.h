// Measured ceilings of the devices this project has timed on, for reports (roofline roofs), and
// the vendor facts of the SM12x devices it compiles for but has not measured.
// Only measured numbers live here, each with where it came from; a device without a profile has
// no ceiling, and a report says so instead of drawing one. Pure; thread-safe.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace cake::calibration {

struct DeviceCeilings {
  std::string device;     // as the driver names it, e.g. "NVIDIA H200"
  double mma_tflops = 0;  // dense BF16 warp-MMA (mma.sync) issue ceiling
  double dram_tbps = 0;   // device-to-device copy bandwidth (read + write bytes)
  std::string source;     // how and when it was measured
};

// The profile whose device name equals `device` exactly, or nullopt.
std::optional<DeviceCeilings> CeilingsFor(const std::string& device);

// Vendor facts of the consumer Blackwell devices this project compiles for and has not measured:
// the limits the cost model's occupancy and wave terms read (SMs, per-SM registers, shared memory
// and threads) and roofline context (boost clock, DRAM bandwidth, L2), each from the cited
// source, 0 where the source states none. They are never rates: the model's rates come only
// from rows measured on the device itself, so every profile here is uncalibrated and a search
// on it reports missing calibration rather than borrow another device's.
struct VendorSpec {
  std::string device;  // as the driver names it
  std::string arch;    // "sm_120" or "sm_121"
  int sm_count = 0;
  int boost_clock_mhz = 0;
  double dram_gbytes_per_s = 0;
  int64_t l2_bytes = 0;
  int64_t shared_per_sm = 0, shared_per_block_optin = 0;
  int registers_per_sm = 0, threads_per_sm = 0;
  bool calibrated = false;  // no measured row: always false here
  std::string source;
};

// Every vendor profile, and the one whose device name equals `device` exactly.
const std::vector<VendorSpec>& VendorSpecs();
std::optional<VendorSpec> VendorSpecFor(const std::string& device);

}  // namespace cake::calibration
