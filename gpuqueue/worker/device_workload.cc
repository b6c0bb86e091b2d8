#include "device_workload.h"

#include <cstdio>
#include <cstdlib>
#include <map>
#include <mutex>

#include "workloads/numeric.h"

namespace cake::gpuqueue {
namespace {

struct Registry {
  std::mutex mu;
  std::map<std::string, std::unique_ptr<DeviceWorkload>> by_operation;
};

Registry& TheRegistry() {
  static Registry* r = new Registry();
  return *r;
}

}  // namespace

bool RegisterDeviceWorkload(std::unique_ptr<DeviceWorkload> w) {
  Registry& r = TheRegistry();
  std::lock_guard<std::mutex> lock(r.mu);
  const std::string op = w->operation();
  if (!r.by_operation.emplace(op, std::move(w)).second) {
    std::fprintf(stderr, "two device workloads register operation '%s'\n", op.c_str());
    std::abort();
  }
  return true;
}

const DeviceWorkload* FindDeviceWorkload(const std::string& operation) {
  Registry& r = TheRegistry();
  std::lock_guard<std::mutex> lock(r.mu);
  auto it = r.by_operation.find(operation);
  return it == r.by_operation.end() ? nullptr : it->second.get();
}

uint64_t SlotSeed(uint64_t salt, uint64_t tag, uint64_t slot) {
  return workloads::Mix64(salt ^ workloads::Mix64((tag << 32) | slot));
}

}  // namespace cake::gpuqueue
