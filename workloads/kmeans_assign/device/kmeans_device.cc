// The device side of kmeans_assign: each timed launch's X and C filled on the GPU from a seed,
// and its outputs judged at sampled points by the trusted check kernel (kmeans_check.cu, its own
// fatbin): direct FP32 distances to every centroid, the contract's near-tie rule for the index
// and the distance; X and C checksummed before and after.
#include <cstring>
#include <optional>

#include "absl/strings/str_cat.h"
#include "gpuqueue/worker/device_workload.h"
#include "workloads/kmeans_assign/kmeans_assign.h"

namespace cake::gpuqueue {
extern const unsigned char kKMeansCheckFatbin[];
}  // namespace cake::gpuqueue

namespace cake::workloads::kmeans_assign {
namespace {

using gpuqueue::DeviceBuffer;
using gpuqueue::SlotSeed;

constexpr int kSampledPoints = 64;
constexpr int kCheckThreads = 256;
constexpr int kResultWords =
    8;  // wrong index, wrong distance, unwritten, sums of X, C before/after
constexpr int kWrongIndex = 0, kWrongDistance = 1, kUnwritten = 2, kSumX = 3, kSumC = 4, kSumX2 = 5,
              kSumC2 = 6;

class KMeansTimedSet final : public gpuqueue::TimedSet {
 public:
  KMeansTimedSet(const gpuqueue::Gpu& g, const gpuqueue::HelperKernels& h, const KMeansShape& s,
                 const contract::Contract& c)
      : d_(*g.driver),
        h_(h),
        s_(s),
        rtol_(static_cast<float>(c.tolerance().rtol())),
        atol_(static_cast<float>(c.tolerance().atol())) {}
  ~KMeansTimedSet() override {
    if (module_ != nullptr && !d_.context_lost) d_.ModuleUnload(module_);
  }

  absl::Status Allocate(int slots) {
    absl::Status s = d_.Check(d_.ModuleLoadData(&module_, gpuqueue::kKMeansCheckFatbin),
                              "cuModuleLoadData(kmeans check)");
    if (s.ok())
      s = d_.Check(d_.ModuleGetFunction(&check_, module_, "cake_kmeans_check"),
                   "cake_kmeans_check");
    if (!s.ok()) return s;
    const size_t points = size_t(s_.b()) * s_.n();
    x_bytes_ = points * s_.d() * 2;
    c_bytes_ = size_t(s_.b()) * s_.k() * s_.d() * 2;
    out_bytes_ = points * 4;
    for (int i = 0; i < slots; ++i) {
      auto x = DeviceBuffer::Allocate(d_, x_bytes_);
      auto c = DeviceBuffer::Allocate(d_, c_bytes_);
      auto idx = DeviceBuffer::Allocate(d_, out_bytes_);
      auto dist = DeviceBuffer::Allocate(d_, out_bytes_);
      for (const auto* b : {&x, &c, &idx, &dist})
        if (!b->ok()) return b->status();
      gpuqueue::KernelArgs args;
      args.tensors = {{"X", x->ptr()}, {"C", c->ptr()}, {"idx", idx->ptr()}, {"dist", dist->ptr()}};
      args.scalars = {{"B", s_.b()}, {"N", s_.n()}, {"K", s_.k()}, {"D", s_.d()}};
      args_.push_back(std::move(args));
      x_.push_back(std::move(*x));
      c_.push_back(std::move(*c));
      idx_.push_back(std::move(*idx));
      dist_.push_back(std::move(*dist));
    }
    auto results = DeviceBuffer::Allocate(d_, size_t(slots) * kResultWords * 8);
    if (!results.ok()) return results.status();
    results_.emplace(std::move(*results));
    return absl::OkStatus();
  }

  absl::Status Prepare(CUstream st, uint64_t salt, int n) override {
    absl::Status s = d_.Check(
        d_.MemsetD32Async(results_->ptr(), 0, size_t(n) * kResultWords * 2, st), "cuMemset");
    for (int i = 0; i < n && s.ok(); ++i) {
      s = h_.FillUniformBf16(st, x_[i].ptr(), x_bytes_ / 2, SlotSeed(salt, 1, i));
      if (s.ok()) s = h_.FillUniformBf16(st, c_[i].ptr(), c_bytes_ / 2, SlotSeed(salt, 2, i));
      if (s.ok()) s = h_.Checksum(st, x_[i].ptr(), x_bytes_, Result(i, kSumX));
      if (s.ok()) s = h_.Checksum(st, c_[i].ptr(), c_bytes_, Result(i, kSumC));
    }
    return s;
  }

