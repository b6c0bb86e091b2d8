#include "numeric.h"

#include <cmath>
#include <cstring>

namespace cake::workloads {

float Bf16ToFloat(uint16_t b) {
  const uint32_t bits = static_cast<uint32_t>(b) << 16;
  float f;
  std::memcpy(&f, &bits, sizeof(f));
  return f;
}

uint16_t FloatToBf16(float f) {
  uint32_t bits;
  std::memcpy(&bits, &f, sizeof(bits));
  if ((bits & 0x7f800000u) == 0x7f800000u && (bits & 0x007fffffu) != 0)
    return static_cast<uint16_t>((bits >> 16) | 0x0040u);  // quiet NaN
  const uint32_t rounding = 0x7fffu + ((bits >> 16) & 1u);
  return static_cast<uint16_t>((bits + rounding) >> 16);
}

std::vector<uint16_t> RandomBf16(size_t count, std::mt19937_64& rng, float lo, float hi) {
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<uint16_t> v(count);
  for (uint16_t& x : v) x = FloatToBf16(dist(rng));
  return v;
}

Comparison Compare(const std::vector<double>& out, const std::vector<double>& ref, double rtol,
                   double atol, double max_relative_l2) {
  Comparison c;
  c.elements = static_cast<int64_t>(ref.size());
  double err2 = 0, ref2 = 0;
  for (size_t i = 0; i < ref.size(); ++i) {
    const double o = i < out.size() ? out[i] : NAN;
    if (!std::isfinite(o)) {
      ++c.non_finite;
      continue;
    }
    const double e = std::fabs(o - ref[i]);
    c.max_abs_error = std::max(c.max_abs_error, e);
    if (e > atol + rtol * std::fabs(ref[i])) ++c.out_of_tolerance;
    err2 += e * e;
    ref2 += ref[i] * ref[i];
  }
  c.relative_l2_error = ref2 > 0 ? std::sqrt(err2 / ref2) : std::sqrt(err2);
  c.passed = c.non_finite == 0 && c.out_of_tolerance == 0 &&
             c.relative_l2_error <= max_relative_l2 && out.size() == ref.size();
  return c;
}

uint64_t Mix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

uint16_t UniformBf16At(uint64_t seed, uint64_t i) {
  const uint64_t h = Mix64(seed ^ Mix64(i));
  const float u = static_cast<float>(h >> 40) * (1.0f / 16777216.0f);
  return FloatToBf16(2.0f * u - 1.0f);
}

PolicyComparison CompareUnderPolicy(const std::vector<double>& out, const std::vector<double>& ref,
                                    double rtol, double atol, double max_relative_l2) {
  PolicyComparison pc;
  std::vector<double> finite_out, finite_ref;
  finite_out.reserve(ref.size());
  finite_ref.reserve(ref.size());
  for (size_t i = 0; i < ref.size(); ++i) {
    const double o = i < out.size() ? out[i] : NAN;
    if (std::isnan(ref[i])) {
      pc.policy_violations += std::isnan(o) ? 0 : 1;
    } else if (std::isinf(ref[i])) {
      pc.policy_violations += (std::isinf(o) && (o > 0) == (ref[i] > 0)) ? 0 : 1;
    } else {
      finite_out.push_back(o);
      finite_ref.push_back(ref[i]);
    }
  }
  pc.numbers = Compare(finite_out, finite_ref, rtol, atol, max_relative_l2);
  pc.passed = pc.numbers.passed && pc.policy_violations == 0 && out.size() == ref.size();
  return pc;
}

}  // namespace cake::workloads
