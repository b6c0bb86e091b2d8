// The block-scaled MMA's CPU model: the forms PTX allows and the ones it refuses (naming both
// sides of a mismatch), the exact accumulator against cases where float64 summation is wrong,
// and the model against a float64 reference on fresh random problems of every form.
#include <cmath>
#include <limits>
#include <random>

#include <gtest/gtest.h>

#include "workloads/block_scaled_mma.h"
#include "workloads/gemm_blockscaled/fragments.h"

namespace cake::workloads::gemm_blockscaled {
namespace {

using F = NarrowFormat;

TEST(MmaForm, AllowsWhatPtxAllowsAndNamesWhatItRefuses) {
  EXPECT_TRUE(MakeMmaForm(MmaKind::kLegacyF8, F::kE4M3, F::kE5M2).ok());
  EXPECT_TRUE(MakeMmaForm(MmaKind::kF8F6F4, F::kE3M2, F::kE2M1).ok());
  EXPECT_EQ(MakeMmaForm(MmaKind::kMxF8F6F4, F::kE4M3, F::kE4M3, F::kUE8M0, 32)->k, 32);
  EXPECT_EQ(MakeMmaForm(MmaKind::kMxF4, F::kE2M1, F::kE2M1, F::kUE8M0, 32)->k, 64);
  EXPECT_EQ(MakeMmaForm(MmaKind::kMxF4NvF4, F::kE2M1, F::kE2M1, F::kUE4M3, 16)->group, 16);
  EXPECT_TRUE(MakeMmaForm(MmaKind::kMxF4NvF4, F::kE2M1, F::kE2M1, F::kUE8M0, 32).ok());

  auto refused = [](absl::StatusOr<MmaForm> f, std::vector<std::string> words) {
    ASSERT_FALSE(f.ok());
    EXPECT_EQ(f.status().code(), absl::StatusCode::kInvalidArgument);
    for (const std::string& w : words)
      EXPECT_NE(f.status().message().find(w), std::string::npos) << f.status().message();
  };
  refused(MakeMmaForm(MmaKind::kLegacyF8, F::kE2M1, F::kE4M3), {"e4m3 or e5m2"});
  refused(MakeMmaForm(MmaKind::kMxF4, F::kE4M3, F::kE2M1, F::kUE8M0, 32), {"e2m1"});
  refused(MakeMmaForm(MmaKind::kF8F6F4, F::kE4M3, F::kE4M3, F::kUE8M0, 32), {"no block scale"});
  refused(MakeMmaForm(MmaKind::kMxF8F6F4, F::kE4M3, F::kE4M3), {"needs a block scale"});
  // A group that does not match the instruction: both named.
  refused(MakeMmaForm(MmaKind::kMxF8F6F4, F::kE4M3, F::kE4M3, F::kUE8M0, 16),
          {"group of 16", "ue8m0", "32 elements"});
  refused(MakeMmaForm(MmaKind::kMxF4NvF4, F::kE2M1, F::kE2M1, F::kUE4M3, 32),
          {"group of 32", "ue4m3", "16 elements", "scale_vec::4X"});
  refused(MakeMmaForm(MmaKind::kMxF8F6F4, F::kE4M3, F::kE4M3, F::kUE4M3, 16), {"ue4m3"});
}

TEST(ExactSum, IsExactWhereFloat64IsNot) {
  ExactSum s;
  ASSERT_TRUE(s.Add(std::ldexp(1.0, 100)));
  ASSERT_TRUE(s.Add(1.0));
  ASSERT_TRUE(s.Add(-std::ldexp(1.0, 100)));
  EXPECT_EQ(s.RoundToFloat(), 1.0f);  // float64: 2^100 + 1 - 2^100 = 0
  // Many small terms below float64's resolution of a large one still count.
  ExactSum many;
  ASSERT_TRUE(many.Add(std::ldexp(1.0, 60)));
  for (int i = 0; i < 4096; ++i) ASSERT_TRUE(many.Add(1.0));
  ASSERT_TRUE(many.Add(-std::ldexp(1.0, 60)));
  EXPECT_EQ(many.RoundToFloat(), 4096.0f);
  // Rounding to FP32: ties to even, the sticky bit, overflow, subnormals.
  auto one = [](std::initializer_list<double> terms) {
    ExactSum e;
    for (double t : terms) EXPECT_TRUE(e.Add(t));
    return e.RoundToFloat();
  };
  EXPECT_EQ(one({1.0, std::ldexp(1.0, -24)}), 1.0f);  // tie, even stays
  EXPECT_EQ(one({1.0, std::ldexp(1.0, -24), std::ldexp(1.0, -300)}), 1.0f + std::ldexp(1.0f, -23));
  EXPECT_EQ(one({1.0 + std::ldexp(1.0, -23), std::ldexp(1.0, -24)}), 1.0f + std::ldexp(1.0f, -22));
  // FP32's largest value is (2 - 2^-23) 2^127; from halfway to 2^128 on, infinity.
  EXPECT_EQ(one({std::ldexp(1.9999999, 127)}), std::numeric_limits<float>::max());
  EXPECT_TRUE(std::isinf(one({std::ldexp(1.99999997, 127)})));
  EXPECT_TRUE(std::isinf(one({std::ldexp(1.0, 127), std::ldexp(1.0, 127)})));
  EXPECT_EQ(one({std::ldexp(1.0, -149)}), std::ldexp(1.0f, -149));
  EXPECT_EQ(one({std::ldexp(1.0, -150)}), 0.0f);                    // tie to even zero
  EXPECT_EQ(one({std::ldexp(1.5, -150)}), std::ldexp(1.0f, -149));  // above the tie
  EXPECT_EQ(one({-3.0, 1.0}), -2.0f);
  EXPECT_TRUE(std::isnan(one({INFINITY, -INFINITY})));
  EXPECT_TRUE(std::isnan(one({1.0, NAN})));
  EXPECT_EQ(one({INFINITY, 1e100}), INFINITY);
  ExactSum out_of_range;
  EXPECT_FALSE(out_of_range.Add(std::ldexp(1.0, -420)));
  EXPECT_FALSE(out_of_range.Add(std::ldexp(1.0, 500)));
}

// Fresh random operands of a form: every finite code of each format (NaN codes left out), scales
// drawn from a window of `scale_exponents` around 1.
MmaOperands RandomOperands(const MmaForm& f, std::mt19937_64& rng, int scale_exponents) {
  auto draw = [&](F format, size_t n, bool scale) {
    std::vector<uint32_t> codes;
    std::uniform_int_distribution<uint32_t> code(0, (1u << Info(format).bits) - 1);
    while (codes.size() < n) {
      const uint32_t c = code(rng);
      const double v = DecodeNarrow(format, c);
      if (!std::isfinite(v)) continue;
      if (scale && std::fabs(std::log2(v)) > scale_exponents) continue;
      codes.push_back(c);
    }
    return codes;
  };
  MmaOperands o;
  o.a = draw(f.a, 16 * f.k, false);
  o.b = draw(f.b, 8 * f.k, false);
  if (f.scale) {
    o.scale_a = draw(*f.scale, 16 * (f.k / f.group), true);
    o.scale_b = draw(*f.scale, 8 * (f.k / f.group), true);
  }
  std::uniform_real_distribution<float> c(-64, 64);
  for (int i = 0; i < 128; ++i) o.c.push_back(c(rng));
  return o;
}

std::vector<MmaForm> EveryForm() {
  std::vector<MmaForm> forms;
  const F f8f6f4[] = {F::kE4M3, F::kE5M2, F::kE3M2, F::kE2M3, F::kE2M1};
  for (F a : {F::kE4M3, F::kE5M2})
    for (F b : {F::kE4M3, F::kE5M2}) forms.push_back(*MakeMmaForm(MmaKind::kLegacyF8, a, b));
  for (F a : f8f6f4)
    for (F b : f8f6f4) {
      forms.push_back(*MakeMmaForm(MmaKind::kF8F6F4, a, b));
      forms.push_back(*MakeMmaForm(MmaKind::kMxF8F6F4, a, b, F::kUE8M0, 32));
    }
  forms.push_back(*MakeMmaForm(MmaKind::kMxF4, F::kE2M1, F::kE2M1, F::kUE8M0, 32));
  forms.push_back(*MakeMmaForm(MmaKind::kMxF4NvF4, F::kE2M1, F::kE2M1, F::kUE8M0, 32));
  forms.push_back(*MakeMmaForm(MmaKind::kMxF4NvF4, F::kE2M1, F::kE2M1, F::kUE4M3, 16));
  return forms;
}

// Against float64 summation (products exact; the sum carries float64's own error, bounded by
// (k + 1) 2^-53 sum |terms|): within that plus half an FP32 ulp of the reference.
TEST(MmaReference, MatchesAFloat64ReferenceOnRandomProblemsOfEveryForm) {
  std::mt19937_64 rng(std::random_device{}());
  for (const MmaForm& f : EveryForm()) {
    SCOPED_TRACE(f.Describe());
    for (int trial = 0; trial < 4; ++trial) {
      const MmaOperands o = RandomOperands(f, rng, 12);
      const auto d = MmaReference(f, o);
      ASSERT_TRUE(d.ok()) << d.status();
      const int groups = f.scale ? f.k / f.group : 1;
      for (int i = 0; i < 16; ++i)
        for (int j = 0; j < 8; ++j) {
          double sum = o.c[i * 8 + j], magnitude = std::fabs(sum);
          for (int kk = 0; kk < f.k; ++kk) {
            double p = DecodeNarrow(f.a, o.a[i * f.k + kk]) * DecodeNarrow(f.b, o.b[j * f.k + kk]);
            if (f.scale)
              p *= DecodeNarrow(*f.scale, o.scale_a[i * groups + kk / f.group]) *
                   DecodeNarrow(*f.scale, o.scale_b[j * groups + kk / f.group]);
            sum += p;
            magnitude += std::fabs(p);
          }
          const double got = (*d)[i * 8 + j];
          const double bound = (f.k + 1) * std::ldexp(magnitude, -53) +
                               std::ldexp(std::fabs(sum), -24) + std::ldexp(1.0, -149);
          ASSERT_LE(std::fabs(got - sum), bound) << i << "," << j;
        }
    }
  }
}

// With unit scales (UE8M0 code 127 = 1.0) the block-scaled form computes what kind::f8f6f4 does
// on the same operands: in the model by construction of the mathematics; on hardware it is a
// measurement the SM12x qualification makes.
TEST(MmaReference, UnitScalesGiveTheUnscaledResult) {
  std::mt19937_64 rng(std::random_device{}());
  const MmaForm plain = *MakeMmaForm(MmaKind::kF8F6F4, F::kE4M3, F::kE4M3);
  const MmaForm scaled = *MakeMmaForm(MmaKind::kMxF8F6F4, F::kE4M3, F::kE4M3, F::kUE8M0, 32);
  MmaOperands o = RandomOperands(plain, rng, 0);
  const auto want = MmaReference(plain, o);
  o.scale_a.assign(16, 127);
  o.scale_b.assign(8, 127);
  EXPECT_EQ(*MmaReference(scaled, o), *want);
  // A scale of 2 on one row of A doubles that row exactly (C zero there).
  for (int j = 0; j < 8; ++j) o.c[3 * 8 + j] = 0;
  const auto unit = *MmaReference(scaled, o);
  o.scale_a[3] = 128;
  const auto doubled = *MmaReference(scaled, o);
  for (int j = 0; j < 8; ++j) EXPECT_EQ(doubled[3 * 8 + j], 2 * unit[3 * 8 + j]);
  EXPECT_EQ(doubled[0], unit[0]);
}

TEST(MmaReference, RefusesOperandsThatDoNotFitTheForm) {
  const MmaForm nv = *MakeMmaForm(MmaKind::kMxF4NvF4, F::kE2M1, F::kE2M1, F::kUE4M3, 16);
  std::mt19937_64 rng(std::random_device{}());
  MmaOperands o = RandomOperands(nv, rng, 3);
  ASSERT_TRUE(MmaReference(nv, o).ok());
  MmaOperands short_scales = o;
  short_scales.scale_a.pop_back();
  EXPECT_NE(MmaReference(nv, short_scales).status().message().find("scale_A holds 63"),
            std::string::npos);
  MmaOperands wide_code = o;
  wide_code.a[5] = 16;  // E2M1 is four bits
  EXPECT_NE(MmaReference(nv, wide_code).status().message().find("A[5] = 16"), std::string::npos);
  MmaOperands signed_scale = o;
  signed_scale.scale_b[0] = 0x80;  // UE4M3 has no sign bit
  EXPECT_FALSE(MmaReference(nv, signed_scale).ok());
  // A NaN scale (UE4M3 0x7F) makes its row NaN and leaves the others finite.
  o.scale_a[2 * 4] = 0x7F;
  const auto d = *MmaReference(nv, o);
  EXPECT_TRUE(std::isnan(d[2 * 8 + 5]));
  EXPECT_FALSE(std::isnan(d[1 * 8 + 5]));
}

// The GEMM oracle is the MMA model tiled: on a 16 x 8 x k problem it equals MmaReference with C
// zero, bit for bit; on a larger fresh random problem every element equals the float of the
// float64 sum where that sum is exact (moderate scales), and it refuses sizes that do not fit.
TEST(GemmReference, IsTheMmaModelTiled) {
  std::mt19937_64 rng(std::random_device{}());
  for (const MmaForm& f : {*MakeMmaForm(MmaKind::kMxF8F6F4, F::kE4M3, F::kE5M2, F::kUE8M0, 32),
                           *MakeMmaForm(MmaKind::kMxF4NvF4, F::kE2M1, F::kE2M1, F::kUE4M3, 16),
                           *MakeMmaForm(MmaKind::kLegacyF8, F::kE4M3, F::kE4M3)}) {
    SCOPED_TRACE(f.Describe());
    MmaOperands o = RandomOperands(f, rng, 6);
    o.c.assign(128, 0.0f);
    GemmOperands g{16, 8, f.k, o.a, o.b, o.scale_a, o.scale_b};
    EXPECT_EQ(*GemmReference(f, g), *MmaReference(f, o));
  }
  // 40 x 24 x 256 E2M1 with UE4M3 scales of 2^-3 .. 2^3: a product has at most 12 significant
  // bits, its lowest at or above 2^-19, and a sum of 256 stays below 2^21: 40 bits, which
  // float64 adds exactly.
  const MmaForm fp4 = *MakeMmaForm(MmaKind::kMxF4NvF4, F::kE2M1, F::kE2M1, F::kUE4M3, 16);
  GemmOperands g{40, 24, 256, {}, {}, {}, {}};
  std::uniform_int_distribution<uint32_t> code(0, 15), scale(0x20, 0x50);  // UE4M3 2^-3 .. 2^3
  for (int i = 0; i < g.m * g.k; ++i) g.a.push_back(code(rng));
  for (int i = 0; i < g.n * g.k; ++i) g.b.push_back(code(rng));
  for (int i = 0; i < g.m * g.k / 16; ++i) g.scale_a.push_back(scale(rng));
  for (int i = 0; i < g.n * g.k / 16; ++i) g.scale_b.push_back(scale(rng));
  const auto c = GemmReference(fp4, g);
  ASSERT_TRUE(c.ok()) << c.status();
  for (int i = 0; i < g.m; ++i)
    for (int j = 0; j < g.n; ++j) {
      double sum = 0;
      for (int kk = 0; kk < g.k; ++kk)
        sum += DecodeNarrow(F::kE2M1, g.a[i * g.k + kk]) *
               DecodeNarrow(F::kUE4M3, g.scale_a[i * (g.k / 16) + kk / 16]) *
               DecodeNarrow(F::kE2M1, g.b[j * g.k + kk]) *
               DecodeNarrow(F::kUE4M3, g.scale_b[j * (g.k / 16) + kk / 16]);
      ASSERT_EQ((*c)[i * g.n + j], static_cast<float>(sum)) << i << "," << j;
    }
  GemmOperands ragged = g;
  ragged.k = 250;
  EXPECT_NE(GemmReference(fp4, ragged).status().message().find("multiple of the 16-element"),
            std::string::npos);
}

// The m16n8k32 8-bit fragment maps place every element of A, B and C in exactly one (lane, slot),
// and packing fresh random codes then reading each register byte back through the map returns
// the code it came from.
TEST(Fragments, EveryElementHasExactlyOneLaneAndSlot) {
  std::vector<int> a(16 * 32, 0), b(32 * 8, 0), c(16 * 8, 0);
  for (int lane = 0; lane < 32; ++lane) {
    for (int i = 0; i < 16; ++i) ++a[FragmentA8(lane, i).row * 32 + FragmentA8(lane, i).col];
    for (int i = 0; i < 8; ++i) ++b[FragmentB8(lane, i).row * 8 + FragmentB8(lane, i).col];
    for (int i = 0; i < 4; ++i) ++c[FragmentC(lane, i).row * 8 + FragmentC(lane, i).col];
  }
  for (int n : a) EXPECT_EQ(n, 1);
  for (int n : b) EXPECT_EQ(n, 1);
  for (int n : c) EXPECT_EQ(n, 1);
  std::mt19937_64 rng(std::random_device{}());
  std::vector<uint32_t> codes_a(16 * 32), codes_b(8 * 32);
  for (auto& v : codes_a) v = rng() & 0xFF;
  for (auto& v : codes_b) v = rng() & 0xFF;
  for (int lane = 0; lane < 32; ++lane) {
    uint32_t ra[4], rb[2];
    PackA8(codes_a.data(), lane, ra);
    PackB8(codes_b.data(), lane, rb);
    for (int i = 0; i < 16; ++i) {
      const MatrixIndex e = FragmentA8(lane, i);
      EXPECT_EQ((ra[i / 4] >> (8 * (i % 4))) & 0xFF, codes_a[e.row * 32 + e.col]);
    }
    for (int i = 0; i < 8; ++i) {
      const MatrixIndex e = FragmentB8(lane, i);
      EXPECT_EQ((rb[i / 4] >> (8 * (i % 4))) & 0xFF, codes_b[e.col * 32 + e.row]);
    }
  }
  // Lane 5 (group 1, thread 1): A byte 0 is (1, 4), byte 4 (register 1) is row 9, byte 8 column
  // 20; B byte 4 is k 20 of column 1; C value 3 is (9, 3).
  EXPECT_EQ(FragmentA8(5, 0).row, 1);
  EXPECT_EQ(FragmentA8(5, 0).col, 4);
  EXPECT_EQ(FragmentA8(5, 4).row, 9);
  EXPECT_EQ(FragmentA8(5, 8).col, 20);
  EXPECT_EQ(FragmentB8(5, 4).row, 20);
  EXPECT_EQ(FragmentB8(5, 4).col, 1);
  EXPECT_EQ(FragmentC(5, 3).row, 9);
  EXPECT_EQ(FragmentC(5, 3).col, 3);
}

}  // namespace
}  // namespace cake::workloads::gemm_blockscaled
