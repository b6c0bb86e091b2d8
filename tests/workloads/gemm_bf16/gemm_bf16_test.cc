// The case catalogue and its inputs, the NaN/Inf policy comparison, and the fingerprint math the
// timed-output check rests on (host twins of the GPU helpers), with fresh random inputs.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <set>

#include "workloads/gemm_bf16/gemm_bf16.h"
#include "workloads/numeric.h"

namespace cake {
namespace {

using workloads::Case;
using workloads::gemm_bf16::Problem;
using workloads::gemm_bf16::Shape;

const workloads::Workload& Gemm() { return workloads::gemm_bf16::GemmWorkload(); }

uint64_t Fresh() { return std::random_device{}() * 0x9e3779b97f4a7c15ull ^ std::random_device{}(); }

TEST(CaseCatalogue, RowsThenPolicyCasesThenPartialTilesDerivedFromTheTile) {
  contract::Contract c;
  auto* r = c.add_rows();
  r->set_name("big");
  *r->mutable_problem() = Problem(4096, 4096, 4096);
  auto* h = c.add_rows();
  h->set_name("secret");
  *h->mutable_problem() = Problem(100, 100, 104);
  h->set_held_out(true);
  c.set_operation("gemm_bf16_tn");
  const auto cases = workloads::CaseCatalogue(c, Gemm(), {{"M", 128}, {"N", 64}});
  ASSERT_GE(cases.size(), 2u + 5u + 3u);
  EXPECT_EQ(cases[0].name, "big");
  EXPECT_EQ(cases[0].role, "discovery");
  EXPECT_EQ(cases[1].role, "held_out");
  EXPECT_TRUE(cases[1].held_out);
  std::set<contract::InputDistribution> dists;
  std::set<std::string> names;
  for (const Case& g : cases) {
    dists.insert(g.inputs);
    EXPECT_TRUE(names.insert(g.name).second) << "duplicate case " << g.name;
    EXPECT_EQ(g.problem.gemm_bf16().k() % 8, 0) << g.name;
  }
  EXPECT_EQ(dists.size(), 5u) << "uniform, extreme, cancellation, peaked, special values";
  const Case& plus_one = cases.back();
  EXPECT_EQ(plus_one.name, "partial_tile_plus_one");
  EXPECT_EQ(plus_one.problem.gemm_bf16().m(), 2 * 128 + 1);
  EXPECT_EQ(plus_one.problem.gemm_bf16().n(), 64 + 1);
  // Instrumented runs get the small cases only.
  for (const Case& g : workloads::SmallCases(c, Gemm(), {{"M", 128}, {"N", 64}}, int64_t{16} << 20))
    EXPECT_LE(Gemm().WorkUnits(g.problem), int64_t{16} << 20) << g.name;
}

TEST(CaseInputs, EveryDistributionIsFreshNonZeroAndHasItsProperty) {
  const uint64_t seed = Fresh();
  const auto s = Shape(64, 48, 128);
  const auto u1 = workloads::gemm_bf16::MakeInputs(s, contract::UNIFORM, seed);
  const auto u2 = workloads::gemm_bf16::MakeInputs(s, contract::UNIFORM, seed + 1);
  EXPECT_NE(u1.a, u2.a) << "a new seed draws new inputs";
  EXPECT_EQ(u1.a, workloads::gemm_bf16::MakeInputs(s, contract::UNIFORM, seed).a)
      << "a seed replays";
  int zeros = 0;
  for (uint16_t v : u1.a) zeros += v == 0 || v == 0x8000;
  EXPECT_LT(zeros, 5) << "never test on zeros";

  // Cancellation: even output columns are exactly zero in the oracle, odd ones are not.
  const auto cz = workloads::gemm_bf16::MakeInputs(s, contract::CANCELLATION, seed);
  const auto ref = workloads::gemm_bf16::ReferenceGemm(cz.a, cz.b, s.m(), s.n(), s.k());
  double odd = 0;
  for (int i = 0; i < s.m(); ++i)
    for (int j = 0; j < s.n(); ++j) {
      if (j % 2 == 0)
        EXPECT_EQ(ref[size_t(i) * s.n() + j], 0.0);
      else
        odd += std::fabs(ref[size_t(i) * s.n() + j]);
    }
  EXPECT_GT(odd, 1.0);

  // Special values: exactly one NaN row and one +-Inf/NaN column in the oracle.
  const auto sv = workloads::gemm_bf16::MakeInputs(s, contract::SPECIAL_VALUES, seed);
  const auto sref = workloads::gemm_bf16::ReferenceGemm(sv.a, sv.b, s.m(), s.n(), s.k());
  int nan_rows = 0, inf = 0;
  for (int i = 0; i < s.m(); ++i) {
    bool all_nan = true;
    for (int j = 0; j < s.n(); ++j) {
      all_nan &= std::isnan(sref[size_t(i) * s.n() + j]);
      inf += std::isinf(sref[size_t(i) * s.n() + j]);
    }
    nan_rows += all_nan;
  }
  EXPECT_EQ(nan_rows, 1);
  EXPECT_GE(inf, s.m() - 2);

  // Extreme magnitude: exact power-of-two scaling of uniform values, products far past 2^64.
  const auto ex = workloads::gemm_bf16::MakeInputs(s, contract::EXTREME_MAGNITUDE, seed);
  double biggest = 0;
  for (uint16_t v : ex.a) biggest = std::max(biggest, double(std::fabs(workloads::Bf16ToFloat(v))));
  EXPECT_GT(biggest, std::ldexp(1.0, 46));
  EXPECT_EQ(workloads::gemm_bf16::AbsoluteToleranceScale(contract::EXTREME_MAGNITUDE),
            std::ldexp(1.0, 96));

  // Peaked: one +-1024 per row of A.
  const auto pk = workloads::gemm_bf16::MakeInputs(s, contract::PEAKED, seed);
  for (int i = 0; i < s.m(); ++i) {
    int peaks = 0;
    for (int k = 0; k < s.k(); ++k)
      peaks += std::fabs(workloads::Bf16ToFloat(pk.a[size_t(i) * s.k() + k])) == 1024.f;
    EXPECT_EQ(peaks, 1);
  }
}

TEST(PolicyComparison, NonFiniteOutputsMustMatchTheOracleExactly) {
  const std::vector<double> ref = {1.0, NAN, INFINITY, -INFINITY, 0.0};
  EXPECT_TRUE(
      workloads::CompareUnderPolicy({1.0, NAN, INFINITY, -INFINITY, 0.001}, ref, 0.01, 0.01, 0.1)
          .passed);
  auto wrong_sign =
      workloads::CompareUnderPolicy({1.0, NAN, -INFINITY, -INFINITY, 0}, ref, 0.01, 0.01, 0.1);
  EXPECT_FALSE(wrong_sign.passed);
  EXPECT_EQ(wrong_sign.policy_violations, 1);
  auto nan_for_finite =
      workloads::CompareUnderPolicy({NAN, NAN, INFINITY, -INFINITY, 0}, ref, 0.01, 0.01, 0.1);
  EXPECT_FALSE(nan_for_finite.passed);
  EXPECT_EQ(nan_for_finite.numbers.non_finite, 1);
  auto finite_for_nan =
      workloads::CompareUnderPolicy({1, 5, INFINITY, -INFINITY, 0}, ref, 0.01, 0.01, 0.1);
  EXPECT_FALSE(finite_for_nan.passed);
}

TEST(Fingerprint, TwinsAgreeCorrectOutputsPassAndStaleOnesFail) {
  std::mt19937_64 rng(Fresh());
  const int m = 96, n = 80, k = 64;
  auto a = workloads::RandomBf16(size_t(m) * k, rng), b = workloads::RandomBf16(size_t(n) * k, rng);
  const auto ref = workloads::gemm_bf16::ReferenceGemm(a, b, m, n, k);
  int stale_caught = 0, trials = 200;
  for (int t = 0; t < trials; ++t) {
    const uint64_t su = rng(), sv = rng();
    double scale = 0;
    const auto oracle = workloads::gemm_bf16::OracleFingerprint(a, b, m, n, k, su, sv, &scale);
    const auto exact = workloads::gemm_bf16::OutputFingerprint(ref, m, n, su, sv);
    for (int p = 0; p < 4; ++p) EXPECT_NEAR(exact[p], oracle[p], 1e-9 * scale);
    // The BF16-rounded output (what a correct kernel writes) is well inside the tolerance.
    std::vector<double> rounded(ref.size());
    for (size_t i = 0; i < ref.size(); ++i)
      rounded[i] = workloads::Bf16ToFloat(workloads::FloatToBf16(float(ref[i])));
    const auto obs = workloads::gemm_bf16::OutputFingerprint(rounded, m, n, su, sv);
    const double tol = workloads::gemm_bf16::FingerprintTolerance(scale, 0.008);
    for (int p = 0; p < 4; ++p) EXPECT_LE(std::fabs(obs[p] - oracle[p]), tol);
    // The output of other inputs (a stale result) fails at least one projection.
    auto a2 = workloads::RandomBf16(a.size(), rng);
    const auto stale = workloads::gemm_bf16::OutputFingerprint(
        workloads::gemm_bf16::ReferenceGemm(a2, b, m, n, k), m, n, su, sv);
    bool caught = false;
    for (int p = 0; p < 4; ++p) caught |= std::fabs(stale[p] - oracle[p]) > tol;
    stale_caught += caught;
  }
  EXPECT_GE(stale_caught, trials - 1) << "4 projections miss a stale output ~1e-6 of the time";
}

TEST(Fill, HostTwinIsUniformInRangeAndSeeded) {
  const uint64_t seed = Fresh();
  double sum = 0, sum2 = 0;
  const int n = 100000;
  for (int i = 0; i < n; ++i) {
    const float v = workloads::Bf16ToFloat(workloads::UniformBf16At(seed, uint64_t(i)));
    ASSERT_GE(v, -1.f);
    ASSERT_LE(v, 1.f);
    sum += v, sum2 += double(v) * v;
  }
  EXPECT_NEAR(sum / n, 0, 0.01);
  EXPECT_NEAR(sum2 / n, 1.0 / 3, 0.01);
  EXPECT_NE(workloads::UniformBf16At(seed, 7), workloads::UniformBf16At(seed + 1, 7));
}

// The validation inputs' generator: the same rng state gives the same values (filled in chunks on
// several threads), uniform over [lo, hi) in every chunk, chunk boundaries included, and the rng
// moves on by one draw.
TEST(RandomBf16, SeededUniformAndTheSameWhateverTheThreads) {
  const uint64_t seed = Fresh();
  const size_t n = (size_t{5} << 20) + 3;  // five full chunks and a short one
  std::mt19937_64 a(seed), b(seed);
  const std::vector<uint16_t> x = workloads::RandomBf16(n, a, -2.f, 6.f);
  const std::vector<uint16_t> y = workloads::RandomBf16(n, b, -2.f, 6.f);
  ASSERT_EQ(x, y);
  EXPECT_EQ(a(), b());
  std::mt19937_64 c(seed + 1);
  EXPECT_NE(workloads::RandomBf16(n, c, -2.f, 6.f), x);
  std::mt19937_64 d(seed);
  const std::vector<uint16_t> next =
      (workloads::RandomBf16(16, d, -2.f, 6.f), workloads::RandomBf16(16, d, -2.f, 6.f));
  EXPECT_NE(next, std::vector<uint16_t>(x.begin(), x.begin() + 16)) << "the rng moved on";
  for (size_t chunk = 0; chunk < 6; ++chunk) {
    const size_t begin = chunk << 20, end = std::min(n, (chunk + 1) << 20);
    double sum = 0, sum2 = 0;
    int64_t low = 0;
    for (size_t i = begin; i < end; ++i) {
      const double v = workloads::Bf16ToFloat(x[i]);
      ASSERT_GE(v, -2.0);
      ASSERT_LE(v, 6.0);
      sum += v, sum2 += v * v;
      low += v < 0;
    }
    const double m = double(end - begin);
    if (m < 1000) continue;
    EXPECT_NEAR(sum / m, 2.0, 0.01) << chunk;
    EXPECT_NEAR(sum2 / m - (sum / m) * (sum / m), 64.0 / 12, 0.02) << chunk;
    EXPECT_NEAR(double(low) / m, 0.25, 0.002) << chunk;
  }
  // Neighbouring chunks are not copies of each other.
  EXPECT_NE(std::vector<uint16_t>(x.begin(), x.begin() + 64),
            std::vector<uint16_t>(x.begin() + (1 << 20), x.begin() + (1 << 20) + 64));
}

}  // namespace
}  // namespace cake
