#include "workloads/block_scaled_mma.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "absl/strings/str_cat.h"

namespace cake::workloads {
namespace {

using F = NarrowFormat;

bool IsF8F6F4(F f) {
  return f == F::kE4M3 || f == F::kE5M2 || f == F::kE3M2 || f == F::kE2M3 || f == F::kE2M1;
}

const char* KindName(MmaKind k) {
  switch (k) {
    case MmaKind::kLegacyF8:
      return "legacy f8 (no .kind)";
    case MmaKind::kF8F6F4:
      return "kind::f8f6f4";
    case MmaKind::kMxF8F6F4:
      return "kind::mxf8f6f4";
    case MmaKind::kMxF4:
      return "kind::mxf4";
    case MmaKind::kMxF4NvF4:
      return "kind::mxf4nvf4";
  }
  return "?";
}

// A [rows][k] (or scales [rows][k / group]) operand: its size and every code in its format.
absl::Status CheckCodes(const std::vector<uint32_t>& codes, size_t size, F format,
                        const char* name) {
  if (codes.size() != size)
    return absl::InvalidArgumentError(
        absl::StrCat(name, " holds ", codes.size(), " codes, the form needs ", size));
  for (size_t i = 0; i < codes.size(); ++i)
    if (codes[i] >> Info(format).bits ||
        (!Info(format).is_signed &&
         codes[i] >> (Info(format).exponent_bits + Info(format).mantissa_bits)))
      return absl::InvalidArgumentError(
          absl::StrCat(name, "[", i, "] = ", codes[i], " is not a code of ", Info(format).name));
  return absl::OkStatus();
}

absl::Status CheckOperands(const MmaForm& f, const MmaOperands& o) {
  if (absl::Status s = CheckCodes(o.a, 16 * f.k, f.a, "A"); !s.ok()) return s;
  if (absl::Status s = CheckCodes(o.b, 8 * f.k, f.b, "B"); !s.ok()) return s;
  if (f.scale) {
    if (absl::Status s = CheckCodes(o.scale_a, 16 * (f.k / f.group), *f.scale, "scale_A"); !s.ok())
      return s;
    if (absl::Status s = CheckCodes(o.scale_b, 8 * (f.k / f.group), *f.scale, "scale_B"); !s.ok())
      return s;
  } else if (!o.scale_a.empty() || !o.scale_b.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(KindName(f.kind), " takes no scales"));
  }
  if (o.c.size() != 16 * 8)
    return absl::InvalidArgumentError(absl::StrCat("C holds ", o.c.size(), " values, not 128"));
  return absl::OkStatus();
}

// The product of element kk of row i of A and of column j of B, with their scales.
double Product(const MmaForm& f, const MmaOperands& o, int i, int j, int kk) {
  double v = DecodeNarrow(f.a, o.a[i * f.k + kk]) * DecodeNarrow(f.b, o.b[j * f.k + kk]);
  if (f.scale) {
    const int groups = f.k / f.group;
    v *= DecodeNarrow(*f.scale, o.scale_a[i * groups + kk / f.group]);
    v *= DecodeNarrow(*f.scale, o.scale_b[j * groups + kk / f.group]);
  }
  return v;  // exact: at most 16 significant bits, |v| within 2^-300 .. 2^300
}

// `m` * 2^-low_bit rounded to FP32, nearest even.
float RoundMagnitude(const std::vector<uint64_t>& m, int low_bit) {
  int top = -1;
  for (int i = static_cast<int>(m.size()) - 1; i >= 0 && top < 0; --i)
    if (m[i] != 0) top = i * 64 + 63 - __builtin_clzll(m[i]);
  if (top < 0) return 0.0f;
  auto bit = [&](int b) { return b >= 0 && ((m[b / 64] >> (b % 64)) & 1); };
  const int exponent = top - low_bit;  // the value's leading bit weighs 2^exponent
  // The weight of the result's last kept bit: 24 significant bits, or 2^-149 for subnormals.
  const int keep_from = std::max(exponent - 23, -149) + low_bit;
  uint64_t q = 0;
  for (int b = top; b >= keep_from && b >= 0; --b) q = (q << 1) | (bit(b) ? 1 : 0);
  if (keep_from > top) q = 0;
  bool sticky = false;
  for (int b = keep_from - 2; b >= 0 && !sticky; --b) sticky = bit(b);
  const bool round = bit(keep_from - 1);
  if (round && (sticky || (q & 1))) ++q;
  const double v = std::ldexp(static_cast<double>(q), keep_from - low_bit);
  if (v > std::numeric_limits<float>::max()) return std::numeric_limits<float>::infinity();
  return static_cast<float>(v);  // exact: q <= 2^24
}

}  // namespace

