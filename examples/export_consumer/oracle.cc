#include "oracle.h"

#include <cmath>
#include <cstring>
#include <limits>

namespace consumer {

float Bf16ToFloat(uint16_t b) {
  const uint32_t bits = uint32_t{b} << 16;
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

uint16_t FloatToBf16(float f) {
  uint32_t bits;
  std::memcpy(&bits, &f, 4);
  const uint32_t rounding = 0x7FFF + ((bits >> 16) & 1);
  return static_cast<uint16_t>((bits + rounding) >> 16);
}

std::vector<uint16_t> RandomBf16(size_t n, std::mt19937_64& rng) {
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::vector<uint16_t> out(n);
  for (uint16_t& v : out) v = FloatToBf16(u(rng));
  return out;
}

namespace {

void Note(CheckResult& r, double error, double bound, const std::string& where) {
  ++r.checked;
  const double over = error / bound;
  if (!(over <= 1.0)) {  // NaN fails too
    if (r.failed++ == 0) r.first_failure = where;
  }
  if (!(over <= r.worst)) r.worst = over;
}

}  // namespace

CheckResult CheckGemm(const Shape& s, const std::vector<uint16_t>& a,
                      const std::vector<uint16_t>& b, const std::vector<uint16_t>& c,
                      int64_t row_step) {
  const int64_t m = s.at("M"), n = s.at("N"), k = s.at("K");
  CheckResult r;
  for (int64_t i = 0; i < m; i += row_step)
    for (int64_t j = 0; j < n; ++j) {
      double ref = 0;
      for (int64_t p = 0; p < k; ++p)
        ref += double(Bf16ToFloat(a[i * k + p])) * double(Bf16ToFloat(b[j * k + p]));
      const double got = Bf16ToFloat(c[i * n + j]);
      Note(r, std::fabs(got - ref), 0.01 + 0.0078125 * std::fabs(ref),
           "C[" + std::to_string(i) + "," + std::to_string(j) + "] = " + std::to_string(got) +
               ", oracle " + std::to_string(ref));
    }
  r.passed = r.failed == 0 && r.checked > 0;
  return r;
}

CheckResult CheckKMeans(const Shape& s, const std::vector<uint16_t>& x,
                        const std::vector<uint16_t>& c, const std::vector<int32_t>& idx,
                        const std::vector<float>& dist, int64_t point_step) {
  const int64_t nb = s.at("B"), n = s.at("N"), k = s.at("K"), d = s.at("D");
  CheckResult r;
  std::vector<double> dj(k), norm_c(k);
  for (int64_t b = 0; b < nb; ++b)
    for (int64_t i = 0; i < n; i += point_step) {
      const uint16_t* xp = &x[(b * n + i) * d];
      double norm_x = 0;
      for (int64_t q = 0; q < d; ++q) norm_x += double(Bf16ToFloat(xp[q])) * Bf16ToFloat(xp[q]);
      int64_t best = 0;
      for (int64_t j = 0; j < k; ++j) {
        const uint16_t* cp = &c[(b * k + j) * d];
        double sum = 0, nc = 0;
        for (int64_t q = 0; q < d; ++q) {
          const double diff = double(Bf16ToFloat(xp[q])) - Bf16ToFloat(cp[q]);
          sum += diff * diff;
          nc += double(Bf16ToFloat(cp[q])) * Bf16ToFloat(cp[q]);
        }
        dj[j] = sum;
        norm_c[j] = nc;
        if (sum < dj[best]) best = j;
      }
      const int64_t got = idx[b * n + i];
      const std::string where = "point [" + std::to_string(b) + "," + std::to_string(i) + "]";
      if (got < 0 || got >= k) {
        Note(r, std::numeric_limits<double>::infinity(), 1,
             where + ": index " + std::to_string(got));
        continue;
      }
      const double bound = 1e-6 + 6e-5 * (norm_x + norm_c[got] + norm_c[best]);
      Note(r, dj[got] - dj[best], bound,
           where + ": centroid " + std::to_string(got) + " not nearest");
      Note(r, std::fabs(double(dist[b * n + i]) - dj[best]), bound,
           where + ": distance " + std::to_string(dist[b * n + i]) + ", oracle " +
               std::to_string(dj[best]));
    }
  r.passed = r.failed == 0 && r.checked > 0;
  return r;
}

}  // namespace consumer
