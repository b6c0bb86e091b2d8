// The device side of gemm_bf16: each timed launch's A and B filled on the GPU from a seed, and its
// output fingerprinted with 4 random +-1 projections u_p^T C v_p against the oracle's
// (u_p^T A)(B^T v_p) of the same inputs (Freivalds); A and B checksummed before and after.
#include <cmath>
#include <cstring>
#include <optional>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "gpuqueue/worker/device_workload.h"
#include "workloads/gemm_bf16/gemm_bf16.h"

namespace cake::workloads::gemm_bf16 {
namespace {

using gpuqueue::DeviceBuffer;
using gpuqueue::SlotSeed;

constexpr int kP = gpuqueue::kFingerprintProjections;
constexpr int kResultWords = 16;  // per launch: ref[0..3], scale^2, obs[5..8], nonfinite, 4 sums
constexpr int kRefScale = kP, kObs = 5, kNonfinite = 9, kSumA = 10, kSumB = 11, kSumA2 = 12,
              kSumB2 = 13;

class GemmTimedSet final : public gpuqueue::TimedSet {
 public:
  GemmTimedSet(const gpuqueue::Gpu& g, const gpuqueue::HelperKernels& h, const GemmShape& s,
               const contract::Contract& c)
      : d_(*g.driver),
        h_(h),
        s_(s),
        bf16_out_(c.output_dtype() != "f32"),
        max_relative_l2_(c.tolerance().max_relative_l2()) {}

  absl::Status Allocate(int slots) {
    a_bytes_ = size_t(s_.m()) * s_.k() * 2;
    b_bytes_ = size_t(s_.n()) * s_.k() * 2;
    c_bytes_ = (size_t(s_.m()) * s_.n() * (bf16_out_ ? 2 : 4) + 3) / 4 * 4;
    scratch_bytes_ = (2 * kP + 2) * size_t(s_.k()) * sizeof(double);
    for (int i = 0; i < slots; ++i) {
      auto a = DeviceBuffer::Allocate(d_, a_bytes_);
      auto b = DeviceBuffer::Allocate(d_, b_bytes_);
      auto c = DeviceBuffer::Allocate(d_, c_bytes_);
      if (!a.ok()) return a.status();
      if (!b.ok()) return b.status();
      if (!c.ok()) return c.status();
      gpuqueue::KernelArgs args;
      args.tensors = {{"A", a->ptr()}, {"B", b->ptr()}, {"C", c->ptr()}};
      args.scalars = {{"M", s_.m()}, {"N", s_.n()}, {"K", s_.k()}};
      args_.push_back(std::move(args));
      a_.push_back(std::move(*a));
      b_.push_back(std::move(*b));
      c_.push_back(std::move(*c));
    }
    auto scratch = DeviceBuffer::Allocate(d_, scratch_bytes_ * slots);
    auto results = DeviceBuffer::Allocate(d_, size_t(slots) * kResultWords * 8);
    if (!scratch.ok()) return scratch.status();
    if (!results.ok()) return results.status();
    scratch_.emplace(std::move(*scratch));
    results_.emplace(std::move(*results));
    return absl::OkStatus();
  }

  absl::Status Prepare(CUstream st, uint64_t salt, int n) override {
    absl::Status s =
        d_.Check(d_.MemsetD32Async(scratch_->ptr(), 0, scratch_bytes_ * n / 4, st), "cuMemset");
    if (s.ok())
      s = d_.Check(d_.MemsetD32Async(results_->ptr(), 0, size_t(n) * kResultWords * 2, st),
                   "cuMemset");
    for (int i = 0; i < n && s.ok(); ++i) {
      s = h_.FillUniformBf16(st, a_[i].ptr(), a_bytes_ / 2, SlotSeed(salt, 1, i));
      if (s.ok()) s = h_.FillUniformBf16(st, b_[i].ptr(), b_bytes_ / 2, SlotSeed(salt, 2, i));
      if (s.ok())
        s = h_.ProjectRows(st, a_[i].ptr(), s_.m(), s_.k(), SlotSeed(salt, 3, i), Scratch(i, 0),
                           Scratch(i, 2));
      if (s.ok())
        s = h_.ProjectRows(st, b_[i].ptr(), s_.n(), s_.k(), SlotSeed(salt, 4, i), Scratch(i, 1),
                           Scratch(i, 3));
      if (s.ok())
        s = h_.FingerprintDot(st, Scratch(i, 0), Scratch(i, 1), Scratch(i, 2), Scratch(i, 3),
                              s_.k(), Result(i, 0));
      if (s.ok()) s = h_.Checksum(st, a_[i].ptr(), a_bytes_, Result(i, kSumA));
      if (s.ok()) s = h_.Checksum(st, b_[i].ptr(), b_bytes_, Result(i, kSumB));
    }
    return s;
  }

