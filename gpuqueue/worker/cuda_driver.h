// The CUDA Driver API, loaded at run time with dlopen so that every binary starts (and says so)
// on a machine without a GPU driver. Functions are resolved through cuGetProcAddress at a fixed
// API version. One instance per process; the function table is immutable after Load, so calls
// may be made from any thread (the driver's own rules apply).
#pragma once

#include <cuda.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <string>

#include "absl/status/statusor.h"

namespace cake::gpuqueue {

struct CudaDriver {
  // Loads libcuda.so.1 (or $CAKE_LIBCUDA) and calls cuInit(0). Unavailable with the reason when
  // there is no driver or no device.
  static absl::StatusOr<std::unique_ptr<CudaDriver>> Load();

  // "cuMemAlloc failed: CUDA_ERROR_OUT_OF_MEMORY (out of memory)" or Ok.
  absl::Status Check(CUresult r, const char* what) const;

  decltype(&::cuInit) Init = nullptr;
  decltype(&::cuGetErrorName) GetErrorName = nullptr;
  decltype(&::cuGetErrorString) GetErrorString = nullptr;
  decltype(&::cuDriverGetVersion) DriverGetVersion = nullptr;
  decltype(&::cuDeviceGetCount) DeviceGetCount = nullptr;
  decltype(&::cuDeviceGet) DeviceGet = nullptr;
  decltype(&::cuDeviceGetName) DeviceGetName = nullptr;
  decltype(&::cuDeviceGetUuid) DeviceGetUuid = nullptr;
  decltype(&::cuDeviceGetAttribute) DeviceGetAttribute = nullptr;
  decltype(&::cuDeviceTotalMem) DeviceTotalMem = nullptr;
  decltype(&::cuDevicePrimaryCtxRetain) PrimaryCtxRetain = nullptr;
  decltype(&::cuDevicePrimaryCtxRelease) PrimaryCtxRelease = nullptr;
  decltype(&::cuCtxSetCurrent) CtxSetCurrent = nullptr;
  decltype(&::cuCtxSynchronize) CtxSynchronize = nullptr;
  decltype(&::cuCtxGetDevice) CtxGetDevice = nullptr;
  decltype(&::cuModuleLoadData) ModuleLoadData = nullptr;
  decltype(&::cuModuleUnload) ModuleUnload = nullptr;
  decltype(&::cuModuleGetFunction) ModuleGetFunction = nullptr;
  decltype(&::cuFuncSetAttribute) FuncSetAttribute = nullptr;
  decltype(&::cuFuncGetAttribute) FuncGetAttribute = nullptr;
  decltype(&::cuOccupancyMaxActiveBlocksPerMultiprocessor)
      OccupancyMaxActiveBlocksPerMultiprocessor = nullptr;
  decltype(&::cuLaunchKernel) LaunchKernel = nullptr;
  decltype(&::cuTensorMapEncodeTiled) TensorMapEncodeTiled = nullptr;
  decltype(&::cuMemAlloc) MemAlloc = nullptr;
  decltype(&::cuMemFree) MemFree = nullptr;
  decltype(&::cuMemcpyHtoD) MemcpyHtoD = nullptr;
  decltype(&::cuMemcpyDtoH) MemcpyDtoH = nullptr;
  decltype(&::cuMemcpyDtoD) MemcpyDtoD = nullptr;
  decltype(&::cuMemsetD8) MemsetD8 = nullptr;
  decltype(&::cuMemsetD32) MemsetD32 = nullptr;
  decltype(&::cuStreamCreate) StreamCreate = nullptr;
  decltype(&::cuStreamDestroy) StreamDestroy = nullptr;
  decltype(&::cuStreamSynchronize) StreamSynchronize = nullptr;
  decltype(&::cuEventCreate) EventCreate = nullptr;
  decltype(&::cuEventDestroy) EventDestroy = nullptr;
  decltype(&::cuEventRecord) EventRecord = nullptr;
  decltype(&::cuEventRecordWithFlags) EventRecordWithFlags = nullptr;
  decltype(&::cuEventSynchronize) EventSynchronize = nullptr;
  decltype(&::cuEventElapsedTime) EventElapsedTime = nullptr;
  decltype(&::cuEventQuery) EventQuery = nullptr;
  decltype(&::cuStreamQuery) StreamQuery = nullptr;
  decltype(&::cuMemsetD32Async) MemsetD32Async = nullptr;
  decltype(&::cuMemcpyDtoHAsync) MemcpyDtoHAsync = nullptr;
  decltype(&::cuMemGetInfo) MemGetInfo = nullptr;
  decltype(&::cuMemHostAlloc) MemHostAlloc = nullptr;
  decltype(&::cuMemFreeHost) MemFreeHost = nullptr;
  decltype(&::cuMemHostGetDevicePointer) MemHostGetDevicePointer = nullptr;
  decltype(&::cuStreamBeginCapture) StreamBeginCapture = nullptr;
  decltype(&::cuStreamEndCapture) StreamEndCapture = nullptr;
  decltype(&::cuGraphInstantiateWithFlags) GraphInstantiateWithFlags = nullptr;
  decltype(&::cuGraphLaunch) GraphLaunch = nullptr;
  decltype(&::cuGraphExecDestroy) GraphExecDestroy = nullptr;
  decltype(&::cuGraphDestroy) GraphDestroy = nullptr;

  void* handle = nullptr;
  int driver_version = 0;

  // Set after a hang or a sticky error: the context can no longer be trusted or torn down
  // safely (a free may wait on a kernel that never ends), so owners stop releasing into it and
  // the process exits as soon as its reply is written.
  mutable std::atomic<bool> context_lost{false};
  void MarkContextLost() const { context_lost = true; }

  // Waits for `stream` to drain, polling, at most `deadline`. DeadlineExceeded when it did not
  // (a hang: the context is marked lost); the CUDA error when the work failed (a sticky error
  // marks it lost too).
  absl::Status WaitStream(CUstream stream, std::chrono::milliseconds deadline,
                          const char* what) const;
};

// True for errors after which the context is unusable (CUDA's "sticky" launch errors).
bool IsStickyError(CUresult r);

// A device's primary context made current for the calling thread; released on destruction.
class ScopedContext {
 public:
  static absl::StatusOr<std::unique_ptr<ScopedContext>> Open(const CudaDriver& d, int ordinal);
  ~ScopedContext();
  CUdevice device() const { return device_; }
  std::string name() const { return name_; }
  int compute_major() const { return major_; }
  int compute_minor() const { return minor_; }

 private:
  ScopedContext(const CudaDriver& d) : d_(d) {}
  const CudaDriver& d_;
  CUdevice device_ = 0;
  CUcontext ctx_ = nullptr;
  std::string name_;
  int major_ = 0, minor_ = 0;
};

}  // namespace cake::gpuqueue
