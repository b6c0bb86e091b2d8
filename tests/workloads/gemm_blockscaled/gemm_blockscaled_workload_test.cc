// The gemm_blockscaled workload on the seam: its bundled contract and example are valid and agree
// with the workload's first point; bad shapes and dtypes are refused naming the rule; its oracle
// accepts an FP32 model of the kernel on fresh inputs of every case of its default policy, and
// rejects a wrong element, poison left, a NaN that did not propagate and operands decoded in the
// wrong format; its space starts with its list.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <fstream>
#include <random>
#include <sstream>

#include "google/protobuf/text_format.h"
#include "tests/compiler/test_util.h"
#include "workloads/gemm_blockscaled/gemm_blockscaled.h"
#include "workloads/narrow_float.h"
#include "workloads/numeric.h"

namespace cake {
namespace {

using workloads::NarrowFormat;
using workloads::gemm_blockscaled::Problem;

const workloads::Workload& Fp8Gemm() { return *workloads::FindWorkload("gemm_blockscaled"); }
uint64_t Fresh() { return std::random_device{}() * 0x9e3779b97f4a7c15ull ^ std::random_device{}(); }

std::string ReadSource(const std::string& relative) {
  std::ifstream in(testing::SourceDir() / relative);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

contract::Contract Bundled() {
  contract::Contract c;
  EXPECT_TRUE(google::protobuf::TextFormat::ParseFromString(
      ReadSource("contracts/gemm_blockscaled.textproto"), &c));
  return c;
}

// What the kernel computes: each exact product (E4M3 x E4M3 is exact in FP32) added in order in
// FP32, rounded to BF16. Operands decoded as `format` (the wrong one makes a wrong kernel).
workloads::TensorBytes KernelModel(const contract::ProblemShape& p,
                                   const workloads::TensorBytes& in,
                                   NarrowFormat format = NarrowFormat::kE4M3) {
  const auto& s = p.gemm_blockscaled();
  float decoded[256];
  for (int c = 0; c < 256; ++c)
    decoded[c] = static_cast<float>(workloads::DecodeNarrow(format, uint32_t(c)));
  const auto* a = reinterpret_cast<const uint8_t*>(in.at("A").data());
  const auto* b = reinterpret_cast<const uint8_t*>(in.at("B").data());
  std::string out(size_t(s.m()) * s.n() * 2, '\0');
  for (int i = 0; i < s.m(); ++i)
    for (int j = 0; j < s.n(); ++j) {
      float acc = 0;
      for (int k = 0; k < s.k(); ++k)
        acc += decoded[a[size_t(i) * s.k() + k]] * decoded[b[size_t(j) * s.k() + k]];
      const uint16_t bits = workloads::FloatToBf16(acc);
      std::memcpy(&out[2 * (size_t(i) * s.n() + j)], &bits, 2);
    }
  return {{"C", out}};
}

evidence::RowCheck Judge(const contract::ProblemShape& p, contract::InputDistribution dist,
                         uint64_t seed, const workloads::TensorBytes& in,
                         const workloads::TensorBytes& out, int64_t unwritten = 0) {
  evidence::RowCheck rc;
  Fp8Gemm().Judge(p, Bundled(), dist, seed, in, out, unwritten, &rc);
  return rc;
}

TEST(GemmBlockScaled, BundledContractAndExampleAreValid) {
  const contract::Contract c = Bundled();
  EXPECT_TRUE(Fp8Gemm().CheckContract(c).ok()) << Fp8Gemm().CheckContract(c);
  for (const auto& r : c.rows()) EXPECT_TRUE(Fp8Gemm().CheckShape(r.problem()).ok()) << r.name();
  const contract::ValidationPolicy policy = Fp8Gemm().DefaultPolicy();
  for (const auto& v : policy.cases())
    EXPECT_TRUE(Fp8Gemm().CheckShape(v.problem()).ok()) << v.name();
  for (const auto& d : Fp8Gemm().DerivedCases({{"M", 128}, {"N", 64}}))
    EXPECT_TRUE(Fp8Gemm().CheckShape(d.problem).ok()) << d.name;
  // The example is the workload's first point, behind its comment lines.
  const std::string example = ReadSource("examples/gemm_blockscaled.textproto");
  EXPECT_NE(example.find(Fp8Gemm().ScheduleSpace()[0].schedule_text), std::string::npos);
}

TEST(GemmBlockScaled, BadShapesAndDtypesAreRefusedNamingTheRule) {
  auto shape_error = [](const contract::ProblemShape& p) {
    return std::string(Fp8Gemm().CheckShape(p).message());
  };
  EXPECT_NE(shape_error(Problem(64, 64, 48)).find("multiple of 32"), std::string::npos);
  EXPECT_NE(shape_error(Problem(0, 64, 64)).find("positive"), std::string::npos);
  EXPECT_NE(shape_error(Problem(1 << 21, 8, 32)).find("over 2^20"), std::string::npos);
  EXPECT_NE(shape_error(Problem(1 << 20, 1 << 20, 32)).find("over 2^32"), std::string::npos);
  EXPECT_NE(shape_error(contract::ProblemShape()).find("not a gemm_blockscaled shape"),
            std::string::npos);
  contract::Contract c = Bundled();
  c.set_input_dtype("e5m2");
  EXPECT_NE(Fp8Gemm().CheckContract(c).message().find("input_dtype 'e5m2'"), std::string::npos);
  c = Bundled();
  c.set_output_dtype("f32");
  EXPECT_FALSE(Fp8Gemm().CheckContract(c).ok());
}

TEST(GemmBlockScaled, OracleAcceptsTheKernelModelOnEveryCase) {
  const contract::ValidationPolicy policy = Fp8Gemm().DefaultPolicy();
  for (const auto& c : policy.cases()) {
    SCOPED_TRACE(c.name());
    const uint64_t seed = Fresh();
    const auto in = Fp8Gemm().MakeInputs(c.problem(), c.inputs(), seed);
    const auto rc = Judge(c.problem(), c.inputs(), seed, in, KernelModel(c.problem(), in));
    EXPECT_TRUE(rc.passed()) << rc.failure() << " (seed " << seed << ")";
    EXPECT_EQ(rc.sampled_rows(), 0);  // small cases: every element compared
  }
}

TEST(GemmBlockScaled, InputsCoverTheirDistributions) {
  const contract::ProblemShape p = Problem(64, 32, 256);
  const uint64_t seed = Fresh();
  auto values = [&](contract::InputDistribution d) {
    const auto in = Fp8Gemm().MakeInputs(p, d, seed);
    std::vector<double> v;
    for (char c : in.at("A")) v.push_back(workloads::DecodeNarrow(NarrowFormat::kE4M3, uint8_t(c)));
    return v;
  };
  const auto uniform = values(contract::UNIFORM);
  int subnormal = 0, top = 0;
  for (double v : uniform) {
    ASSERT_TRUE(std::isfinite(v));
    subnormal += v != 0 && std::fabs(v) < std::ldexp(1.0, -6);
    top += std::fabs(v) >= 256;
  }
  EXPECT_GT(subnormal, 0);
  EXPECT_GT(top, 0);
  for (double v : values(contract::EXTREME_MAGNITUDE))
    EXPECT_TRUE(std::fabs(v) >= 256 || std::fabs(v) < std::ldexp(1.0, -6)) << v;
  int nan = 0;
  for (double v : values(contract::SPECIAL_VALUES)) nan += std::isnan(v);
  EXPECT_EQ(nan, 1);
  // Cancellation: even columns of C are exactly zero (a double holds these sums exactly: E4M3
  // products span 2^-18 .. 2^18 with 8 significant bits).
  const auto in = Fp8Gemm().MakeInputs(p, contract::CANCELLATION, seed);
  for (int i = 0; i < 64; ++i)
    for (int j = 0; j < 32; j += 2) {
      double sum = 0;
      for (int k = 0; k < 256; ++k)
        sum += workloads::DecodeNarrow(NarrowFormat::kE4M3, uint8_t(in.at("A")[i * 256 + k])) *
               workloads::DecodeNarrow(NarrowFormat::kE4M3, uint8_t(in.at("B")[j * 256 + k]));
      EXPECT_EQ(sum, 0.0) << "C[" << i << "][" << j << "]";
    }
}

TEST(GemmBlockScaled, OracleRejectsWrongUnwrittenNanPolicyAndTheWrongFormat) {
  const contract::ProblemShape p = Problem(96, 80, 320);
  const uint64_t seed = Fresh();
  const auto in = Fp8Gemm().MakeInputs(p, contract::UNIFORM, seed);
  const auto good = KernelModel(p, in);
  ASSERT_TRUE(Judge(p, contract::UNIFORM, seed, in, good).passed());

  // One element doubled.
  auto wrong = good;
  uint16_t bits;
  std::memcpy(&bits, wrong["C"].data() + 2 * 777, 2);
  bits = workloads::FloatToBf16(2.0f * workloads::Bf16ToFloat(bits) + 1.0f);
  std::memcpy(wrong["C"].data() + 2 * 777, &bits, 2);
  auto rc = Judge(p, contract::UNIFORM, seed, in, wrong);
  EXPECT_FALSE(rc.passed());
  EXPECT_EQ(rc.out_of_tolerance(), 1);

  // Poison left is never a pass.
  EXPECT_FALSE(Judge(p, contract::UNIFORM, seed, in, good, 5).passed());

  // Operands read as E5M2: a kernel with the wrong decode fails.
  rc = Judge(p, contract::UNIFORM, seed, in, KernelModel(p, in, NarrowFormat::kE5M2));
  EXPECT_FALSE(rc.passed());
  EXPECT_GT(rc.out_of_tolerance() + rc.nonfinite_policy_violations(), 100);

  // A NaN code's row must be NaN: a finite value there breaks the policy.
  const contract::ProblemShape q = Problem(40, 24, 96);
  const auto nan_in = Fp8Gemm().MakeInputs(q, contract::SPECIAL_VALUES, seed);
  auto nan_out = KernelModel(q, nan_in);
  ASSERT_TRUE(Judge(q, contract::SPECIAL_VALUES, seed, nan_in, nan_out).passed());
  for (size_t e = 0; e < size_t(40) * 24; ++e) {
    std::memcpy(&bits, nan_out["C"].data() + 2 * e, 2);
    if (!std::isnan(workloads::Bf16ToFloat(bits))) continue;
    const uint16_t one = workloads::FloatToBf16(1.0f);
    std::memcpy(nan_out["C"].data() + 2 * e, &one, 2);
    rc = Judge(q, contract::SPECIAL_VALUES, seed, nan_in, nan_out);
    EXPECT_FALSE(rc.passed());
    EXPECT_EQ(rc.nonfinite_policy_violations(), 1);
    return;
  }
  ADD_FAILURE() << "SPECIAL_VALUES planted no NaN";
}

TEST(GemmBlockScaled, LargeProblemsCompareSampledElements) {
  // 512 x 512 x 512 is over the full oracle's 2^26 multiply-adds: a sample with the last element.
  const contract::ProblemShape p = Problem(512, 512, 512);
  const uint64_t seed = Fresh();
  const auto in = Fp8Gemm().MakeInputs(p, contract::UNIFORM, seed);
  auto out = KernelModel(p, in);
  auto rc = Judge(p, contract::UNIFORM, seed, in, out);
  EXPECT_TRUE(rc.passed()) << rc.failure();
  EXPECT_EQ(rc.sampled_rows(), 513);
  // The last element is always among them.
  const uint16_t nan = 0x7FC1;
  std::memcpy(out["C"].data() + out["C"].size() - 2, &nan, 2);
  EXPECT_FALSE(Judge(p, contract::UNIFORM, seed, in, out).passed());
}

TEST(GemmBlockScaled, SpaceStartsWithItsListAndHoldsBothForms) {
  const auto list = Fp8Gemm().ScheduleSpace();
  const auto space = Fp8Gemm().SearchSpace();
  ASSERT_EQ(list.size(), 4u);
  ASSERT_GT(space.size(), 30u);
  int unit = 0, legacy = 0;
  for (size_t i = 0; i < space.size(); ++i) {
    if (i < list.size()) {
      EXPECT_EQ(space[i].label, list[i].label);
    }
    EXPECT_NE(space[i].label.find("e4m3"), std::string::npos) << space[i].label;
    unit += space[i].label.find("unit-scale") != std::string::npos;
    legacy += space[i].label.find("legacy") != std::string::npos;
  }
  EXPECT_GT(unit, 10);
  EXPECT_GT(legacy, 10);
}

}  // namespace
}  // namespace cake