  absl::Status Poison(CUstream st, int slot) override {
    return d_.Check(d_.MemsetD32Async(c_[slot].ptr(), 0xFFFFFFFFu, c_bytes_ / 4, st),
                    "cuMemsetD32Async(poison)");
  }

  const gpuqueue::KernelArgs& Args(int slot) const override { return args_[slot]; }

  absl::Status Check(CUstream st, uint64_t salt, int n) override {
    absl::Status s;
    for (int i = 0; i < n && s.ok(); ++i) {
      s = h_.ProjectOutput(st, c_[i].ptr(), s_.m(), s_.n(), bf16_out_, SlotSeed(salt, 3, i),
                           SlotSeed(salt, 4, i), Result(i, kObs), Result(i, kNonfinite));
      if (s.ok()) s = h_.Checksum(st, a_[i].ptr(), a_bytes_, Result(i, kSumA2));
      if (s.ok()) s = h_.Checksum(st, b_[i].ptr(), b_bytes_, Result(i, kSumB2));
    }
    return s;
  }

  absl::StatusOr<std::vector<LaunchCheck>> Collect(int n) override {
    std::vector<uint64_t> words(size_t(n) * kResultWords);
    absl::Status s = results_->DownloadRange(words.data(), 0, words.size() * 8);
    if (!s.ok()) return s;
    std::vector<LaunchCheck> out(n);
    for (int i = 0; i < n; ++i) {
      const uint64_t* w = &words[size_t(i) * kResultWords];
      double v[kResultWords];
      std::memcpy(v, w, sizeof(v));
      const double tol =
          FingerprintTolerance(std::sqrt(std::max(v[kRefScale], 0.0)), max_relative_l2_);
      if (w[kNonfinite] != 0) {
        out[i].failure =
            absl::StrCat(w[kNonfinite], " output elements non-finite (unwritten poison or NaN)");
      } else {
        for (int p = 0; p < kP && out[i].failure.empty(); ++p)
          if (!(std::fabs(v[kObs + p] - v[p]) <= tol))
            out[i].failure = absl::StrFormat(
                "fingerprint %d: output %.6g, oracle %.6g "
                "(tolerance %.3g)",
                p, v[kObs + p], v[p], tol);
      }
      out[i].inputs_modified = w[kSumA] != w[kSumA2] || w[kSumB] != w[kSumB2];
    }
    return out;
  }

 private:
  CUdeviceptr Scratch(int slot, int part) const {  // part 0 xa, 1 xb, 2 colsq_a, 3 colsq_b
    const size_t k = size_t(s_.k());
    const size_t offsets[] = {0, kP * k, 2 * kP * k, (2 * kP + 1) * k};
    return scratch_->ptr() + slot * scratch_bytes_ + offsets[part] * sizeof(double);
  }
  CUdeviceptr Result(int slot, int word) const {
    return results_->ptr() + (size_t(slot) * kResultWords + word) * 8;
  }

  const gpuqueue::CudaDriver& d_;
  const gpuqueue::HelperKernels& h_;
  GemmShape s_;
  bool bf16_out_;
  double max_relative_l2_;
  size_t a_bytes_ = 0, b_bytes_ = 0, c_bytes_ = 0, scratch_bytes_ = 0;
  std::vector<DeviceBuffer> a_, b_, c_;
  std::vector<gpuqueue::KernelArgs> args_;
  std::optional<DeviceBuffer> scratch_, results_;
};

class GemmDevice final : public gpuqueue::DeviceWorkload {
 public:
  std::string operation() const override { return kOperation; }
  std::string check_scope() const override {
    return absl::StrCat(kP,
                        " random +-1 projections u^T C v of every timed launch against the "
                        "oracle's (u^T A)(B^T v); A and B checksummed before and after");
  }
  size_t SlotBytes(const contract::ProblemShape& p, const contract::Contract& c) const override {
    const GemmShape& s = p.gemm_bf16();
    return size_t(s.m()) * s.k() * 2 + size_t(s.n()) * s.k() * 2 + size_t(s.m()) * s.n() * 4 +
           (2 * kP + 2) * size_t(s.k()) * 8;
  }
  absl::StatusOr<std::unique_ptr<gpuqueue::TimedSet>> Prepare(const gpuqueue::Gpu& g,
                                                              const gpuqueue::HelperKernels& h,
                                                              const contract::ProblemShape& p,
                                                              const contract::Contract& c,
                                                              int slots) const override {
    auto set = std::make_unique<GemmTimedSet>(g, h, p.gemm_bf16(), c);
    absl::Status s = set->Allocate(slots);
    if (!s.ok()) return s;
    return std::unique_ptr<gpuqueue::TimedSet>(std::move(set));
  }
};

CAKE_REGISTER_DEVICE_WORKLOAD(GemmDevice);

}  // namespace
}  // namespace cake::workloads::gemm_bf16
