// The measurement protocol's GPU pieces on a real device: the helper fill and fingerprints agree
// with their host twins, the bundled schedule passes every validation record, and an A/A run in
// each configuration is checked on every timed launch, reads clocks and spans, and is never
// called faster or slower. Skips cleanly without an sm_90 device.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "gpuqueue/nvml.h"
#include "gpuqueue/worker/cupti_spans.h"
#include "gpuqueue/worker/device_session.h"
#include "gpuqueue/worker/device_workload.h"
#include "gpuqueue/worker/helper_kernels.h"
#include "gpuqueue/worker/measure_runner.h"
#include "gpuqueue/worker/validate_runner.h"
#include "protocol/paired_verdict.h"
#include "tests/gpu/gpu_test_util.h"
#include "workloads/gemm_bf16/gemm_bf16.h"
#include "workloads/numeric.h"

namespace cake {
namespace {

class MeasureProtocol : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    auto g = gpuqueue::OpenGpu();
    if (!g.ok()) {
      skip_ = std::string(g.status().message());
      return;
    }
    if (g->ctx->compute_major() != 9) {
      skip_ = "needs an sm_90 device; found " + g->ctx->name();
      return;
    }
    gpu_ = new gpuqueue::Gpu(std::move(*g));
    auto h = gpuqueue::HelperKernels::Load(*gpu_->driver);
    ASSERT_TRUE(h.ok()) << h.status();
    helpers_ = h->release();
  }
  void SetUp() override {
    if (!skip_.empty()) GTEST_SKIP() << skip_;
  }
  const gpuqueue::CudaDriver& d() { return *gpu_->driver; }

  static inline std::string skip_;
  static inline gpuqueue::Gpu* gpu_ = nullptr;
  static inline gpuqueue::HelperKernels* helpers_ = nullptr;
};

TEST_F(MeasureProtocol, FillMatchesItsHostTwin) {
  const uint64_t seed = std::random_device{}(), count = 100003;
  auto buf = gpuqueue::DeviceBuffer::Allocate(d(), count * 2 + 2);
  ASSERT_TRUE(buf.ok());
  ASSERT_TRUE(helpers_->FillUniformBf16(nullptr, buf->ptr(), count, seed).ok());
  ASSERT_TRUE(d().Check(d().CtxSynchronize(), "sync").ok());
  std::vector<uint16_t> got(count);
  ASSERT_TRUE(buf->Download(got.data(), count * 2).ok());
  int64_t differ = 0, zeros = 0;
  for (uint64_t i = 0; i < count; ++i) {
    differ += got[i] != workloads::UniformBf16At(seed, i);
    zeros += got[i] == 0;
  }
  EXPECT_EQ(differ, 0);
  EXPECT_LT(zeros, 100);
}

TEST_F(MeasureProtocol, FingerprintsMatchTheHostTwinAndCatchAWrongOutput) {
  const int m = 200, n = 136, k = 72;
  std::mt19937_64 rng(std::random_device{}());
  auto a = workloads::RandomBf16(size_t(m) * k, rng), b = workloads::RandomBf16(size_t(n) * k, rng);
  const uint64_t su = rng(), sv = rng();
  double scale = 0;
  const auto oracle = workloads::gemm_bf16::OracleFingerprint(a, b, m, n, k, su, sv, &scale);
  // The reference output, exactly, as FP32 -> fingerprint on the GPU equals the oracle's.
  const auto ref = workloads::gemm_bf16::ReferenceGemm(a, b, m, n, k);
  std::vector<float> c(ref.begin(), ref.end());
  auto da = gpuqueue::DeviceBuffer::Allocate(d(), a.size() * 2);
  auto db = gpuqueue::DeviceBuffer::Allocate(d(), b.size() * 2);
  auto dc = gpuqueue::DeviceBuffer::Allocate(d(), c.size() * 4);
  auto scratch = gpuqueue::DeviceBuffer::Allocate(d(), size_t(10) * k * 8);
  auto out = gpuqueue::DeviceBuffer::Allocate(d(), 16 * 8);
  ASSERT_TRUE(da.ok() && db.ok() && dc.ok() && scratch.ok() && out.ok());
  ASSERT_TRUE(da->Upload(a.data(), a.size() * 2).ok());
  ASSERT_TRUE(db->Upload(b.data(), b.size() * 2).ok());
  ASSERT_TRUE(dc->Upload(c.data(), c.size() * 4).ok());
  ASSERT_TRUE(d().Check(d().MemsetD8(scratch->ptr(), 0, scratch->bytes()), "memset").ok());
  ASSERT_TRUE(d().Check(d().MemsetD8(out->ptr(), 0, out->bytes()), "memset").ok());
  const CUdeviceptr xa = scratch->ptr(), xb = xa + 4 * k * 8, ca = xb + 4 * k * 8, cb = ca + k * 8;
  ASSERT_TRUE(helpers_->ProjectRows(nullptr, da->ptr(), m, k, su, xa, ca).ok());
  ASSERT_TRUE(helpers_->ProjectRows(nullptr, db->ptr(), n, k, sv, xb, cb).ok());
  ASSERT_TRUE(helpers_->FingerprintDot(nullptr, xa, xb, ca, cb, k, out->ptr()).ok());
  ASSERT_TRUE(helpers_
                  ->ProjectOutput(nullptr, dc->ptr(), m, n, false, su, sv, out->ptr() + 5 * 8,
                                  out->ptr() + 9 * 8)
                  .ok());
  ASSERT_TRUE(d().Check(d().CtxSynchronize(), "sync").ok());
  double v[16];
  ASSERT_TRUE(out->Download(v, sizeof(v)).ok());
  EXPECT_NEAR(std::sqrt(v[4]), scale, 1e-9 * scale);
  const auto host_obs = workloads::gemm_bf16::OutputFingerprint(ref, m, n, su, sv);
  for (int p = 0; p < 4; ++p) {
    EXPECT_NEAR(v[p], oracle[p], 1e-6 * scale) << "oracle side, projection " << p;
    EXPECT_NEAR(v[5 + p], host_obs[p], 1e-6 * scale) << "output side, projection " << p;
    EXPECT_NEAR(v[5 + p], v[p], workloads::gemm_bf16::FingerprintTolerance(scale, 1e-6));
  }
  // The output of other inputs is far outside the tolerance in at least one projection.
  auto a2 = workloads::RandomBf16(a.size(), rng);
  const auto other = workloads::gemm_bf16::OutputFingerprint(
      workloads::gemm_bf16::ReferenceGemm(a2, b, m, n, k), m, n, su, sv);
  double worst = 0;
  for (int p = 0; p < 4; ++p) worst = std::max(worst, std::fabs(other[p] - oracle[p]));
  EXPECT_GT(worst, workloads::gemm_bf16::FingerprintTolerance(scale, 0.008));
}

