#include "cupti_spans.h"

#include <cupti_activity.h>
#include <cupti_version.h>
#include <dlfcn.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>

#include "absl/base/thread_annotations.h"
#include "absl/strings/str_cat.h"

namespace cake::gpuqueue {
namespace {

using RegisterFn = CUptiResult (*)(CUpti_BuffersCallbackRequestFunc,
                                   CUpti_BuffersCallbackCompleteFunc);
using EnableFn = CUptiResult (*)(CUpti_ActivityKind);
using FlushFn = CUptiResult (*)(uint32_t);
using NextFn = CUptiResult (*)(uint8_t*, size_t, CUpti_Activity**);
using VersionFn = CUptiResult (*)(uint32_t*);

constexpr size_t kBufferBytes = 8 << 20;

// Process-wide state the C callbacks reach (CUPTI has no user-data pointer for them).
std::mutex g_mu;
std::vector<CuptiSpans::Span>* g_spans ABSL_GUARDED_BY(g_mu) = nullptr;
NextFn g_next = nullptr;

void CUPTIAPI BufferRequested(uint8_t** buffer, size_t* size, size_t* max_records) {
  *buffer = static_cast<uint8_t*>(std::aligned_alloc(8, kBufferBytes));
  *size = kBufferBytes;
  *max_records = 0;
}

void CUPTIAPI BufferCompleted(CUcontext, uint32_t, uint8_t* buffer, size_t, size_t valid) {
  std::lock_guard<std::mutex> lock(g_mu);
  CUpti_Activity* record = nullptr;
  while (g_next != nullptr && g_spans != nullptr &&
         g_next(buffer, valid, &record) == CUPTI_SUCCESS) {
    if (record->kind != CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL &&
        record->kind != CUPTI_ACTIVITY_KIND_KERNEL)
      continue;
    const auto* k = reinterpret_cast<const CUpti_ActivityKernel10*>(record);
    g_spans->push_back({k->name ? k->name : "", k->start, k->end});
  }
  std::free(buffer);
}

void* OpenCupti() {
  std::vector<std::string> tries;
  if (const char* p = std::getenv("CAKE_LIBCUPTI")) tries.push_back(p);
  tries.push_back("libcupti.so.13");
  std::vector<std::string> roots;
  if (const char* nvcc = std::getenv("CAKE_NVCC"))
    roots.push_back(std::filesystem::path(nvcc).parent_path().parent_path().string());
  roots.push_back("/usr/local/cuda");
  for (const std::string& r : roots)
    for (const char* sub :
         {"/lib64/", "/lib/", "/extras/CUPTI/lib64/", "/targets/x86_64-linux/lib/"})
      tries.push_back(r + sub + "libcupti.so.13");
  for (const std::string& t : tries)
    if (void* h = dlopen(t.c_str(), RTLD_NOW | RTLD_LOCAL)) return h;
  return nullptr;
}

}  // namespace

absl::StatusOr<std::unique_ptr<CuptiSpans>> CuptiSpans::Start() {
  void* h = OpenCupti();
  if (h == nullptr) return absl::UnavailableError("CUPTI (libcupti.so.13) not found");
  auto version = reinterpret_cast<VersionFn>(dlsym(h, "cuptiGetVersion"));
  auto reg = reinterpret_cast<RegisterFn>(dlsym(h, "cuptiActivityRegisterCallbacks"));
  auto enable = reinterpret_cast<EnableFn>(dlsym(h, "cuptiActivityEnable"));
  std::unique_ptr<CuptiSpans> c(new CuptiSpans());
  c->handle_ = h;
  c->flush_ = dlsym(h, "cuptiActivityFlushAll");
  c->disable_ = dlsym(h, "cuptiActivityDisable");
  g_next = reinterpret_cast<NextFn>(dlsym(h, "cuptiActivityGetNextRecord"));
  if (!version || !reg || !enable || !c->flush_ || !c->disable_ || !g_next)
    return absl::UnavailableError("CUPTI lacks the activity API");
  uint32_t v = 0;
  // The record layout read here is the one of the headers built against; another API version
  // could lay kernels out differently.
  if (version(&v) != CUPTI_SUCCESS || v / 1000 != CUPTI_API_VERSION / 1000)
    return absl::UnavailableError(absl::StrCat("CUPTI API version ", v, " differs from ",
                                               CUPTI_API_VERSION, " of the headers"));
  {
    std::lock_guard<std::mutex> lock(g_mu);
    if (g_spans != nullptr) return absl::FailedPreconditionError("CUPTI spans already started");
    g_spans = new std::vector<Span>();
  }
  if (reg(BufferRequested, BufferCompleted) != CUPTI_SUCCESS)
    return absl::UnavailableError("cuptiActivityRegisterCallbacks failed");
  if (enable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) != CUPTI_SUCCESS)
    return absl::UnavailableError("cuptiActivityEnable(CONCURRENT_KERNEL) failed");
  return c;
}

CuptiSpans::~CuptiSpans() {
  if (disable_) reinterpret_cast<EnableFn>(disable_)(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
  if (flush_) reinterpret_cast<FlushFn>(flush_)(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  std::lock_guard<std::mutex> lock(g_mu);
  delete g_spans;
  g_spans = nullptr;
  // The library stays loaded: CUPTI may still call back from its own thread.
}

std::vector<CuptiSpans::Span> CuptiSpans::Collect() {
  reinterpret_cast<FlushFn>(flush_)(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  std::vector<Span> out;
  {
    std::lock_guard<std::mutex> lock(g_mu);
    if (g_spans != nullptr) out.swap(*g_spans);
  }
  std::sort(out.begin(), out.end(),
            [](const Span& a, const Span& b) { return a.start_ns < b.start_ns; });
  return out;
}

}  // namespace cake::gpuqueue
