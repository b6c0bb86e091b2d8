#include "workloads/narrow_float.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

namespace cake::workloads {
namespace {

constexpr NarrowFormatInfo kInfo[] = {
    {"e4m3", 8, 4, 3, 7, true, false, true},   {"e5m2", 8, 5, 2, 15, true, true, true},
    {"e3m2", 6, 3, 2, 3, true, false, false},  {"e2m3", 6, 2, 3, 1, true, false, false},
    {"e2m1", 4, 2, 1, 1, true, false, false},  {"ue8m0", 8, 8, 0, 127, false, false, true},
    {"ue4m3", 8, 4, 3, 7, false, false, true},
};

uint32_t MagnitudeBits(const NarrowFormatInfo& i) { return i.exponent_bits + i.mantissa_bits; }

// The positive finite values in code order (codes 0, 1, ...: increasing for every format here),
// built once per format.
struct Ladder {
  std::vector<double> values;  // values[c] = DecodeNarrow(f, c) for the finite codes c >= 0
};

const Ladder& LadderOf(NarrowFormat f) {
  static const std::array<Ladder, kNarrowFormats.size()> ladders = [] {
    std::array<Ladder, kNarrowFormats.size()> out;
    for (NarrowFormat g : kNarrowFormats) {
      const NarrowFormatInfo& i = Info(g);
      for (uint32_t c = 0; c < (1u << MagnitudeBits(i)); ++c) {
        const double v = DecodeNarrow(g, c);
        if (!std::isfinite(v)) break;  // the specials sit above the largest finite code
        out[static_cast<int>(g)].values.push_back(v);
      }
    }
    return out;
  }();
  return ladders[static_cast<int>(f)];
}

}  // namespace

const NarrowFormatInfo& Info(NarrowFormat f) { return kInfo[static_cast<int>(f)]; }

bool IsNanCode(NarrowFormat f, uint32_t code) {
  const NarrowFormatInfo& i = Info(f);
  if (code >> i.bits) return false;  // not a code of the format at all
  const uint32_t magnitude = code & ((1u << MagnitudeBits(i)) - 1);
  if (!i.is_signed && (code >> MagnitudeBits(i))) return false;  // UE4M3's top bit: invalid
  const uint32_t exponent = magnitude >> i.mantissa_bits;
  const uint32_t mantissa = magnitude & ((1u << i.mantissa_bits) - 1);
  const uint32_t all_exponent = (1u << i.exponent_bits) - 1;
  switch (f) {
    case NarrowFormat::kE5M2:
      return exponent == all_exponent && mantissa != 0;
    case NarrowFormat::kE4M3:
    case NarrowFormat::kUE4M3:
    case NarrowFormat::kUE8M0:
      return magnitude == (1u << MagnitudeBits(i)) - 1;
    default:
      return false;
  }
}

double DecodeNarrow(NarrowFormat f, uint32_t code) {
  const NarrowFormatInfo& i = Info(f);
  const double nan = std::numeric_limits<double>::quiet_NaN();
  if (code >> i.bits) return nan;
  if (!i.is_signed && (code >> MagnitudeBits(i))) return nan;
  if (IsNanCode(f, code)) return nan;
  const uint32_t magnitude = code & ((1u << MagnitudeBits(i)) - 1);
  const bool negative = i.is_signed && (code >> MagnitudeBits(i)) & 1;
  const int exponent = static_cast<int>(magnitude >> i.mantissa_bits);
  const int mantissa = static_cast<int>(magnitude & ((1u << i.mantissa_bits) - 1));
  double v;
  if (i.has_infinity && exponent == (1 << i.exponent_bits) - 1) {
    v = std::numeric_limits<double>::infinity();  // mantissa 0: NaNs were handled above
  } else if (i.mantissa_bits == 0) {
    v = std::ldexp(1.0, exponent - i.bias);  // UE8M0: a power of two, no subnormals
  } else if (exponent == 0) {
    v = std::ldexp(static_cast<double>(mantissa), 1 - i.bias - i.mantissa_bits);
  } else {
    v = std::ldexp(static_cast<double>((1 << i.mantissa_bits) + mantissa),
                   exponent - i.bias - i.mantissa_bits);
  }
  return negative ? -v : v;
}

double MaxFinite(NarrowFormat f) { return LadderOf(f).values.back(); }

double MinPositive(NarrowFormat f) {
  const std::vector<double>& v = LadderOf(f).values;
  return v[0] > 0 ? v[0] : v[1];
}

std::optional<uint32_t> EncodeNarrow(NarrowFormat f, double value, Rounding rounding,
                                     Overflow overflow) {
  const NarrowFormatInfo& i = Info(f);
  const uint32_t magnitude_bits = MagnitudeBits(i);
  const uint32_t sign = i.is_signed && std::signbit(value) ? 1u << magnitude_bits : 0u;
  const uint32_t nan_code = (1u << magnitude_bits) - 1;  // E4M3, UE4M3, UE8M0; E5M2 below
  auto not_a_number = [&]() -> std::optional<uint32_t> {
    if (!i.has_nan) return std::nullopt;
    return sign | (f == NarrowFormat::kE5M2 ? 0x7Eu : nan_code);
  };
  if (std::isnan(value)) return not_a_number();
  const std::vector<double>& ladder = LadderOf(f).values;
  if (std::isinf(value) && overflow == Overflow::kNonSaturating) {
    // An infinity is exact, not an overflow: it stays infinite under every rounding.
    if (!i.is_signed && value < 0) return std::nullopt;
    if (i.has_infinity) return sign | 0x7Cu;
    if (i.has_nan) return not_a_number();
  }
  const double a = std::fabs(value);
  const bool negative = std::signbit(value);
  // The direction that moves away from zero under `rounding` for this sign.
  const bool away_up = rounding == Rounding::kTowardPositive && !negative;
  const bool toward_zero =
      rounding == Rounding::kTowardZero || (rounding == Rounding::kTowardPositive && negative);

  uint32_t code;
  const uint32_t top = static_cast<uint32_t>(ladder.size() - 1);
  if (a >= ladder[top]) {
    // Past the largest finite value: the value the code after it would have (one more step of
    // the top binade's spacing; for a power-of-two format, the next power).
    const double step = i.mantissa_bits == 0 ? ladder[top] : ladder[top] - ladder[top - 1];
    bool beyond;
    if (a == ladder[top]) {
      beyond = false;
    } else if (toward_zero) {
      beyond = false;
    } else if (away_up) {
      beyond = true;
    } else {
      const double mid = ladder[top] + step / 2;
      beyond = a > mid || (a == mid && ((top + 1) & 1) == 0);
    }
    if (!beyond || overflow == Overflow::kSaturateFinite || (!i.has_infinity && !i.has_nan)) {
      code = top;
    } else if (i.has_infinity) {
      code = 0x7Cu;  // E5M2 infinity
    } else {
      return not_a_number();
    }
  } else {
    // ladder[lo] <= a < ladder[lo + 1]
    const auto it = std::upper_bound(ladder.begin(), ladder.end(), a);
    if (it == ladder.begin()) {
      // Below the smallest value of a format without zero (UE8M0): zero has no code, and a
      // positive value rounds up to the smallest unless rounding is toward zero.
      if (a == 0 || toward_zero) return std::nullopt;
      code = 0;
    } else {
      const uint32_t lo = static_cast<uint32_t>(it - ladder.begin() - 1);
      if (a == ladder[lo]) {
        code = lo;
      } else if (toward_zero) {
        code = lo;
      } else if (away_up) {
        code = lo + 1;
      } else {
        const double mid = ladder[lo] + (ladder[lo + 1] - ladder[lo]) / 2;
        code = a < mid ? lo : a > mid ? lo + 1 : (lo & 1) == 0 ? lo : lo + 1;
      }
    }
  }
  if (!i.is_signed && negative && !(code == 0 && ladder[0] == 0)) return std::nullopt;
  if (!i.is_signed) return code;
  return sign | code;
}

}  // namespace cake::workloads
