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

const std::vector<VendorSpec>& VendorSpecs() {
  // Compute capability 12.x limits (CUDA C++ Programming Guide, "Technical Specifications per
  // Compute Capability"): 64 Ki 32-bit registers, 100 KB of shared memory and 1,536 resident
  // threads per SM, 99 KB (101,376 B) of dynamic shared memory per block by opt-in (the last
  // also the limit ptxas and this project's target table apply to sm_120a/sm_121a/sm_120f).
  constexpr int64_t kSharedPerSm = 102400, kSharedPerBlock = 101376;
  static const std::vector<VendorSpec> specs = {
      {"NVIDIA GeForce RTX 5090", "sm_120", 170, 2407, 1792, int64_t{96} << 20, kSharedPerSm,
       kSharedPerBlock, 65536, 1536, false,
       "NVIDIA GeForce RTX 5090 specifications (21,760 CUDA cores = 170 SMs of 128, boost "
       "2.41 GHz, 32 GB GDDR7 at 1,792 GB/s); L2 96 MB: NVIDIA RTX Blackwell GPU architecture "
       "whitepaper"},
      {"NVIDIA RTX PRO 6000 Blackwell Workstation Edition", "sm_120", 188, 2617, 1792,
       int64_t{128} << 20, kSharedPerSm, kSharedPerBlock, 65536, 1536, false,
       "NVIDIA RTX PRO 6000 Blackwell Workstation Edition datasheet (24,064 CUDA cores = 188 "
       "SMs, 96 GB GDDR7 with ECC at 1,792 GB/s, boost 2.617 GHz; L2 128 MB)"},
      {"NVIDIA GB10", "sm_121", 48, 0, 273, 0, kSharedPerSm, kSharedPerBlock, 65536, 1536, false,
       "NVIDIA DGX Spark datasheet (GB10: 6,144 CUDA cores = 48 SMs, 128 GB LPDDR5x unified "
       "memory at 273 GB/s); boost clock and L2 not stated there"},
  };
  return specs;
}

std::optional<VendorSpec> VendorSpecFor(const std::string& device) {
  for (const VendorSpec& s : VendorSpecs())
    if (s.device == device) return s;
  return std::nullopt;
}

}  // namespace cake::calibration
