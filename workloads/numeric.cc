#include "numeric.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <thread>

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
  // One draw of `rng` seeds fixed chunks of independent splitmix64 streams, filled in parallel:
  // the values depend on the seed alone, never on the thread count. A validation's largest
  // inputs (a KMeans paper row: 2.7e8 values) took seconds on one thread.
  constexpr size_t kChunk = size_t{1} << 20;
  const uint64_t base = rng();
  std::vector<uint16_t> v(count);
  const size_t chunks = (count + kChunk - 1) / kChunk;
  const float width = hi - lo;
  auto fill = [&](size_t first_chunk, size_t stride) {
    for (size_t c = first_chunk; c < chunks; c += stride) {
      // splitmix64: a Weyl sequence through the mixer, from this chunk's own start.
      uint64_t weyl = Mix64(base ^ Mix64(c));
      const size_t end = std::min(count, (c + 1) * kChunk);
      for (size_t i = c * kChunk; i < end; i += 2) {
        weyl += 0x9e3779b97f4a7c15ull;
        const uint64_t state = Mix64(weyl);
        // Two 24-bit uniforms in [0, 1) per draw, as generate_canonical<float> makes one.
        const float u0 = static_cast<float>(state >> 40) * 0x1p-24f;
        const float u1 = static_cast<float>((state >> 8) & 0xFFFFFFu) * 0x1p-24f;
        v[i] = FloatToBf16(lo + width * u0);
        if (i + 1 < end) v[i + 1] = FloatToBf16(lo + width * u1);
      }
    }
  };
  const size_t threads =
      std::min<size_t>({chunks, std::max(1u, std::thread::hardware_concurrency()), 16});
  if (threads <= 1) {
    fill(0, 1);
    return v;
  }
  std::vector<std::thread> pool;
  for (size_t t = 1; t < threads; ++t) pool.emplace_back(fill, t, threads);
  fill(0, threads);
  for (std::thread& t : pool) t.join();
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
