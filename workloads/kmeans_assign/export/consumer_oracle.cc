// The export consumer's oracle of the KMeans assignment (examples/export_consumer/oracle.h): for
// about 256 points of each batch, the reported centroid's squared distance within
// 1e-6 + 6e-5 (|x|^2 + |c_reported|^2 + |c_nearest|^2) of the float64 minimum, and the reported
// distance within the same of it (the bundled contract's tolerance).
#include <algorithm>
#include <cmath>
#include <limits>

#include "oracle.h"

namespace {

consumer::CheckResult CheckAssign(const consumer::Shape& s, const consumer::Tensors& in,
                                  const consumer::Tensors& out) {
  const int64_t nb = s.at("B"), n = s.at("N"), k = s.at("K"), d = s.at("D");
  const auto x = consumer::As<uint16_t>(in.at("X")), c = consumer::As<uint16_t>(in.at("C"));
  const auto idx = consumer::As<int32_t>(out.at("idx"));
  const auto dist = consumer::As<float>(out.at("dist"));
  auto f = [](uint16_t v) { return double(consumer::Bf16ToFloat(v)); };
  consumer::CheckResult r;
  std::vector<double> dj(k), norm_c(k);
  for (int64_t b = 0; b < nb; ++b)
    for (int64_t i = 0; i < n; i += std::max<int64_t>(1, n / 256)) {
      const uint16_t* xp = &x[(b * n + i) * d];
      double norm_x = 0;
      for (int64_t q = 0; q < d; ++q) norm_x += f(xp[q]) * f(xp[q]);
      int64_t best = 0;
      for (int64_t j = 0; j < k; ++j) {
        const uint16_t* cp = &c[(b * k + j) * d];
        double sum = 0, nc = 0;
        for (int64_t q = 0; q < d; ++q) {
          sum += (f(xp[q]) - f(cp[q])) * (f(xp[q]) - f(cp[q]));
          nc += f(cp[q]) * f(cp[q]);
        }
        dj[j] = sum, norm_c[j] = nc;
        if (sum < dj[best]) best = j;
      }
      const int64_t got = idx[b * n + i];
      const std::string where = "point [" + std::to_string(b) + "," + std::to_string(i) + "]";
      if (got < 0 || got >= k) {
        r.Note(std::numeric_limits<double>::infinity(), 1,
               where + ": index " + std::to_string(got));
        continue;
      }
      const double bound = 1e-6 + 6e-5 * (norm_x + norm_c[got] + norm_c[best]);
      r.Note(dj[got] - dj[best], bound,
             where + ": centroid " + std::to_string(got) + " not nearest");
      r.Note(std::fabs(double(dist[b * n + i]) - dj[best]), bound,
             where + ": distance " + std::to_string(dist[b * n + i]) + ", oracle " +
                 std::to_string(dj[best]));
    }
  r.passed = r.failed == 0 && r.checked > 0;
  return r;
}

const bool registered = consumer::RegisterOracle("kmeans_assign", CheckAssign);

}  // namespace
