// CUPTI kernel-activity spans: the GPU start/end of every kernel, recorded beside the event
// times so that API-level and GPU-span gains are reported separately. CUPTI is loaded at run time
// ($CAKE_LIBCUPTI, libcupti.so.13 on the library path, or beside the toolkit's nvcc); when it is
// absent or of another major version, Start() says why and timing goes on without spans.
// CUPTI's activity callbacks are process-wide, so at most one CuptiSpans exists per process.
// Thread-safe.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace cake::gpuqueue {

class CuptiSpans {
 public:
  struct Span {
    std::string name;
    uint64_t start_ns = 0, end_ns = 0;
  };
  // Loads CUPTI and enables concurrent-kernel activity records.
  static absl::StatusOr<std::unique_ptr<CuptiSpans>> Start();
  ~CuptiSpans();
  // Flushes CUPTI and returns the kernels completed since the last call, in start order.
  std::vector<Span> Collect();

 private:
  CuptiSpans() = default;
  void* handle_ = nullptr;
  void* flush_ = nullptr;
  void* disable_ = nullptr;
};

}  // namespace cake::gpuqueue