  absl::Status Poison(CUstream st, int slot) override {
    absl::Status s = d_.Check(d_.MemsetD32Async(idx_[slot].ptr(), 0xFFFFFFFFu, out_bytes_ / 4, st),
                              "cuMemsetD32Async(poison)");
    if (s.ok())
      s = d_.Check(d_.MemsetD32Async(dist_[slot].ptr(), 0xFFFFFFFFu, out_bytes_ / 4, st),
                   "cuMemsetD32Async(poison)");
    return s;
  }

  const gpuqueue::KernelArgs& Args(int slot) const override { return args_[slot]; }

  absl::Status Check(CUstream st, uint64_t salt, int n) override {
    absl::Status s;
    for (int i = 0; i < n && s.ok(); ++i) {
      CUdeviceptr x = x_[i].ptr(), c = c_[i].ptr(), idx = idx_[i].ptr(), dist = dist_[i].ptr(),
                  counts = Result(i, 0);
      int b = s_.b(), np = s_.n(), k = s_.k(), d = s_.d();
      uint64_t seed = SlotSeed(salt, 3, i);
      float rtol = rtol_, atol = atol_;
      void* params[] = {&x, &c, &idx, &dist, &b, &np, &k, &d, &seed, &rtol, &atol, &counts};
      s = d_.Check(d_.LaunchKernel(check_, kSampledPoints, 1, 1, kCheckThreads, 1, 1, 0, st, params,
                                   nullptr),
                   "cuLaunchKernel(kmeans check)");
      if (s.ok()) s = h_.Checksum(st, x_[i].ptr(), x_bytes_, Result(i, kSumX2));
      if (s.ok()) s = h_.Checksum(st, c_[i].ptr(), c_bytes_, Result(i, kSumC2));
    }
    return s;
  }

  absl::StatusOr<std::vector<LaunchCheck>> Collect(int n) override {
    std::vector<uint64_t> w(size_t(n) * kResultWords);
    absl::Status s = results_->DownloadRange(w.data(), 0, w.size() * 8);
    if (!s.ok()) return s;
    std::vector<LaunchCheck> out(n);
    for (int i = 0; i < n; ++i) {
      const uint64_t* r = &w[size_t(i) * kResultWords];
      if (r[kUnwritten] || r[kWrongIndex] || r[kWrongDistance])
        out[i].failure = absl::StrCat("of ", kSampledPoints, " sampled points: ", r[kWrongIndex],
                                      " wrong indices, ", r[kWrongDistance], " wrong distances, ",
                                      r[kUnwritten], " unwritten or out of range");
      out[i].inputs_modified = r[kSumX] != r[kSumX2] || r[kSumC] != r[kSumC2];
    }
    return out;
  }

 private:
  CUdeviceptr Result(int slot, int word) const {
    return results_->ptr() + (size_t(slot) * kResultWords + word) * 8;
  }

  const gpuqueue::CudaDriver& d_;
  const gpuqueue::HelperKernels& h_;
  KMeansShape s_;
  float rtol_, atol_;
  CUmodule module_ = nullptr;
  CUfunction check_ = nullptr;
  size_t x_bytes_ = 0, c_bytes_ = 0, out_bytes_ = 0;
  std::vector<DeviceBuffer> x_, c_, idx_, dist_;
  std::vector<gpuqueue::KernelArgs> args_;
  std::optional<DeviceBuffer> results_;
};

class KMeansDevice final : public gpuqueue::DeviceWorkload {
 public:
  std::string operation() const override { return kOperation; }
  std::string check_scope() const override {
    return absl::StrCat(kSampledPoints,
                        " sampled points of every timed launch: direct FP32 distances to every "
                        "centroid, the near-tie rule for index and distance; X and C checksummed "
                        "before and after");
  }
  size_t SlotBytes(const contract::ProblemShape& p, const contract::Contract&) const override {
    const KMeansShape& s = p.kmeans_assign();
    return size_t(s.b()) * s.n() * (size_t(s.d()) * 2 + 8) + size_t(s.b()) * s.k() * s.d() * 2 +
           kResultWords * 8;
  }
  absl::StatusOr<std::unique_ptr<gpuqueue::TimedSet>> Prepare(const gpuqueue::Gpu& g,
                                                              const gpuqueue::HelperKernels& h,
                                                              const contract::ProblemShape& p,
                                                              const contract::Contract& c,
                                                              int slots) const override {
    auto set = std::make_unique<KMeansTimedSet>(g, h, p.kmeans_assign(), c);
    absl::Status s = set->Allocate(slots);
    if (!s.ok()) return s;
    return std::unique_ptr<gpuqueue::TimedSet>(std::move(set));
  }
};

CAKE_REGISTER_DEVICE_WORKLOAD(KMeansDevice);

}  // namespace
}  // namespace cake::workloads::kmeans_assign
