#include "cuda_driver.h"

#include <dlfcn.h>

#include <cstdlib>
#include <thread>

#include "absl/strings/str_cat.h"

namespace cake::gpuqueue {
namespace {

// Entry points are requested at this API version (CUDA 12.0 semantics: the _v2 memory API).
constexpr int kApiVersion = 12000;

}  // namespace

absl::Status CudaDriver::Check(CUresult r, const char* what) const {
  if (r == CUDA_SUCCESS) return absl::OkStatus();
  const char* name = "?";
  const char* text = "?";
  if (GetErrorName) GetErrorName(r, &name);
  if (GetErrorString) GetErrorString(r, &text);
  return absl::InternalError(absl::StrCat(what, " failed: ", name, " (", text, ")"));
}

bool IsStickyError(CUresult r) {
  switch (r) {
    case CUDA_ERROR_ILLEGAL_ADDRESS:
    case CUDA_ERROR_LAUNCH_FAILED:
    case CUDA_ERROR_ILLEGAL_INSTRUCTION:
    case CUDA_ERROR_MISALIGNED_ADDRESS:
    case CUDA_ERROR_INVALID_ADDRESS_SPACE:
    case CUDA_ERROR_INVALID_PC:
    case CUDA_ERROR_HARDWARE_STACK_ERROR:
    case CUDA_ERROR_ASSERT:
    case CUDA_ERROR_LAUNCH_TIMEOUT:
    case CUDA_ERROR_ECC_UNCORRECTABLE:
    case CUDA_ERROR_CONTEXT_IS_DESTROYED:
    case CUDA_ERROR_DEVICE_UNAVAILABLE:
    case CUDA_ERROR_DEVICE_NOT_LICENSED:
    case CUDA_ERROR_UNKNOWN:
      return true;
    default:
      return false;
  }
}

absl::Status CudaDriver::WaitStream(CUstream stream, std::chrono::milliseconds deadline,
                                    const char* what) const {
  const auto end = std::chrono::steady_clock::now() + deadline;
  auto pause = std::chrono::microseconds(20);
  for (;;) {
    const CUresult r = StreamQuery(stream);
    if (r == CUDA_SUCCESS) return absl::OkStatus();
    if (r != CUDA_ERROR_NOT_READY) {
      if (IsStickyError(r)) MarkContextLost();
      return Check(r, what);
    }
    if (std::chrono::steady_clock::now() > end) {
      MarkContextLost();
      return absl::DeadlineExceededError(absl::StrCat(what, ": still running after ",
                                                      double(deadline.count()) / 1000.0,
                                                      " s (hang); the context is abandoned"));
    }
    std::this_thread::sleep_for(pause);
    pause = std::min<std::chrono::microseconds>(pause * 2, std::chrono::milliseconds(2));
  }
}

absl::StatusOr<std::unique_ptr<CudaDriver>> CudaDriver::Load() {
  const char* path = std::getenv("CAKE_LIBCUDA");
  void* h = dlopen(path ? path : "libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (h == nullptr) return absl::UnavailableError(absl::StrCat("no CUDA driver: ", dlerror()));
  using GetProc =
      CUresult (*)(const char*, void**, int, cuuint64_t, CUdriverProcAddressQueryResult*);
  auto get_proc = reinterpret_cast<GetProc>(dlsym(h, "cuGetProcAddress_v2"));
  if (get_proc == nullptr) {
    dlclose(h);
    return absl::UnavailableError("CUDA driver too old: no cuGetProcAddress_v2");
  }
  auto d = std::make_unique<CudaDriver>();
  d->handle = h;
  absl::Status missing = absl::OkStatus();
  auto resolve = [&](const char* name, auto& fn) {
    void* p = nullptr;
    CUdriverProcAddressQueryResult q;
    if (get_proc(name, &p, kApiVersion, CU_GET_PROC_ADDRESS_DEFAULT, &q) != CUDA_SUCCESS ||
        p == nullptr) {
      if (missing.ok()) missing = absl::UnavailableError(absl::StrCat("driver lacks ", name));
      return;
    }
    fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(p);
  };
  resolve("cuInit", d->Init);
  resolve("cuGetErrorName", d->GetErrorName);
  resolve("cuGetErrorString", d->GetErrorString);
  resolve("cuDriverGetVersion", d->DriverGetVersion);
  resolve("cuDeviceGetCount", d->DeviceGetCount);
  resolve("cuDeviceGet", d->DeviceGet);
  resolve("cuDeviceGetName", d->DeviceGetName);
  resolve("cuDeviceGetUuid", d->DeviceGetUuid);
  resolve("cuDeviceGetAttribute", d->DeviceGetAttribute);
  resolve("cuDeviceTotalMem", d->DeviceTotalMem);
  resolve("cuDevicePrimaryCtxRetain", d->PrimaryCtxRetain);
  resolve("cuDevicePrimaryCtxRelease", d->PrimaryCtxRelease);
  resolve("cuCtxSetCurrent", d->CtxSetCurrent);
  resolve("cuCtxSynchronize", d->CtxSynchronize);
  resolve("cuCtxGetDevice", d->CtxGetDevice);
  resolve("cuModuleLoadData", d->ModuleLoadData);
  resolve("cuModuleUnload", d->ModuleUnload);
  resolve("cuModuleGetFunction", d->ModuleGetFunction);
  resolve("cuFuncSetAttribute", d->FuncSetAttribute);
  resolve("cuFuncGetAttribute", d->FuncGetAttribute);
  resolve("cuOccupancyMaxActiveBlocksPerMultiprocessor",
          d->OccupancyMaxActiveBlocksPerMultiprocessor);
  resolve("cuLaunchKernel", d->LaunchKernel);
  resolve("cuTensorMapEncodeTiled", d->TensorMapEncodeTiled);
  resolve("cuMemAlloc", d->MemAlloc);
  resolve("cuMemFree", d->MemFree);
  resolve("cuMemcpyHtoD", d->MemcpyHtoD);
  resolve("cuMemcpyDtoH", d->MemcpyDtoH);
  resolve("cuMemcpyDtoD", d->MemcpyDtoD);
  resolve("cuMemsetD8", d->MemsetD8);
  resolve("cuMemsetD32", d->MemsetD32);
  resolve("cuStreamCreate", d->StreamCreate);
  resolve("cuStreamDestroy", d->StreamDestroy);
  resolve("cuStreamSynchronize", d->StreamSynchronize);
  resolve("cuEventCreate", d->EventCreate);
  resolve("cuEventDestroy", d->EventDestroy);
  resolve("cuEventRecord", d->EventRecord);
  resolve("cuEventRecordWithFlags", d->EventRecordWithFlags);
  resolve("cuEventSynchronize", d->EventSynchronize);
  resolve("cuEventElapsedTime", d->EventElapsedTime);
  resolve("cuEventQuery", d->EventQuery);
  resolve("cuStreamQuery", d->StreamQuery);
  resolve("cuMemsetD32Async", d->MemsetD32Async);
  resolve("cuMemcpyDtoHAsync", d->MemcpyDtoHAsync);
  resolve("cuMemGetInfo", d->MemGetInfo);
  resolve("cuMemHostAlloc", d->MemHostAlloc);
  resolve("cuMemFreeHost", d->MemFreeHost);
  resolve("cuMemHostGetDevicePointer", d->MemHostGetDevicePointer);
  resolve("cuStreamBeginCapture", d->StreamBeginCapture);
  resolve("cuStreamEndCapture", d->StreamEndCapture);
  resolve("cuGraphInstantiateWithFlags", d->GraphInstantiateWithFlags);
  resolve("cuGraphLaunch", d->GraphLaunch);
  resolve("cuGraphExecDestroy", d->GraphExecDestroy);
  resolve("cuGraphDestroy", d->GraphDestroy);
  if (!missing.ok()) return missing;
  const CUresult init = d->Init(0);
  if (init != CUDA_SUCCESS)
    return absl::UnavailableError(
        absl::StrCat("no execution device: ", d->Check(init, "cuInit").message()));
  d->DriverGetVersion(&d->driver_version);
  return d;
}

absl::StatusOr<std::unique_ptr<ScopedContext>> ScopedContext::Open(const CudaDriver& d,
                                                                   int ordinal) {
  std::unique_ptr<ScopedContext> c(new ScopedContext(d));
  absl::Status s = d.Check(d.DeviceGet(&c->device_, ordinal), "cuDeviceGet");
  if (!s.ok()) return s;
  char name[256] = {};
  d.DeviceGetName(name, sizeof(name), c->device_);
  c->name_ = name;
  d.DeviceGetAttribute(&c->major_, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, c->device_);
  d.DeviceGetAttribute(&c->minor_, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, c->device_);
  s = d.Check(d.PrimaryCtxRetain(&c->ctx_, c->device_), "cuDevicePrimaryCtxRetain");
  if (!s.ok()) return s;
  s = d.Check(d.CtxSetCurrent(c->ctx_), "cuCtxSetCurrent");
  if (!s.ok()) return s;
  return c;
}

ScopedContext::~ScopedContext() {
  if (ctx_ != nullptr && !d_.context_lost) d_.PrimaryCtxRelease(device_);
}

}  // namespace cake::gpuqueue