std::string MmaForm::Describe() const {
  std::string s =
      absl::StrCat(KindName(kind), " m16n8k", k, " ", Info(a).name, " x ", Info(b).name, " -> f32");
  if (scale) absl::StrAppend(&s, ", ", Info(*scale).name, " scale per ", group, " elements");
  return s;
}

absl::StatusOr<MmaForm> MakeMmaForm(MmaKind kind, F a, F b, std::optional<F> scale, int group) {
  MmaForm f{kind, a, b, 32, scale, scale ? group : 0};
  auto refuse = [&](const std::string& why) {
    return absl::InvalidArgumentError(absl::StrCat(KindName(kind), ": ", why));
  };
  const bool fp4_only = kind == MmaKind::kMxF4 || kind == MmaKind::kMxF4NvF4;
  if (kind == MmaKind::kLegacyF8) {
    if ((a != F::kE4M3 && a != F::kE5M2) || (b != F::kE4M3 && b != F::kE5M2))
      return refuse("operands must be e4m3 or e5m2");
  } else if (fp4_only) {
    if (a != F::kE2M1 || b != F::kE2M1) return refuse("operands must be e2m1");
    f.k = 64;
  } else if (!IsF8F6F4(a) || !IsF8F6F4(b)) {
    return refuse("operands must be e4m3, e5m2, e3m2, e2m3 or e2m1");
  }
  const bool scaled = kind == MmaKind::kMxF8F6F4 || fp4_only;
  if (!scaled) {
    if (scale) return refuse("takes no block scale");
    return f;
  }
  if (!scale) return refuse("needs a block scale (ue8m0, or ue4m3 for mxf4nvf4)");
  // The scale type and its vector size (elements of K per scale) PTX allows per kind.
  int expected = 0;
  if (*scale == F::kUE8M0) {
    expected = 32;  // scale_vec::1X at k32, scale_vec::2X at k64
  } else if (*scale == F::kUE4M3 && kind == MmaKind::kMxF4NvF4) {
    expected = 16;  // scale_vec::4X
  } else {
    return refuse(absl::StrCat("scale type ", Info(*scale).name, " is not allowed"));
  }
  if (group != expected)
    return refuse(absl::StrCat("a scale group of ", group, " elements does not match the ",
                               Info(*scale).name, " scale, which covers ", expected,
                               " elements of K (scale_vec::", f.k / expected, "X)"));
  return f;
}

bool ExactSum::Add(double term) {
  if (std::isnan(term)) {
    nan_ = true;
    return true;
  }
  if (std::isinf(term)) {
    (term > 0 ? plus_infinity_ : minus_infinity_) = true;
    return true;
  }
  if (term == 0) return true;
  int exponent;
  const double fraction = std::frexp(std::fabs(term), &exponent);  // [0.5, 1) * 2^exponent
  const uint64_t mantissa = static_cast<uint64_t>(std::ldexp(fraction, 53));
  const int low = exponent - 53 + kLowBit;                   // bit index of the mantissa's bit 0
  if (low < 0 || low + 53 > kLimbs * 64 - 64) return false;  // headroom for 2^20 terms
  std::vector<uint64_t>& acc = term > 0 ? positive_ : negative_;
  // Add mantissa << low (two limbs), carrying.
  const int limb = low / 64, shift = low % 64;
  uint64_t add[2] = {mantissa << shift, shift == 0 ? 0 : mantissa >> (64 - shift)};
  bool carry = false;
  for (int i = limb; i < kLimbs; ++i) {
    const uint64_t x = i - limb < 2 ? add[i - limb] : 0;
    if (x == 0 && !carry) {
      if (i - limb >= 1) break;
      continue;
    }
    uint64_t sum;
    const bool c1 = __builtin_add_overflow(acc[i], x, &sum);
    const bool c2 = __builtin_add_overflow(sum, uint64_t{carry}, &sum);
    acc[i] = sum;
    carry = c1 || c2;
  }
  return true;
}

float ExactSum::RoundToFloat() const {
  const float inf = std::numeric_limits<float>::infinity();
  if (nan_ || (plus_infinity_ && minus_infinity_)) return std::numeric_limits<float>::quiet_NaN();
  if (plus_infinity_) return inf;
  if (minus_infinity_) return -inf;
  // magnitude = |positive - negative|
  bool negative_result = false;
  for (int i = kLimbs - 1; i >= 0; --i)
    if (positive_[i] != negative_[i]) {
      negative_result = negative_[i] > positive_[i];
      break;
    }
  const std::vector<uint64_t>& big = negative_result ? negative_ : positive_;
  const std::vector<uint64_t>& small = negative_result ? positive_ : negative_;
  std::vector<uint64_t> m(kLimbs);
  bool borrow = false;
  for (int i = 0; i < kLimbs; ++i) {
    uint64_t d;
    const bool b1 = __builtin_sub_overflow(big[i], small[i], &d);
    const bool b2 = __builtin_sub_overflow(d, uint64_t{borrow}, &d);
    m[i] = d;
    borrow = b1 || b2;
  }
  const float v = RoundMagnitude(m, kLowBit);
  return negative_result ? -v : v;
}

