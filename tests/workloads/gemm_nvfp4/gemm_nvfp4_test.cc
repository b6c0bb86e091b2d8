// The gemm_nvfp4 workload on the seam: its bundled contract and example are valid and agree with
// the workload's first point; bad shapes and dtypes are refused naming the rule; packing is two
// codes a byte, the lower K index low; its oracle accepts an FP32 model of the kernel (scaled
// products, each exact in FP32, added in order) on fresh inputs of every case of its default
// policy, and rejects a wrong element, poison left, a NaN scale that did not propagate, scales
// applied per 32 instead of 16 and nibbles read in the wrong order; its space starts with its list.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <set>

#include "google/protobuf/text_format.h"
#include "tests/compiler/test_util.h"
#include "workloads/gemm_nvfp4/gemm_nvfp4.h"
#include "workloads/narrow_float.h"
#include "workloads/numeric.h"

namespace cake {
namespace {

using workloads::NarrowFormat;
using workloads::gemm_nvfp4::Problem;

const workloads::Workload& Nvfp4() { return *workloads::FindWorkload("gemm_nvfp4"); }
uint64_t Fresh() { return std::random_device{}() * 0x9e3779b97f4a7c15ull ^ std::random_device{}(); }

contract::Contract Bundled() {
  contract::Contract c;
  EXPECT_TRUE(google::protobuf::TextFormat::ParseFromString(
      testing::ReadText(testing::SourceDir() / "contracts/gemm_nvfp4.textproto"), &c));
  return c;
}

// How a kernel may go wrong.
struct Fault {
  int scale_group = 16;              // 32: one scale applied to 32 elements
  bool a_high_nibble_first = false;  // A's bytes read high nibble first (B's as packed: swapping
                                     // both would permute K alike and change nothing)
};

// What the kernel computes: each product (E2M1 x UE4M3 x E2M1 x UE4M3, exact in FP32) added in
// order in FP32, rounded to BF16; decoded straight from the packed bytes.
workloads::TensorBytes KernelModel(const contract::ProblemShape& p,
                                   const workloads::TensorBytes& in, Fault fault = {}) {
  const auto& s = p.gemm_nvfp4();
  const int k = s.k(), groups = k / 16;
  auto code = [&](const std::string& packed, size_t row, int kk, bool swapped = false) {
    const auto byte = static_cast<uint8_t>(packed[row * size_t(k) / 2 + size_t(kk) / 2]);
    const bool high = (kk % 2 == 1) != swapped;
    return workloads::DecodeNarrow(NarrowFormat::kE2M1, high ? byte >> 4 : byte & 0xF);
  };
  auto scale = [&](const std::string& scales, size_t row, int kk) {
    const int g = fault.scale_group == 16 ? kk / 16 : (kk / 32) * 2;
    return workloads::DecodeNarrow(NarrowFormat::kUE4M3,
                                   static_cast<uint8_t>(scales[row * size_t(groups) + size_t(g)]));
  };
  std::string out(size_t(s.m()) * s.n() * 2, '\0');
  for (int i = 0; i < s.m(); ++i)
    for (int j = 0; j < s.n(); ++j) {
      float acc = 0;
      for (int kk = 0; kk < k; ++kk)
        acc += static_cast<float>(code(in.at("A"), i, kk, fault.a_high_nibble_first) *
                                  scale(in.at("SA"), i, kk) * code(in.at("B"), j, kk) *
                                  scale(in.at("SB"), j, kk));
      const uint16_t bits = workloads::FloatToBf16(acc);
      std::memcpy(&out[2 * (size_t(i) * s.n() + j)], &bits, 2);
    }
  return {{"C", out}};
}

evidence::RowCheck Judge(const contract::ProblemShape& p, contract::InputDistribution dist,
                         uint64_t seed, const workloads::TensorBytes& in,
                         const workloads::TensorBytes& out, int64_t unwritten = 0) {
  evidence::RowCheck rc;
  Nvfp4().Judge(p, Bundled(), dist, seed, in, out, unwritten, &rc);
  return rc;
}

TEST(GemmNvfp4, BundledContractAndExampleAreValid) {
  const contract::Contract c = Bundled();
  EXPECT_TRUE(Nvfp4().CheckContract(c).ok()) << Nvfp4().CheckContract(c);
  for (const auto& r : c.rows()) EXPECT_TRUE(Nvfp4().CheckShape(r.problem()).ok()) << r.name();
  const contract::ValidationPolicy policy = Nvfp4().DefaultPolicy();
  for (const auto& v : policy.cases())
    EXPECT_TRUE(Nvfp4().CheckShape(v.problem()).ok()) << v.name();
  for (const auto& d : Nvfp4().DerivedCases({{"M", 128}, {"N", 64}}))
    EXPECT_TRUE(Nvfp4().CheckShape(d.problem).ok()) << d.name;
  const std::string example =
      testing::ReadText(testing::SourceDir() / "examples/gemm_nvfp4.textproto");
  EXPECT_NE(example.find(Nvfp4().ScheduleSpace()[0].schedule_text), std::string::npos);
  // The tensors the schedule's launch binds, with their packed sizes.
  const auto tensors = Nvfp4().Tensors(Problem(128, 64, 256), c);
  ASSERT_EQ(tensors.size(), 5u);
  EXPECT_EQ(tensors[0].bytes, 128u * 128);  // A: half a byte an element
  EXPECT_EQ(tensors[2].name, "SA");
  EXPECT_EQ(tensors[2].bytes, 128u * 16);  // one scale per 16 of K
  EXPECT_TRUE(tensors[4].output);
}

TEST(GemmNvfp4, BadShapesAndDtypesAreRefusedNamingTheRule) {
  auto shape_error = [](const contract::ProblemShape& p) {
    return std::string(Nvfp4().CheckShape(p).message());
  };
  EXPECT_NE(shape_error(Problem(64, 64, 96)).find("multiple of 64"), std::string::npos);
  EXPECT_NE(shape_error(Problem(0, 64, 64)).find("positive"), std::string::npos);
  EXPECT_NE(shape_error(Problem(1 << 21, 8, 64)).find("over 2^20"), std::string::npos);
  EXPECT_NE(shape_error(contract::ProblemShape()).find("not a gemm_nvfp4 shape"),
            std::string::npos);
  contract::Contract c = Bundled();
  c.set_input_dtype("e4m3");
  EXPECT_NE(Nvfp4().CheckContract(c).message().find("input_dtype 'e4m3'"), std::string::npos);
  c = Bundled();
  c.set_output_dtype("f32");
  EXPECT_FALSE(Nvfp4().CheckContract(c).ok());
}

TEST(GemmNvfp4, PackingIsTwoCodesAByteLowIndexLow) {
  const std::vector<uint8_t> codes = {0x1, 0xF, 0x7, 0x8, 0x0, 0x9};
  const std::vector<uint8_t> packed = workloads::gemm_nvfp4::PackE2M1(codes);
  EXPECT_EQ(packed, (std::vector<uint8_t>{0xF1, 0x87, 0x90}));
  EXPECT_EQ(workloads::gemm_nvfp4::UnpackE2M1(std::string(packed.begin(), packed.end())), codes);
}

TEST(GemmNvfp4, OracleAcceptsTheKernelModelOnEveryCase) {
  const contract::ValidationPolicy policy = Nvfp4().DefaultPolicy();
  for (const auto& c : policy.cases()) {
    SCOPED_TRACE(c.name());
    const uint64_t seed = Fresh();
    const auto in = Nvfp4().MakeInputs(c.problem(), c.inputs(), seed);
    const auto rc = Judge(c.problem(), c.inputs(), seed, in, KernelModel(c.problem(), in));
    EXPECT_TRUE(rc.passed()) << rc.failure() << " (seed " << seed << ")";
    EXPECT_EQ(rc.sampled_rows(), 0);
  }
}

TEST(GemmNvfp4, InputsCoverTheirDistributions) {
  const contract::ProblemShape p = Problem(64, 32, 256);
  const uint64_t seed = Fresh();
  auto scales = [&](contract::InputDistribution d) {
    const auto in = Nvfp4().MakeInputs(p, d, seed);
    std::vector<double> v;
    for (char c : in.at("SA"))
      v.push_back(workloads::DecodeNarrow(NarrowFormat::kUE4M3, uint8_t(c)));
    return v;
  };
  int zero = 0, subnormal = 0, top = 0;
  for (double v : scales(contract::UNIFORM)) {
    ASSERT_TRUE(std::isfinite(v));
    zero += v == 0;
    subnormal += v != 0 && v < std::ldexp(1.0, -6);
    top += v >= 256;
  }
  EXPECT_GT(subnormal, 0);
  EXPECT_GT(top, 0);
  for (double v : scales(contract::EXTREME_MAGNITUDE))
    EXPECT_TRUE(v >= 256 || (v > 0 && v < std::ldexp(1.0, -6))) << v;
  int nan = 0;
  for (double v : scales(contract::SPECIAL_VALUES)) nan += std::isnan(v);
  EXPECT_EQ(nan, 1);
  // Every E2M1 code appears under UNIFORM.
  const auto uniform = Nvfp4().MakeInputs(p, contract::UNIFORM, seed);
  std::set<int> seen;
  for (uint8_t c : workloads::gemm_nvfp4::UnpackE2M1(uniform.at("A"))) seen.insert(c);
  EXPECT_EQ(seen.size(), 16u);
  // Cancellation: even columns of C are exactly zero (a double holds these sums exactly: the
  // scaled products span 2^-20 .. 2^23 with at most 14 significant bits).
  const auto in = Nvfp4().MakeInputs(p, contract::CANCELLATION, seed);
  const auto a = workloads::gemm_nvfp4::UnpackE2M1(in.at("A"));
  const auto b = workloads::gemm_nvfp4::UnpackE2M1(in.at("B"));
  auto scale = [](const std::string& s, size_t at) {
    return workloads::DecodeNarrow(NarrowFormat::kUE4M3, uint8_t(s[at]));
  };
  for (size_t i = 0; i < 64; ++i)
    for (size_t j = 0; j < 32; j += 2) {
      double sum = 0;
      for (size_t k = 0; k < 256; ++k)
        sum += workloads::DecodeNarrow(NarrowFormat::kE2M1, a[i * 256 + k]) *
               scale(in.at("SA"), i * 16 + k / 16) *
               workloads::DecodeNarrow(NarrowFormat::kE2M1, b[j * 256 + k]) *
               scale(in.at("SB"), j * 16 + k / 16);
      EXPECT_EQ(sum, 0.0) << "C[" << i << "][" << j << "]";
    }
}

TEST(GemmNvfp4, OracleRejectsWrongUnwrittenNanPolicyGroupingAndNibbleOrder) {
  const contract::ProblemShape p = Problem(96, 80, 320);
  const uint64_t seed = Fresh();
  const auto in = Nvfp4().MakeInputs(p, contract::UNIFORM, seed);
  const auto good = KernelModel(p, in);
  ASSERT_TRUE(Judge(p, contract::UNIFORM, seed, in, good).passed());

  auto wrong = good;
  uint16_t bits;
  std::memcpy(&bits, wrong["C"].data() + 2 * 777, 2);
  bits = workloads::FloatToBf16(2.0f * workloads::Bf16ToFloat(bits) + 1.0f);
  std::memcpy(wrong["C"].data() + 2 * 777, &bits, 2);
  auto rc = Judge(p, contract::UNIFORM, seed, in, wrong);
  EXPECT_FALSE(rc.passed());
  EXPECT_EQ(rc.out_of_tolerance(), 1);

  EXPECT_FALSE(Judge(p, contract::UNIFORM, seed, in, good, 5).passed());

  rc = Judge(p, contract::UNIFORM, seed, in, KernelModel(p, in, {.scale_group = 32}));
  EXPECT_FALSE(rc.passed());
  EXPECT_GT(rc.out_of_tolerance() + rc.nonfinite_policy_violations(), 100);
  rc = Judge(p, contract::UNIFORM, seed, in, KernelModel(p, in, {.a_high_nibble_first = true}));
  EXPECT_FALSE(rc.passed());
  EXPECT_GT(rc.out_of_tolerance() + rc.nonfinite_policy_violations(), 100);

  // A NaN scale's row must be NaN: a finite value there breaks the policy.
  const contract::ProblemShape q = Problem(40, 24, 128);
  const auto nan_in = Nvfp4().MakeInputs(q, contract::SPECIAL_VALUES, seed);
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

TEST(GemmNvfp4, SpaceStartsWithItsList) {
  const auto list = Nvfp4().ScheduleSpace();
  const auto space = Nvfp4().SearchSpace();
  ASSERT_EQ(list.size(), 2u);
  ASSERT_GE(space.size(), 12u);
  for (size_t i = 0; i < list.size(); ++i) EXPECT_EQ(space[i].label, list[i].label);
  for (const auto& prop : space) EXPECT_NE(prop.label.find("nvfp4"), std::string::npos);
}

}  // namespace
}  // namespace cake
