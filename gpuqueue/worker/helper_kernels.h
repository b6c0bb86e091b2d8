// Host side of the trusted helper kernels (helper_kernels.cu, embedded as a fatbin at build time):
// fresh inputs, output fingerprints, input checksums and the stream-holding kernel. They never
// come from a schedule. All calls are asynchronous on the given stream. Not thread-safe; one per
// worker process.
#pragma once

#include <cuda.h>

#include <cstdint>
#include <memory>

#include "absl/status/statusor.h"
#include "cuda_driver.h"

namespace cake::gpuqueue {

// Projections per fingerprint (independent +-1 sign pairs); the kernels support at most 4.
inline constexpr int kFingerprintProjections = 4;

class HelperKernels {
 public:
  static absl::StatusOr<std::unique_ptr<HelperKernels>> Load(const CudaDriver& d);
  ~HelperKernels();

  // out[i] = BF16 of U[-1, 1) from hash(seed, i) (workloads::UniformBf16At on the host).
  absl::Status FillUniformBf16(CUstream s, CUdeviceptr out, uint64_t count, uint64_t seed) const;
  // proj[p * cols + c] += sum_r u_p(r) x[r, c]; colsq[c] += sum_r x[r, c]^2 (caller zeroes both).
  absl::Status ProjectRows(CUstream s, CUdeviceptr x, int rows, int cols, uint64_t seed,
                           CUdeviceptr proj, CUdeviceptr colsq) const;
  // out[p] = xa_p . xb_p for p < projections, out[projections] = colsq_a . colsq_b.
  absl::Status FingerprintDot(CUstream s, CUdeviceptr xa, CUdeviceptr xb, CUdeviceptr colsq_a,
                              CUdeviceptr colsq_b, int k, CUdeviceptr out) const;
  // out[p] += u_p^T C v_p; nonfinite += NaN/Inf count (caller zeroes both).
  absl::Status ProjectOutput(CUstream s, CUdeviceptr c, int m, int n, bool bf16, uint64_t seed_u,
                             uint64_t seed_v, CUdeviceptr out, CUdeviceptr nonfinite) const;
  // *out += order-independent checksum of `bytes` (a multiple of 4) at p (caller zeroes *out).
  absl::Status Checksum(CUstream s, CUdeviceptr p, uint64_t bytes, CUdeviceptr out) const;
  // Spins until *release != 0 (host-mapped), or sets *timed_out after timeout_ns.
  absl::Status BlockStream(CUstream s, CUdeviceptr release, CUdeviceptr timed_out,
                           uint64_t timeout_ns) const;

 private:
  explicit HelperKernels(const CudaDriver& d) : d_(d) {}
  absl::Status Launch(CUfunction f, unsigned grid_x, unsigned grid_y, unsigned block, CUstream s,
                      void** args) const;
  const CudaDriver& d_;
  CUmodule module_ = nullptr;
  CUfunction fill_ = nullptr, project_rows_ = nullptr, dot_ = nullptr, project_output_ = nullptr,
             checksum_ = nullptr, block_ = nullptr;
  int sm_count_ = 1;
};

}  // namespace cake::gpuqueue
