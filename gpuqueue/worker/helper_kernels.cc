#include "helper_kernels.h"

#include <algorithm>

#include "absl/strings/str_cat.h"

namespace cake::gpuqueue {

// From the build (cmake/embed_binary.cmake over helper_kernels.cu's fatbin).
extern const unsigned char kHelperKernelsFatbin[];
extern const size_t kHelperKernelsFatbin_size;

namespace {

constexpr unsigned kThreads = 256;
constexpr int kRowsPerChunk = 64;

}  // namespace

absl::StatusOr<std::unique_ptr<HelperKernels>> HelperKernels::Load(const CudaDriver& d) {
  std::unique_ptr<HelperKernels> h(new HelperKernels(d));
  absl::Status s = d.Check(d.ModuleLoadData(&h->module_, kHelperKernelsFatbin),
                           "cuModuleLoadData(helper kernels)");
  if (!s.ok()) return s;
  const std::pair<CUfunction*, const char*> fns[] = {
      {&h->fill_, "cake_helper_fill_uniform_bf16"},
      {&h->project_rows_, "cake_helper_project_rows"},
      {&h->dot_, "cake_helper_fingerprint_dot"},
      {&h->project_output_, "cake_helper_project_output"},
      {&h->checksum_, "cake_helper_checksum"},
      {&h->block_, "cake_helper_block_stream"}};
  for (const auto& [fn, name] : fns) {
    s = d.Check(d.ModuleGetFunction(fn, h->module_, name), name);
    if (!s.ok()) return s;
  }
  CUdevice dev;
  if (d.CtxGetDevice && d.CtxGetDevice(&dev) == CUDA_SUCCESS)
    d.DeviceGetAttribute(&h->sm_count_, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, dev);
  h->sm_count_ = std::max(1, h->sm_count_);
  return h;
}

HelperKernels::~HelperKernels() {
  if (module_ != nullptr && !d_.context_lost) d_.ModuleUnload(module_);
}

absl::Status HelperKernels::Launch(CUfunction f, unsigned grid_x, unsigned grid_y, unsigned block,
                                   CUstream s, void** args) const {
  return d_.Check(d_.LaunchKernel(f, grid_x, grid_y, 1, block, 1, 1, 0, s, args, nullptr),
                  "cuLaunchKernel(helper)");
}

absl::Status HelperKernels::FillUniformBf16(CUstream s, CUdeviceptr out, uint64_t count,
                                            uint64_t seed) const {
  void* args[] = {&out, &count, &seed};
  const unsigned grid = static_cast<unsigned>(
      std::clamp<uint64_t>((count + kThreads - 1) / kThreads, 1, uint64_t(sm_count_) * 8));
  return Launch(fill_, grid, 1, kThreads, s, args);
}

absl::Status HelperKernels::ProjectRows(CUstream s, CUdeviceptr x, int rows, int cols,
                                        uint64_t seed, CUdeviceptr proj, CUdeviceptr colsq) const {
  int projections = kFingerprintProjections, chunk = kRowsPerChunk;
  void* args[] = {&x, &rows, &cols, &seed, &projections, &chunk, &proj, &colsq};
  constexpr unsigned kColumnThreads = 128;
  return Launch(project_rows_, (static_cast<unsigned>(cols) + kColumnThreads - 1) / kColumnThreads,
                (static_cast<unsigned>(rows) + kRowsPerChunk - 1) / kRowsPerChunk, kColumnThreads,
                s, args);
}

absl::Status HelperKernels::FingerprintDot(CUstream s, CUdeviceptr xa, CUdeviceptr xb,
                                           CUdeviceptr colsq_a, CUdeviceptr colsq_b, int k,
                                           CUdeviceptr out) const {
  int projections = kFingerprintProjections;
  void* args[] = {&xa, &xb, &colsq_a, &colsq_b, &k, &projections, &out};
  return Launch(dot_, 1, 1, 1024, s, args);
}

absl::Status HelperKernels::ProjectOutput(CUstream s, CUdeviceptr c, int m, int n, bool bf16,
                                          uint64_t seed_u, uint64_t seed_v, CUdeviceptr out,
                                          CUdeviceptr nonfinite) const {
  int is_bf16 = bf16 ? 1 : 0, projections = kFingerprintProjections;
  void* args[] = {&c, &m, &n, &is_bf16, &seed_u, &seed_v, &projections, &out, &nonfinite};
  const uint64_t total = uint64_t(m) * uint64_t(n);
  const unsigned grid = static_cast<unsigned>(
      std::clamp<uint64_t>((total + kThreads - 1) / kThreads, 1, uint64_t(sm_count_) * 8));
  return Launch(project_output_, grid, 1, kThreads, s, args);
}

absl::Status HelperKernels::Checksum(CUstream s, CUdeviceptr p, uint64_t bytes,
                                     CUdeviceptr out) const {
  uint64_t words = bytes / 4;
  void* args[] = {&p, &words, &out};
  const unsigned grid = static_cast<unsigned>(
      std::clamp<uint64_t>((words + kThreads - 1) / kThreads, 1, uint64_t(sm_count_) * 8));
  return Launch(checksum_, grid, 1, kThreads, s, args);
}

absl::Status HelperKernels::BlockStream(CUstream s, CUdeviceptr release, CUdeviceptr timed_out,
                                        uint64_t timeout_ns) const {
  unsigned long long t = timeout_ns;
  void* args[] = {&release, &timed_out, &t};
  return Launch(block_, 1, 1, 1, s, args);
}

}  // namespace cake::gpuqueue
