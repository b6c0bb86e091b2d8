// A compiled candidate kernel as the worker runs it, launched the way its lowering receipt says
// (report.LaunchSpec: the argument list in order and the grid as formulas over scalars), with
// whatever tensors and scalars the workload binds by name. Device buffers are owned by
// DeviceBuffer. Not thread-safe; one per worker.
#pragma once

#include <cuda.h>

#include <map>
#include <memory>
#include <optional>
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

// What one launch binds, by the schedule's names.
struct KernelArgs {
  std::map<std::string, CUdeviceptr> tensors;
  std::map<std::string, int64_t> scalars;
};

// The bytes a WORKSPACE argument needs for `args` (report.LaunchSpec.Arg: per element of
// rows x cols plus per box_rows x box_cols tile), rounded up to a multiple of 4 and at least 4;
// InvalidArgument for a missing or out-of-range extent or a size beyond 2^62 bytes.
absl::StatusOr<size_t> WorkspaceBytes(const report::LaunchSpec::Arg& a, const KernelArgs& args);

class Kernel {
 public:
  // FailedPrecondition when the receipt carries no launch (compile it again).
  static absl::StatusOr<std::unique_ptr<Kernel>> Load(const CudaDriver& d, const std::string& cubin,
                                                      const report::LoweringReceipt& receipt);
  ~Kernel();
  // InvalidArgument naming a tensor or scalar the launch needs and `args` lacks.
  absl::Status Launch(CUstream stream, const KernelArgs& args) const;
  const std::string& symbol() const { return symbol_; }
  const report::LaunchSpec& launch() const { return launch_; }

 private:
  explicit Kernel(const CudaDriver& d) : d_(d) {}
  // The tensor map a TENSOR_MAP argument describes, over the bound tensor; InvalidArgument
  // naming the tensor when a binding is missing or the driver refuses the geometry.
  absl::StatusOr<CUtensorMap> EncodeTensorMap(const report::LaunchSpec::Arg& a,
                                              const KernelArgs& args) const;
  // The WORKSPACE argument's buffer: allocated (and zeroed) at its launch size when none is
  // large enough, after `stream` drains the launches that used the smaller one; the kernel
  // leaves it zeroed, so later launches reuse it as it is.
  absl::StatusOr<CUdeviceptr> Workspace(const report::LaunchSpec::Arg& a, const KernelArgs& args,
                                        CUstream stream) const;
  const CudaDriver& d_;
  mutable std::optional<DeviceBuffer> workspace_;
  CUmodule module_ = nullptr;
  CUfunction fn_ = nullptr;
  report::LaunchSpec launch_;
  std::string symbol_;
};

}  // namespace cake::gpuqueue
