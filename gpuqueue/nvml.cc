#include "nvml.h"

#include <dlfcn.h>

#include <cmath>
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
using ByUuidFn = nvmlReturn_t (*)(const char*, nvmlDevice_t*);
using GetIndexFn = nvmlReturn_t (*)(nvmlDevice_t, unsigned int*);
using ShutdownFn = nvmlReturn_t (*)();
using UintQueryFn = nvmlReturn_t (*)(nvmlDevice_t, int, unsigned int*);  // clock/temperature
using PowerFn = nvmlReturn_t (*)(nvmlDevice_t, unsigned int*);
constexpr int kNvmlClockSm = 1;
constexpr int kNvmlTemperatureGpu = 0;

// Runs fn on a detached helper thread and waits at most `timeout`: a std::async future would
// block in its destructor on a stuck NVML call, defeating the timeout.
template <typename T, typename Fn>
absl::StatusOr<T> WithTimeout(Fn fn, std::chrono::milliseconds timeout) {
  auto promise = std::make_shared<std::promise<absl::StatusOr<T>>>();
  auto task = promise->get_future();
  std::thread([promise, fn]() { promise->set_value(fn()); }).detach();
  if (task.wait_for(timeout) != std::future_status::ready)
    return absl::DeadlineExceededError(
        absl::StrCat("NVML did not answer within ", timeout.count(), " ms"));
  return task.get();
}

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
  n->by_uuid_ = dlsym(h, "nvmlDeviceGetHandleByUUID");
  n->get_index_ = dlsym(h, "nvmlDeviceGetIndex");
  n->shutdown_ = dlsym(h, "nvmlShutdown");
  n->clock_info_ = dlsym(h, "nvmlDeviceGetClockInfo");
  n->default_clock_ = dlsym(h, "nvmlDeviceGetDefaultApplicationsClock");
  n->max_clock_ = dlsym(h, "nvmlDeviceGetMaxClockInfo");
  n->temperature_ = dlsym(h, "nvmlDeviceGetTemperature");
  n->power_ = dlsym(h, "nvmlDeviceGetPowerUsage");
  if (init == nullptr || n->get_handle_ == nullptr || n->get_procs_ == nullptr)
    return absl::UnavailableError("NVML lacks the v3 process API");
  if (init() != kNvmlSuccess) return absl::UnavailableError("nvmlInit_v2 failed");
  return n;
}

Nvml::~Nvml() {
  if (shutdown_) reinterpret_cast<ShutdownFn>(shutdown_)();
  if (handle_) dlclose(handle_);
}

absl::StatusOr<unsigned> Nvml::IndexOf(const std::string& uuid) const {
  auto by_uuid = reinterpret_cast<ByUuidFn>(by_uuid_);
  auto get_index = reinterpret_cast<GetIndexFn>(get_index_);
  if (by_uuid == nullptr || get_index == nullptr)
    return absl::UnavailableError("NVML lacks nvmlDeviceGetHandleByUUID/nvmlDeviceGetIndex");
  return WithTimeout<unsigned>(
      [=]() -> absl::StatusOr<unsigned> {
        nvmlDevice_t dev = nullptr;
        if (by_uuid(uuid.c_str(), &dev) != kNvmlSuccess)
          return absl::NotFoundError(absl::StrCat("NVML knows no device ", uuid));
        unsigned index = 0;
        if (get_index(dev, &index) != kNvmlSuccess)
          return absl::UnavailableError("nvmlDeviceGetIndex failed");
        return index;
      },
      std::chrono::seconds(5));
}

absl::StatusOr<std::set<unsigned>> Nvml::ComputeProcesses(unsigned index) const {
  auto get_handle = reinterpret_cast<GetHandleFn>(get_handle_);
  auto get_procs = reinterpret_cast<GetProcsFn>(get_procs_);
  return WithTimeout<std::set<unsigned>>(
      [=]() -> absl::StatusOr<std::set<unsigned>> {
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
      },
      std::chrono::seconds(5));
}

Nvml::Reading Nvml::Read(unsigned index) const {
  auto get_handle = reinterpret_cast<GetHandleFn>(get_handle_);
  auto clock = reinterpret_cast<UintQueryFn>(clock_info_);
  auto temperature = reinterpret_cast<UintQueryFn>(temperature_);
  auto power = reinterpret_cast<PowerFn>(power_);
  auto r = WithTimeout<Reading>(
      [=]() -> absl::StatusOr<Reading> {
        Reading out{NAN, NAN, NAN};
        nvmlDevice_t dev = nullptr;
        if (get_handle(index, &dev) != kNvmlSuccess) return out;
        unsigned v = 0;
        if (clock && clock(dev, kNvmlClockSm, &v) == kNvmlSuccess) out.sm_mhz = float(v);
        if (temperature && temperature(dev, kNvmlTemperatureGpu, &v) == kNvmlSuccess)
          out.temperature_c = float(v);
        if (power && power(dev, &v) == kNvmlSuccess) out.power_w = float(v) / 1000.f;
        return out;
      },
      std::chrono::seconds(2));
  return r.ok() ? *r : Reading{NAN, NAN, NAN};
}

absl::StatusOr<float> Nvml::DefaultSmMhz(unsigned index) const {
  auto get_handle = reinterpret_cast<GetHandleFn>(get_handle_);
  auto default_clock = reinterpret_cast<UintQueryFn>(default_clock_);
  auto max_clock = reinterpret_cast<UintQueryFn>(max_clock_);
  return WithTimeout<float>(
      [=]() -> absl::StatusOr<float> {
        nvmlDevice_t dev = nullptr;
        if (get_handle(index, &dev) != kNvmlSuccess)
          return absl::UnavailableError("nvmlDeviceGetHandleByIndex failed");
        unsigned v = 0;
        if (default_clock && default_clock(dev, kNvmlClockSm, &v) == kNvmlSuccess && v > 0)
          return float(v);
        if (max_clock && max_clock(dev, kNvmlClockSm, &v) == kNvmlSuccess && v > 0) return float(v);
        return absl::UnavailableError("NVML gives neither a default nor a maximum SM clock");
      },
      std::chrono::seconds(5));
}

}  // namespace cake::gpuqueue
