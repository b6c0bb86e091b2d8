// cuBLASLt as the peer of the bench: C[M,N] = A[M,K] * B[N,K]^T (row-major BF16 in, FP32
// accumulate, BF16 out), the operation the gemm_bf16 schedules compute. libcublasLt is loaded at
// run time (dlopen: $CAKE_LIBCUBLASLT, else libcublasLt.so.13/.so.12/.so) so the bench starts, and
// says why, where it is missing. Not thread-safe; one per process.
#pragma once

#include <cuda.h>

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "gpuqueue/worker/cuda_driver.h"

namespace cake::workloads::gemm_bf16 {

class CublasLtPeer {
 public:
  // Loads the library and creates a handle with a `workspace_bytes` device workspace, in the
  // calling thread's current context (which outlives the peer, as does `driver`).
  static absl::StatusOr<std::unique_ptr<CublasLtPeer>> Load(const gpuqueue::CudaDriver& driver,
                                                            size_t workspace_bytes);
  ~CublasLtPeer();

  // Chooses cuBLASLt's first heuristic algorithm for the shape (cached per shape) and launches it
  // on `stream`. `a`, `b`, `c` are device pointers.
  absl::Status Gemm(CUstream stream, CUdeviceptr a, CUdeviceptr b, CUdeviceptr c, int m, int n,
                    int k);
  // "cuBLASLt 130100 (libcublasLt.so.13)".
  std::string Describe() const;

  struct Api;

 private:
  CublasLtPeer() = default;
  std::unique_ptr<Api> api_;
};

}  // namespace cake::workloads::gemm_bf16
