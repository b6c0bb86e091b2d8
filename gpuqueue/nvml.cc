#include "nvml.h"

#include <dlfcn.h>

#include <cstdlib>
#include <future>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"

namespace cake::gpuqueue {
namespace {

// The few NVML types used, as nvml.h declares them (NVML API v3 process info).
using nvmlReturn_t = int;
using nvmlDevice_t = void*;
struct nvmlProcessInfo_t {
  unsigned int pid;
  unsigned long long usedGpuMemory;
  unsigned int gpuInstanceId;
  unsigned int computeInstanceId;
};
constexpr nvmlReturn_t kNvmlSuccess = 0;
constexpr nvmlReturn_t kNvmlInsufficientSize = 7;

using InitFn = nvmlReturn_t (*)();
using GetHandleFn = nvmlReturn_t (*)(unsigned int, nvmlDevice_t*);
using GetProcsFn = nvmlReturn_t (*)(nvmlDevice_t, unsigned int*, nvmlProcessInfo_t*);
using ShutdownFn = nvmlReturn_t (*)();

}  // namespace

absl::StatusOr<std::unique_ptr<Nvml>> Nvml::Load() {
  const char* path = std::getenv("CAKE_LIBNVML");
  void* h = dlopen(path ? path : "libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
  if (h == nullptr) return absl::UnavailableError(absl::StrCat("no NVML: ", dlerror()));
  auto init = reinterpret_cast<InitFn>(dlsym(h, "nvmlInit_v2"));
  std::unique_ptr<Nvml> n(new Nvml());
  n->handle_ = h;
  n->get_handle_ = dlsym(h, "nvmlDeviceGetHandleByIndex_v2");
  n->get_procs_ = dlsym(h, "nvmlDeviceGetComputeRunningProcesses_v3");
  n->shutdown_ = dlsym(h, "nvmlShutdown");
  if (init == nullptr || n->get_handle_ == nullptr || n->get_procs_ == nullptr)
    return absl::UnavailableError("NVML lacks the v3 process API");
  if (init() != kNvmlSuccess) return absl::UnavailableError("nvmlInit_v2 failed");
  return n;
}

Nvml::~Nvml() {
  if (shutdown_) reinterpret_cast<ShutdownFn>(shutdown_)();
  if (handle_) dlclose(handle_);
}

absl::StatusOr<std::set<unsigned>> Nvml::ComputeProcesses(unsigned index) const {
  auto get_handle = reinterpret_cast<GetHandleFn>(get_handle_);
  auto get_procs = reinterpret_cast<GetProcsFn>(get_procs_);
  // A detached thread with a shared promise: a std::async future would block in its destructor
  // on a stuck NVML call, defeating the timeout.
  auto promise = std::make_shared<std::promise<absl::StatusOr<std::set<unsigned>>>>();
  auto task = promise->get_future();
  std::thread([=]() {
    promise->set_value([&]() -> absl::StatusOr<std::set<unsigned>> {
      nvmlDevice_t dev = nullptr;
      if (get_handle(index, &dev) != kNvmlSuccess)
        return absl::UnavailableError("nvmlDeviceGetHandleByIndex failed");
      std::vector<nvmlProcessInfo_t> procs(64);
      unsigned count = static_cast<unsigned>(procs.size());
      nvmlReturn_t r = get_procs(dev, &count, procs.data());
      if (r == kNvmlInsufficientSize) {
        procs.resize(count + 16);
        count = static_cast<unsigned>(procs.size());
        r = get_procs(dev, &count, procs.data());
      }
      if (r != kNvmlSuccess)
        return absl::UnavailableError("nvmlDeviceGetComputeRunningProcesses failed");
      std::set<unsigned> pids;
      for (unsigned i = 0; i < count; ++i) pids.insert(procs[i].pid);
      return pids;
    }());
  }).detach();
  if (task.wait_for(std::chrono::seconds(5)) != std::future_status::ready)
    return absl::DeadlineExceededError("NVML did not answer within 5 s");
  return task.get();
}

}  // namespace cake::gpuqueue
