// Loads a compiled warp-GEMM cubin (from its lowering receipt) and launches it with the ABI the
// receipt records: (A, B, C, M, N, K), grid (ceil(N/tile_n), ceil(M/tile_m)). Device buffers are
// owned by DeviceBuffer. Not thread-safe; one per worker.
#pragma once

#include <cuda.h>

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "cake/report.pb.h"
#include "cuda_driver.h"

namespace cake::gpuqueue {

class DeviceBuffer {
 public:
  static absl::StatusOr<DeviceBuffer> Allocate(const CudaDriver& d, size_t bytes);
  DeviceBuffer(DeviceBuffer&& o) noexcept : d_(o.d_), ptr_(o.ptr_), bytes_(o.bytes_) { o.ptr_ = 0; }
  DeviceBuffer& operator=(DeviceBuffer&&) = delete;
  ~DeviceBuffer();
  CUdeviceptr ptr() const { return ptr_; }
  size_t bytes() const { return bytes_; }
  absl::Status Upload(const void* host, size_t bytes) const;
  absl::Status Download(void* host, size_t bytes) const;
  absl::Status Fill32(uint32_t pattern) const;  // bytes_ must be a multiple of 4
  absl::Status UploadRange(const void* host, size_t offset, size_t bytes) const;
  absl::Status DownloadRange(void* host, size_t offset, size_t bytes) const;

 private:
  DeviceBuffer(const CudaDriver* d, CUdeviceptr p, size_t b) : d_(d), ptr_(p), bytes_(b) {}
  const CudaDriver* d_;
  CUdeviceptr ptr_;
  size_t bytes_;
};

class GemmKernel {
 public:
  static absl::StatusOr<std::unique_ptr<GemmKernel>> Load(const CudaDriver& d,
                                                          const std::string& cubin,
                                                          const report::LoweringReceipt& receipt);
  ~GemmKernel();
  absl::Status Launch(CUstream stream, CUdeviceptr a, CUdeviceptr b, CUdeviceptr c, int m, int n,
                      int k) const;
  const std::string& symbol() const { return symbol_; }

 private:
  explicit GemmKernel(const CudaDriver& d) : d_(d) {}
  const CudaDriver& d_;
  CUmodule module_ = nullptr;
  CUfunction fn_ = nullptr;
  int threads_ = 0, tile_m_ = 0, tile_n_ = 0;
  unsigned shared_bytes_ = 0;
  std::string symbol_;
};

}  // namespace cake::gpuqueue
