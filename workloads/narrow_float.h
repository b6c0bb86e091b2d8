// Exact codecs of the narrow floating-point formats block-scaled MMA reads (OCP Microscaling
// formats as PTX names them): E4M3 (the "fn" variant: no infinity, NaN only at S.1111.111),
// E5M2 (IEEE-like: infinities and NaNs), the FP6 formats E3M2 and E2M3 and FP4 E2M1 (finite only),
// and the scale formats UE8M0 (a power of two, 2^(e-127), NaN at 0xFF, no zero) and UE4M3 (E4M3
// without a sign: an 8-bit container whose top bit must be zero).
//
// Decoding is exact: every code's value is a double. Encoding rounds a double to the format with
// the stated rounding, and handles what the format cannot hold with the stated overflow policy:
// the nearest of two neighbours, ties to the even code; where the format ends, the value past
// its largest finite one is treated as one more step whose code parity decides the tie (so 464
// rounds to E4M3's 448, and 61440 to E5M2's infinity). Formats without infinity and NaN always
// saturate. Pure functions; thread-safe.
#pragma once

#include <array>
#include <cstdint>
#include <optional>

namespace cake::workloads {

enum class NarrowFormat { kE4M3, kE5M2, kE3M2, kE2M3, kE2M1, kUE8M0, kUE4M3 };
inline constexpr std::array<NarrowFormat, 7> kNarrowFormats = {
    NarrowFormat::kE4M3, NarrowFormat::kE5M2,  NarrowFormat::kE3M2, NarrowFormat::kE2M3,
    NarrowFormat::kE2M1, NarrowFormat::kUE8M0, NarrowFormat::kUE4M3};

struct NarrowFormatInfo {
  const char* name = "";  // as PTX spells the type: "e4m3", "ue8m0", ...
  int bits = 0;           // storage width; codes are [0, 2^bits)
  int exponent_bits = 0, mantissa_bits = 0, bias = 0;
  bool is_signed = true;
  bool has_infinity = false;  // E5M2 only
  bool has_nan = false;
};
const NarrowFormatInfo& Info(NarrowFormat f);

// The value of `code`: exact, NaN for a NaN code or a code outside the format (a set top bit of
// UE4M3, bits beyond the width).
double DecodeNarrow(NarrowFormat f, uint32_t code);
bool IsNanCode(NarrowFormat f, uint32_t code);
// The largest finite value and the smallest positive one (a subnormal where the format has them).
double MaxFinite(NarrowFormat f);
double MinPositive(NarrowFormat f);

enum class Rounding { kNearestEven, kTowardZero, kTowardPositive };
enum class Overflow {
  kSaturateFinite,  // beyond the largest finite value: that value (PTX .satfinite)
  kNonSaturating,   // beyond it: infinity where the format has one, else NaN (an infinite
                    // input likewise; saturating, it becomes the largest finite value)
};

// The code of `value`, or nullopt where the format has no code for it: NaN into a format without
// NaN; a negative value for an unsigned format (one that rounds to zero encodes as zero, which
// UE4M3 holds); zero, or a value below 2^-127 rounded toward zero, into UE8M0 (no zero; other
// values below it round up to it). -0.0 keeps its sign in a signed format.
std::optional<uint32_t> EncodeNarrow(NarrowFormat f, double value,
                                     Rounding rounding = Rounding::kNearestEven,
                                     Overflow overflow = Overflow::kSaturateFinite);

}  // namespace cake::workloads