TEST_F(MeasureProtocol, BundledScheduleProducesEveryValidationRecord) {
  auto ref = testing::BundledKernel();
  ASSERT_TRUE(ref.ok()) << ref.status();
  auto image = gpuqueue::ReadKernelImage(*ref);
  ASSERT_TRUE(image.ok()) << image.status();
  const auto out =
      gpuqueue::RunValidation(*gpu_, *image, testing::SmallContract(), std::random_device{}());
  EXPECT_FALSE(out.device_fault);
  ASSERT_EQ(out.validation.records_size(), 3);
  for (const auto& r : out.validation.records()) {
    EXPECT_EQ(r.status(), evidence::PASSED) << r.summary() << ": " << r.failure();
    EXPECT_GT(r.cases_size(), 0);
    EXPECT_GT(r.coverage().launches(), 0);
  }
  EXPECT_TRUE(out.validation.passed());
}

TEST_F(MeasureProtocol, AATimingInEveryConfigurationIsCheckedAndNeverDecisive) {
  auto ref = testing::BundledKernel();
  ASSERT_TRUE(ref.ok());
  auto a = gpuqueue::LoadKernel(*gpu_, *ref), b = gpuqueue::LoadKernel(*gpu_, *ref);
  ASSERT_TRUE(a.ok() && b.ok());
  auto nvml = gpuqueue::Nvml::Load();
  auto cupti = gpuqueue::CuptiSpans::Start();
  gpuqueue::MeasureOptions o;
  o.stopping.min_pairs = 12;
  o.stopping.max_pairs = 40;
  o.stopping.min_gpu_seconds = 0.05;
  auto runner = gpuqueue::MeasureRunner::Create(*gpu_, o, nvml.ok() ? nvml->get() : nullptr,
                                                cupti.ok() ? cupti->get() : nullptr);
  ASSERT_TRUE(runner.ok()) << runner.status();
  const contract::ProblemShape s = workloads::gemm_bf16::Problem(1024, 1024, 1024);
  const gpuqueue::DeviceWorkload* dw = gpuqueue::FindDeviceWorkload("gemm_bf16_tn");
  ASSERT_NE(dw, nullptr);
  const contract::Contract small = testing::SmallContract();
  for (const char* name : {"eager/cold", "eager/warm", "graph/cold", "graph/warm"}) {
    contract::MeasurementProtocol p;
    p.add_configurations(name);
    auto cfg = protocol::TimingConfigs(p);
    ASSERT_TRUE(cfg.ok());
    auto rt = (*runner)->TimeRow(*dw, small, s, (*cfg)[0], {a->get()}, {b->get()},
                                 std::random_device{}());
    ASSERT_TRUE(rt.ok()) << name << ": " << rt.status();
    protocol::JudgeRow(&*rt, 0.02);
    EXPECT_NE(rt->verdict(), evidence::FASTER) << name;
    EXPECT_NE(rt->verdict(), evidence::SLOWER) << name;
    EXPECT_FALSE(rt->stop_reason().empty());
    EXPECT_GE(rt->incumbent_us_size(), 12);
    EXPECT_GT(rt->incumbent_median_us(), 0);
    if (nvml.ok()) {
      EXPECT_GT(rt->incumbent_sm_mhz(0), 0) << name;
    }
    if (cupti.ok()) {
      EXPECT_GT(rt->incumbent_span_us(0), 0) << name << ": CUPTI spans missing";
    }
    std::printf(
        "%-10s pairs %3d stop %-9s median %.1f us (span %.1f us) ratio %.4f [%.4f, %.4f] "
        "%s, rsd %.4f, clock %.0f MHz, launches/sample %d\n",
        name, rt->incumbent_us_size(), rt->stop_reason().c_str(), rt->incumbent_median_us(),
        rt->incumbent_span_us(0), rt->median_ratio(), rt->ratio_low(), rt->ratio_high(),
        evidence::TimingVerdict_Name(rt->verdict()).c_str(), rt->rel_stddev(),
        rt->incumbent_sm_mhz(0), rt->launches_per_sample());
  }
  for (int arm = 0; arm < 2; ++arm) {
    EXPECT_GT((*runner)->output_check(arm).launches_checked(), 0);
    EXPECT_EQ((*runner)->output_check(arm).mismatches(), 0)
        << (*runner)->output_check(arm).first_failure();
  }
  std::printf("default SM clock %.0f MHz; %s; notes: %s\n", (*runner)->default_sm_mhz(),
              cupti.ok() ? "CUPTI spans recorded" : std::string(cupti.status().message()).c_str(),
              (*runner)->notes().c_str());
}

}  // namespace
}  // namespace cake
