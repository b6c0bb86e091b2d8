// The narrow-format codecs, exhaustively: every code of every format decodes to the value its
// definition gives (counted specials, extremes, spacing), encodes back to itself, and every gap
// between neighbours rounds as stated under each rounding mode and overflow policy. The
// independent cross-check against ml_dtypes is narrow_float_crosscheck.py.
#include "workloads/narrow_float.h"

#include <cmath>
#include <limits>
#include <random>

#include <gtest/gtest.h>

namespace cake::workloads {
namespace {

using F = NarrowFormat;

std::vector<uint32_t> PositiveFiniteCodes(F f) {
  std::vector<uint32_t> out;
  const NarrowFormatInfo& i = Info(f);
  for (uint32_t c = 0; c < (1u << (i.exponent_bits + i.mantissa_bits)); ++c)
    if (std::isfinite(DecodeNarrow(f, c))) out.push_back(c);
  return out;
}

TEST(NarrowFloat, ExtremesSpecialsAndCountsOfEveryFormat) {
  struct Expect {
    F f;
    double max, min_positive;
    int nan_codes, infinities;
  };
  const Expect table[] = {
      {F::kE4M3, 448, std::ldexp(1.0, -9), 2, 0},
      {F::kE5M2, 57344, std::ldexp(1.0, -16), 6, 2},
      {F::kE3M2, 28, 0.0625, 0, 0},
      {F::kE2M3, 7.5, 0.125, 0, 0},
      {F::kE2M1, 6, 0.5, 0, 0},
      {F::kUE8M0, std::ldexp(1.0, 127), std::ldexp(1.0, -127), 1, 0},
      {F::kUE4M3, 448, std::ldexp(1.0, -9), 1, 0},
  };
  for (const Expect& e : table) {
    const NarrowFormatInfo& i = Info(e.f);
    SCOPED_TRACE(std::string(i.name));
    EXPECT_EQ(MaxFinite(e.f), e.max);
    EXPECT_EQ(MinPositive(e.f), e.min_positive);
    int nans = 0, infinities = 0, invalid = 0;
    for (uint32_t c = 0; c < (1u << i.bits); ++c) {
      const double v = DecodeNarrow(e.f, c);
      nans += IsNanCode(e.f, c);
      infinities += std::isinf(v);
      invalid += std::isnan(v) && !IsNanCode(e.f, c);
    }
    EXPECT_EQ(nans, e.nan_codes);
    EXPECT_EQ(infinities, e.infinities);
    // Only UE4M3's codes with the top bit set are not codes of the format.
    EXPECT_EQ(invalid, e.f == F::kUE4M3 ? 128 : 0);
    EXPECT_TRUE(std::isnan(DecodeNarrow(e.f, 1u << i.bits)));
  }
  // Values from the formats' definitions.
  EXPECT_EQ(DecodeNarrow(F::kE4M3, 0x38), 1.0);
  EXPECT_EQ(DecodeNarrow(F::kE4M3, 0xB8), -1.0);
  EXPECT_EQ(DecodeNarrow(F::kE4M3, 0x7E), 448.0);
  EXPECT_EQ(DecodeNarrow(F::kE5M2, 0x3C), 1.0);
  EXPECT_EQ(DecodeNarrow(F::kE5M2, 0x7C), std::numeric_limits<double>::infinity());
  EXPECT_EQ(DecodeNarrow(F::kE5M2, 0xFC), -std::numeric_limits<double>::infinity());
  EXPECT_EQ(DecodeNarrow(F::kUE8M0, 0x7F), 1.0);
  EXPECT_EQ(DecodeNarrow(F::kUE8M0, 0x80), 2.0);
  EXPECT_EQ(DecodeNarrow(F::kUE4M3, 0x38), 1.0);
  const double e2m1[] = {0, 0.5, 1, 1.5, 2, 3, 4, 6};
  for (uint32_t c = 0; c < 8; ++c) {
    EXPECT_EQ(DecodeNarrow(F::kE2M1, c), e2m1[c]);
    EXPECT_EQ(DecodeNarrow(F::kE2M1, c | 8), -e2m1[c]);
  }
}

TEST(NarrowFloat, EveryCodeEncodesBackToItself) {
  for (F f : kNarrowFormats) {
    const NarrowFormatInfo& i = Info(f);
    SCOPED_TRACE(std::string(i.name));
    for (uint32_t c = 0; c < (1u << i.bits); ++c) {
      const double v = DecodeNarrow(f, c);
      if (std::isnan(v)) continue;
      for (Rounding r : {Rounding::kNearestEven, Rounding::kTowardZero, Rounding::kTowardPositive})
        for (Overflow o : {Overflow::kSaturateFinite, Overflow::kNonSaturating}) {
          if (std::isinf(v) && o == Overflow::kSaturateFinite) continue;
          EXPECT_EQ(EncodeNarrow(f, v, r, o), std::optional<uint32_t>(c)) << c;
        }
    }
  }
}

TEST(NarrowFloat, EveryGapRoundsAsStated) {
  for (F f : kNarrowFormats) {
    SCOPED_TRACE(std::string(Info(f).name));
    const std::vector<uint32_t> codes = PositiveFiniteCodes(f);
    for (size_t j = 0; j + 1 < codes.size(); ++j) {
      const double lo = DecodeNarrow(f, codes[j]), hi = DecodeNarrow(f, codes[j + 1]);
      ASSERT_LT(lo, hi);  // the codes are in value order
      const double mid = lo + (hi - lo) / 2;
      const double below = std::nextafter(mid, lo), above = std::nextafter(mid, hi);
      EXPECT_EQ(*EncodeNarrow(f, below), codes[j]);
      EXPECT_EQ(*EncodeNarrow(f, above), codes[j + 1]);
      EXPECT_EQ(*EncodeNarrow(f, mid), codes[j] % 2 == 0 ? codes[j] : codes[j + 1]);
      EXPECT_EQ(*EncodeNarrow(f, above, Rounding::kTowardZero), codes[j]);
      EXPECT_EQ(*EncodeNarrow(f, std::nextafter(lo, hi), Rounding::kTowardPositive), codes[j + 1]);
      if (Info(f).is_signed) {
        const uint32_t sign = 1u << (Info(f).exponent_bits + Info(f).mantissa_bits);
        EXPECT_EQ(*EncodeNarrow(f, -above), sign | codes[j + 1]);
        // Toward +infinity, a negative value moves toward zero.
        EXPECT_EQ(*EncodeNarrow(f, -above, Rounding::kTowardPositive), sign | codes[j]);
      } else {
        EXPECT_FALSE(EncodeNarrow(f, -hi).has_value());
      }
    }
  }
}

TEST(NarrowFloat, OverflowSaturatesOrLeavesTheFiniteRange) {
  const double huge = 1e300;
  for (F f : kNarrowFormats) {
    SCOPED_TRACE(std::string(Info(f).name));
    const uint32_t max_code = *EncodeNarrow(f, MaxFinite(f));
    EXPECT_EQ(*EncodeNarrow(f, huge, Rounding::kNearestEven, Overflow::kSaturateFinite), max_code);
    EXPECT_EQ(*EncodeNarrow(f, huge, Rounding::kTowardZero, Overflow::kNonSaturating), max_code);
    const std::optional<uint32_t> past =
        EncodeNarrow(f, huge, Rounding::kNearestEven, Overflow::kNonSaturating);
    ASSERT_TRUE(past.has_value());
    const double v = DecodeNarrow(f, *past);
    if (Info(f).has_infinity)
      EXPECT_TRUE(std::isinf(v));
    else if (Info(f).has_nan)
      EXPECT_TRUE(std::isnan(v));
    else
      EXPECT_EQ(v, MaxFinite(f));  // FP6 and FP4 have neither: they always saturate
  }
  // Half a step past the largest value: E4M3's next code (NaN) is odd, so the tie stays at 448;
  // E5M2's next code (infinity) is even, so the tie leaves.
  EXPECT_EQ(DecodeNarrow(F::kE4M3, *EncodeNarrow(F::kE4M3, 464, Rounding::kNearestEven,
                                                 Overflow::kNonSaturating)),
            448);
  EXPECT_TRUE(std::isnan(DecodeNarrow(
      F::kE4M3, *EncodeNarrow(F::kE4M3, 464.5, Rounding::kNearestEven, Overflow::kNonSaturating))));
  EXPECT_TRUE(std::isinf(DecodeNarrow(
      F::kE5M2, *EncodeNarrow(F::kE5M2, 61440, Rounding::kNearestEven, Overflow::kNonSaturating))));
  // UE8M0's steps are powers of two: past 2^127 the next value is 2^128, halfway 1.5 * 2^127.
  EXPECT_EQ(*EncodeNarrow(F::kUE8M0, std::ldexp(1.45, 127), Rounding::kNearestEven,
                          Overflow::kNonSaturating),
            0xFEu);
  EXPECT_EQ(*EncodeNarrow(F::kUE8M0, std::ldexp(1.55, 127), Rounding::kNearestEven,
                          Overflow::kNonSaturating),
            0xFFu);
}

TEST(NarrowFloat, WhatAFormatCannotHold) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  EXPECT_FALSE(EncodeNarrow(F::kE2M1, nan).has_value());
  EXPECT_FALSE(EncodeNarrow(F::kE3M2, nan).has_value());
  EXPECT_TRUE(IsNanCode(F::kE4M3, *EncodeNarrow(F::kE4M3, nan)));
  EXPECT_TRUE(IsNanCode(F::kE5M2, *EncodeNarrow(F::kE5M2, nan)));
  EXPECT_TRUE(IsNanCode(F::kUE8M0, *EncodeNarrow(F::kUE8M0, nan)));
  EXPECT_FALSE(EncodeNarrow(F::kUE8M0, 0.0).has_value());  // no zero
  EXPECT_EQ(*EncodeNarrow(F::kUE8M0, 1e-300), 0u);         // up to 2^-127
  EXPECT_FALSE(EncodeNarrow(F::kUE8M0, 1e-300, Rounding::kTowardZero).has_value());
  EXPECT_EQ(*EncodeNarrow(F::kUE4M3, -0.0), 0u);
  EXPECT_EQ(*EncodeNarrow(F::kUE4M3, -1e-9), 0u);  // rounds to zero, which UE4M3 holds
  EXPECT_FALSE(EncodeNarrow(F::kUE4M3, -1.0).has_value());
  EXPECT_EQ(*EncodeNarrow(F::kE4M3, -0.0), 0x80u);
}

// Fresh random doubles across each format's range: the encoded value is a neighbour of the input
// and no code's value lies strictly between them.
TEST(NarrowFloat, RandomValuesLandOnANearestNeighbour) {
  std::mt19937_64 rng(std::random_device{}());
  for (F f : kNarrowFormats) {
    SCOPED_TRACE(std::string(Info(f).name));
    const std::vector<uint32_t> codes = PositiveFiniteCodes(f);
    std::uniform_real_distribution<double> exponent(std::log2(MinPositive(f)) - 2,
                                                    std::log2(MaxFinite(f)));
    for (int n = 0; n < 20000; ++n) {
      const double x = std::exp2(exponent(rng));
      const double got = DecodeNarrow(f, *EncodeNarrow(f, x));
      double best = std::numeric_limits<double>::infinity();
      for (uint32_t c : codes) best = std::min(best, std::fabs(DecodeNarrow(f, c) - x));
      ASSERT_EQ(std::fabs(got - x), best) << x;
    }
  }
}

}  // namespace
}  // namespace cake::workloads
