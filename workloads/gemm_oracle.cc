#include "gemm_oracle.h"

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

std::vector<double> ReferenceGemm(const std::vector<uint16_t>& a, const std::vector<uint16_t>& b,
                                  int m, int n, int k) {
  std::vector<double> af(a.size()), bf(b.size());
  for (size_t i = 0; i < a.size(); ++i) af[i] = Bf16ToFloat(a[i]);
  for (size_t i = 0; i < b.size(); ++i) bf[i] = Bf16ToFloat(b[i]);
  std::vector<double> c(static_cast<size_t>(m) * n);
  for (int i = 0; i < m; ++i)
    for (int j = 0; j < n; ++j) {
      const double* ar = &af[static_cast<size_t>(i) * k];
      const double* br = &bf[static_cast<size_t>(j) * k];
      double s = 0;
      for (int p = 0; p < k; ++p) s += ar[p] * br[p];
      c[static_cast<size_t>(i) * n + j] = s;
    }
  return c;
}

std::vector<double> ReferenceGemmRows(const std::vector<uint16_t>& a,
                                      const std::vector<uint16_t>& b, int n, int k,
                                      const std::vector<int>& rows) {
  std::vector<double> bf(b.size());
  for (size_t i = 0; i < b.size(); ++i) bf[i] = Bf16ToFloat(b[i]);
  std::vector<double> c(rows.size() * static_cast<size_t>(n));
  std::vector<double> ar(static_cast<size_t>(k));
  for (size_t r = 0; r < rows.size(); ++r) {
    for (int p = 0; p < k; ++p) ar[p] = Bf16ToFloat(a[static_cast<size_t>(rows[r]) * k + p]);
    for (int j = 0; j < n; ++j) {
      const double* br = &bf[static_cast<size_t>(j) * k];
      double s = 0;
      for (int p = 0; p < k; ++p) s += ar[p] * br[p];
      c[r * n + j] = s;
    }
  }
  return c;
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

Tolerance GemmTolerance(bool bf16_output, int k) {
  // FP32 accumulation of exact BF16 products: error grows like sqrt(K) * 2^-24 * |terms|; with
  // inputs in [-1, 1] each term is <= 1. BF16 output adds one rounding (2^-8 relative).
  const double accumulation = 4.0 * std::sqrt(static_cast<double>(k)) * 6e-8 * k;
  if (bf16_output) return {1.0 / 128.0, accumulation + 1e-3, 8e-3};
  return {1e-4, accumulation + 1e-5, 1e-4};
}

}  // namespace cake::workloads
