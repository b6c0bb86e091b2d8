// A CUDA driver stand-in for hosts without GPUs: the daemon's lanes, admission and probes run
// for real against devices described in a file, loaded by the real worker through $CAKE_LIBCUDA.
// It enumerates devices and opens no context: every attempt to compute fails with
// CUDA_ERROR_NOT_SUPPORTED, which the worker reports as the machine's failure.
//
// Beside the library (found through dladdr, so the worker's confined read set covers it):
//   devices.txt  one device a line: UUID_HEX32 MAJOR.MINOR SM_COUNT NAME...
//   broken.txt   optional, "GPU-…" UUIDs: listed when the process sees every device (the
//                daemon's boot probe) but a process whose CUDA_VISIBLE_DEVICES selects only
//                broken devices finds none (cuInit: CUDA_ERROR_NO_DEVICE), as a card that
//                dropped off the bus after the probe.
//   dies.txt     optional, "GPU-…" UUIDs: a context on such a device fails with
//                CUDA_ERROR_ECC_UNCORRECTABLE and the device is broken from then on (written to
//                $CAKE_WORKER_FAULT_DIR/fake_cuda_broken.txt, the one folder a confined worker may
//                write, read like broken.txt), as a card that dies under a job.
// CUDA_VISIBLE_DEVICES (indices or UUID prefixes, comma-separated) selects and orders devices
// as the real driver does; a duplicate is listed twice, so the daemon's own check is tested.
#include <cuda.h>
#include <dlfcn.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace {

struct FakeDevice {
  unsigned char uuid[16] = {};
  std::string uuid_text;  // "GPU-…"
  int major = 0, minor = 0, sm_count = 0;
  std::string name;
};

std::string Beside(const char* file) {
  Dl_info info{};
  dladdr(reinterpret_cast<void*>(&Beside), &info);
  std::string dir = info.dli_fname ? info.dli_fname : ".";
  return dir.substr(0, dir.rfind('/') + 1) + file;
}

std::string FormatUuid(const unsigned char* b) {
  std::string s = "GPU-";
  char hex[3];
  for (int i = 0; i < 16; ++i) {
    if (i == 4 || i == 6 || i == 8 || i == 10) s += '-';
    std::snprintf(hex, sizeof hex, "%02x", b[i]);
    s += hex;
  }
  return s;
}

std::vector<FakeDevice> AllDevices() {
  std::vector<FakeDevice> out;
  std::ifstream in(Beside("devices.txt"));
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream fields(line);
    std::string uuid, cc;
    FakeDevice d;
    if (!(fields >> uuid >> cc >> d.sm_count) || uuid.size() != 32) continue;
    for (int i = 0; i < 16; ++i)
      d.uuid[i] = static_cast<unsigned char>(std::stoi(uuid.substr(2 * i, 2), nullptr, 16));
    d.uuid_text = FormatUuid(d.uuid);
    std::sscanf(cc.c_str(), "%d.%d", &d.major, &d.minor);
    std::getline(fields >> std::ws, d.name);
    out.push_back(d);
  }
  return out;
}

bool Listed(const std::string& file, const std::string& uuid_text) {
  std::ifstream in(file);
  std::string line;
  while (std::getline(in, line))
    if (line == uuid_text) return true;
  return false;
}

std::string DiedFile() {
  const char* dir = std::getenv("CAKE_WORKER_FAULT_DIR");
  return dir != nullptr && *dir != 0 ? std::string(dir) + "/fake_cuda_broken.txt" : "";
}

bool Broken(const std::string& uuid_text) {
  return Listed(Beside("broken.txt"), uuid_text) ||
         (!DiedFile().empty() && Listed(DiedFile(), uuid_text));
}

// The devices this process sees, in CUDA_VISIBLE_DEVICES order; filled by cuInit.
std::vector<FakeDevice> g_visible;
bool g_initialized = false;