absl::StatusOr<std::vector<float>> MmaReference(const MmaForm& form, const MmaOperands& o) {
  if (absl::Status s = CheckOperands(form, o); !s.ok()) return s;
  std::vector<float> d(16 * 8);
  for (int i = 0; i < 16; ++i)
    for (int j = 0; j < 8; ++j) {
      ExactSum sum;
      bool ok = sum.Add(o.c[i * 8 + j]);
      for (int kk = 0; kk < form.k; ++kk) ok = sum.Add(Product(form, o, i, j, kk)) && ok;
      if (!ok) return absl::InternalError("a product left the exact accumulator's range");
      d[i * 8 + j] = sum.RoundToFloat();
    }
  return d;
}

absl::StatusOr<std::vector<float>> GemmReference(const MmaForm& form, const GemmOperands& g) {
  if (g.m <= 0 || g.n <= 0 || g.k <= 0)
    return absl::InvalidArgumentError("M, N and K must be positive");
  if (form.scale && g.k % form.group != 0)
    return absl::InvalidArgumentError(absl::StrCat("K = ", g.k, " is not a multiple of the ",
                                                   form.group, "-element scale group"));
  const int64_t groups = form.scale ? g.k / form.group : 0;
  if (absl::Status s = CheckCodes(g.a, size_t(g.m) * g.k, form.a, "A"); !s.ok()) return s;
  if (absl::Status s = CheckCodes(g.b, size_t(g.n) * g.k, form.b, "B"); !s.ok()) return s;
  if (form.scale) {
    if (absl::Status s = CheckCodes(g.scale_a, size_t(g.m) * groups, *form.scale, "scale_A");
        !s.ok())
      return s;
    if (absl::Status s = CheckCodes(g.scale_b, size_t(g.n) * groups, *form.scale, "scale_B");
        !s.ok())
      return s;
  } else if (!g.scale_a.empty() || !g.scale_b.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(KindName(form.kind), " takes no scales"));
  }
  // Decoded once: K values per row of A and of B, scales folded in (exact: a power of two or a
  // 4-bit UE4M3 significand times a narrow value stays within a double's 53 bits).
  auto decoded = [&](const std::vector<uint32_t>& codes, const std::vector<uint32_t>& scales,
                     NarrowFormat f, int rows) {
    std::vector<double> v(size_t(rows) * g.k);
    for (int r = 0; r < rows; ++r)
      for (int kk = 0; kk < g.k; ++kk) {
        double x = DecodeNarrow(f, codes[size_t(r) * g.k + kk]);
        if (form.scale)
          x *= DecodeNarrow(*form.scale, scales[size_t(r) * groups + kk / form.group]);
        v[size_t(r) * g.k + kk] = x;
      }
    return v;
  };
  const std::vector<double> a = decoded(g.a, g.scale_a, form.a, g.m);
  const std::vector<double> b = decoded(g.b, g.scale_b, form.b, g.n);
  std::vector<float> c(size_t(g.m) * g.n);
  for (int i = 0; i < g.m; ++i)
    for (int j = 0; j < g.n; ++j) {
      ExactSum sum;
      bool ok = true;
      for (int kk = 0; kk < g.k; ++kk)
        ok = sum.Add(a[size_t(i) * g.k + kk] * b[size_t(j) * g.k + kk]) && ok;
      if (!ok) return absl::InternalError("a product left the exact accumulator's range");
      c[size_t(i) * g.n + j] = sum.RoundToFloat();
    }
  return c;
}

absl::StatusOr<std::vector<double>> Tolerance(const MmaForm& form, const MmaOperands& o) {
  if (absl::Status s = CheckOperands(form, o); !s.ok()) return s;
  std::vector<double> t(16 * 8);
  for (int i = 0; i < 16; ++i)
    for (int j = 0; j < 8; ++j) {
      double magnitude = std::fabs(o.c[i * 8 + j]);
      for (int kk = 0; kk < form.k; ++kk) magnitude += std::fabs(Product(form, o, i, j, kk));
      t[i * 8 + j] = (form.k + 1) * std::ldexp(magnitude, -23) + std::ldexp(magnitude, -24);
    }
  return t;
}

}  // namespace cake::workloads
