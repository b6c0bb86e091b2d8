// The CUDA Driver API, loaded at run time with dlopen so that every binary starts (and says so)
// on a machine without a GPU driver. Functions are resolved through cuGetProcAddress at a fixed
// API version. One instance per process; the function table is immutable after Load, so calls
// may be made from any thread (the driver's own rules apply).
#pragma once

#include <cuda.h>

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
  decltype(&::cuDeviceGetAttribute) DeviceGetAttribute = nullptr;
  decltype(&::cuDeviceTotalMem) DeviceTotalMem = nullptr;
  decltype(&::cuDevicePrimaryCtxRetain) PrimaryCtxRetain = nullptr;
  decltype(&::cuDevicePrimaryCtxRelease) PrimaryCtxRelease = nullptr;
  decltype(&::cuCtxSetCurrent) CtxSetCurrent = nullptr;
  decltype(&::cuCtxSynchronize) CtxSynchronize = nullptr;
  decltype(&::cuModuleLoadData) ModuleLoadData = nullptr;
  decltype(&::cuModuleUnload) ModuleUnload = nullptr;
  decltype(&::cuModuleGetFunction) ModuleGetFunction = nullptr;
  decltype(&::cuFuncSetAttribute) FuncSetAttribute = nullptr;
  decltype(&::cuFuncGetAttribute) FuncGetAttribute = nullptr;
  decltype(&::cuLaunchKernel) LaunchKernel = nullptr;
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
  decltype(&::cuEventSynchronize) EventSynchronize = nullptr;
  decltype(&::cuEventElapsedTime) EventElapsedTime = nullptr;

  void* handle = nullptr;
  int driver_version = 0;
};

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