std::vector<FakeDevice> Visible() {
  std::vector<FakeDevice> all = AllDevices();
  const char* env = std::getenv("CUDA_VISIBLE_DEVICES");
  if (env == nullptr) return all;
  std::vector<FakeDevice> out;
  std::istringstream items(env);
  std::string item;
  while (std::getline(items, item, ',')) {
    bool found = false;
    for (size_t i = 0; i < all.size(); ++i)
      if (item == std::to_string(i) ||
          (item.rfind("GPU-", 0) == 0 && all[i].uuid_text.rfind(item, 0) == 0)) {
        out.push_back(all[i]);
        found = true;
        break;
      }
    if (!found) break;  // the driver stops at the first entry it cannot match
  }
  bool all_broken = !out.empty();
  for (const FakeDevice& d : out) all_broken = all_broken && Broken(d.uuid_text);
  if (all_broken) out.clear();
  return out;
}

CUresult Init(unsigned int) {
  g_visible = Visible();
  g_initialized = true;
  return g_visible.empty() ? CUDA_ERROR_NO_DEVICE : CUDA_SUCCESS;
}

CUresult GetErrorName(CUresult r, const char** s) {
  switch (r) {
    case CUDA_SUCCESS:
      *s = "CUDA_SUCCESS";
      break;
    case CUDA_ERROR_NO_DEVICE:
      *s = "CUDA_ERROR_NO_DEVICE";
      break;
    case CUDA_ERROR_NOT_SUPPORTED:
      *s = "CUDA_ERROR_NOT_SUPPORTED";
      break;
    case CUDA_ERROR_INVALID_DEVICE:
      *s = "CUDA_ERROR_INVALID_DEVICE";
      break;
    case CUDA_ERROR_ECC_UNCORRECTABLE:
      *s = "CUDA_ERROR_ECC_UNCORRECTABLE";
      break;
    default:
      *s = "CUDA_ERROR_UNKNOWN";
      break;
  }
  return CUDA_SUCCESS;
}

CUresult GetErrorString(CUresult r, const char** s) {
  *s = r == CUDA_ERROR_NOT_SUPPORTED ? "the fake CUDA driver runs no kernels"
                                     : "fake CUDA driver error";
  return CUDA_SUCCESS;
}

CUresult DriverGetVersion(int* v) {
  *v = 13000;
  return CUDA_SUCCESS;
}

const FakeDevice* At(CUdevice d) {
  return g_initialized && d >= 0 && static_cast<size_t>(d) < g_visible.size() ? &g_visible[d]
                                                                              : nullptr;
}

CUresult DeviceGetCount(int* n) {
  *n = static_cast<int>(g_visible.size());
  return g_initialized ? CUDA_SUCCESS : CUDA_ERROR_NOT_INITIALIZED;
}

CUresult DeviceGet(CUdevice* d, int ordinal) {
  *d = ordinal;
  return At(ordinal) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_DEVICE;
}

CUresult DeviceGetName(char* name, int len, CUdevice d) {
  const FakeDevice* f = At(d);
  if (f == nullptr || len <= 0) return CUDA_ERROR_INVALID_DEVICE;
  std::snprintf(name, static_cast<size_t>(len), "%s", f->name.c_str());
  return CUDA_SUCCESS;
}

CUresult DeviceGetUuid(CUuuid* u, CUdevice d) {
  const FakeDevice* f = At(d);
  if (f == nullptr) return CUDA_ERROR_INVALID_DEVICE;
  std::memcpy(u->bytes, f->uuid, 16);
  return CUDA_SUCCESS;
}

CUresult DeviceGetAttribute(int* v, CUdevice_attribute a, CUdevice d) {
  const FakeDevice* f = At(d);
  if (f == nullptr) return CUDA_ERROR_INVALID_DEVICE;
  switch (a) {
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR:
      *v = f->major;
      break;
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR:
      *v = f->minor;
      break;
    case CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT:
      *v = f->sm_count;
      break;
    default:
      return CUDA_ERROR_NOT_SUPPORTED;
  }
  return CUDA_SUCCESS;
}

CUresult DeviceTotalMem(size_t* bytes, CUdevice d) {
  *bytes = size_t{80} << 30;
  return At(d) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_DEVICE;
}

CUresult PrimaryCtxRetain(CUcontext*, CUdevice d) {
  const FakeDevice* f = At(d);
  if (f == nullptr) return CUDA_ERROR_INVALID_DEVICE;
  if (Listed(Beside("dies.txt"), f->uuid_text)) {
    if (!DiedFile().empty()) std::ofstream(DiedFile(), std::ios::app) << f->uuid_text << "\n";
    return CUDA_ERROR_ECC_UNCORRECTABLE;
  }
  return CUDA_ERROR_NOT_SUPPORTED;
}

// Every entry point that would compute: each keeps its own signature, so the caller's call
// through the resolved pointer is well-typed.
template <typename Fn>
struct Unsupported;
template <typename... Args>
struct Unsupported<CUresult (*)(Args...)> {
  static CUresult Call(Args...) { return CUDA_ERROR_NOT_SUPPORTED; }
};

// clang-format off
#define CAKE_FAKE_UNSUPPORTED(X)                                                              \
  X(cuDevicePrimaryCtxRelease) X(cuCtxSetCurrent) X(cuCtxSynchronize) X(cuCtxGetDevice)     \
  X(cuModuleLoadData) X(cuModuleUnload) X(cuModuleGetFunction) X(cuFuncSetAttribute)        \
  X(cuFuncGetAttribute) X(cuOccupancyMaxActiveBlocksPerMultiprocessor) X(cuLaunchKernel)    \
  X(cuTensorMapEncodeTiled) X(cuMemAlloc) X(cuMemFree) X(cuMemcpyHtoD) X(cuMemcpyDtoH)      \
  X(cuMemcpyDtoD) X(cuMemsetD8) X(cuMemsetD32) X(cuStreamCreate) X(cuStreamDestroy)         \
  X(cuStreamSynchronize) X(cuEventCreate) X(cuEventDestroy) X(cuEventRecord)                \
  X(cuEventRecordWithFlags) X(cuEventSynchronize) X(cuEventElapsedTime) X(cuEventQuery)     \
  X(cuStreamQuery) X(cuMemsetD32Async) X(cuMemcpyDtoHAsync) X(cuMemGetInfo)                 \
  X(cuMemHostAlloc) X(cuMemFreeHost) X(cuMemHostGetDevicePointer) X(cuStreamBeginCapture)   \
  X(cuStreamEndCapture) X(cuGraphInstantiateWithFlags) X(cuGraphLaunch)                     \
  X(cuGraphExecDestroy) X(cuGraphDestroy) X(cuCtxGetId) X(cuDevicePrimaryCtxReset)          \
  X(cuMemGetAddressRange)
// clang-format on

}  // namespace

extern "C" CUresult cuGetProcAddress_v2(const char* symbol, void** fn, int, cuuint64_t,
                                        CUdriverProcAddressQueryResult* status) {
  struct Entry {
    const char* name;
    void* fn;
  };
  const Entry entries[] = {{"cuInit", reinterpret_cast<void*>(&Init)},
                           {"cuGetErrorName", reinterpret_cast<void*>(&GetErrorName)},
                           {"cuGetErrorString", reinterpret_cast<void*>(&GetErrorString)},
                           {"cuDriverGetVersion", reinterpret_cast<void*>(&DriverGetVersion)},
                           {"cuDeviceGetCount", reinterpret_cast<void*>(&DeviceGetCount)},
                           {"cuDeviceGet", reinterpret_cast<void*>(&DeviceGet)},
                           {"cuDeviceGetName", reinterpret_cast<void*>(&DeviceGetName)},
                           {"cuDeviceGetUuid", reinterpret_cast<void*>(&DeviceGetUuid)},
                           {"cuDeviceGetAttribute", reinterpret_cast<void*>(&DeviceGetAttribute)},
                           {"cuDeviceTotalMem", reinterpret_cast<void*>(&DeviceTotalMem)},
                           {"cuDevicePrimaryCtxRetain", reinterpret_cast<void*>(&PrimaryCtxRetain)},
#define CAKE_FAKE_ENTRY(name) \
  {#name, reinterpret_cast<void*>(&Unsupported<decltype(&::name)>::Call)},
                           CAKE_FAKE_UNSUPPORTED(CAKE_FAKE_ENTRY)
#undef CAKE_FAKE_ENTRY
  };
  for (const Entry& e : entries)
    if (std::strcmp(symbol, e.name) == 0) {
      *fn = e.fn;
      if (status) *status = CU_GET_PROC_ADDRESS_SUCCESS;
      return CUDA_SUCCESS;
    }
  *fn = nullptr;
  if (status) *status = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
  return CUDA_ERROR_NOT_FOUND;
}
