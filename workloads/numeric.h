// Numeric helpers every workload's oracle and inputs share: BF16 encode/decode
// (round-to-nearest-even), seeded draws (splitmix64, as the GPU helpers use it), and the
// comparison of an output with a float64 oracle under the NaN/Inf policy. Pure functions;
// thread-compatible.
#pragma once

#include <cstdint>
#include <random>
#include <vector>

namespace cake::workloads {

float Bf16ToFloat(uint16_t b);
uint16_t FloatToBf16(float f);  // round to nearest even; NaN stays NaN

// Fresh uniform values in [lo, hi), rounded to BF16: one draw of `rng` seeds them, so the
// values are the same for the same `rng` state whatever the machine's thread count. Fills
// large counts on up to 16 threads.
std::vector<uint16_t> RandomBf16(size_t count, std::mt19937_64& rng, float lo = -1.f,
                                 float hi = 1.f);

// splitmix64, as the GPU helpers use it.
uint64_t Mix64(uint64_t x);
// The value helper_kernels.cu's fill writes at index i for `seed`: U[-1, 1) rounded to BF16.
uint16_t UniformBf16At(uint64_t seed, uint64_t i);

struct Comparison {
  int64_t elements = 0;
  int64_t non_finite = 0;        // NaN/Inf in the output (e.g. poison never overwritten)
  int64_t out_of_tolerance = 0;  // elements with |out - ref| > atol + rtol * |ref|
  double max_abs_error = 0;
  double relative_l2_error = 0;  // ||out - ref|| / ||ref||
  bool passed = false;
};

// Compares against the reference with an elementwise bound and a relative-L2 bound.
Comparison Compare(const std::vector<double>& out, const std::vector<double>& ref, double rtol,
                   double atol, double max_relative_l2);

// Compares with the float64 oracle under PROPAGATE: where the oracle is NaN the output must be
// NaN, where it is +-Inf the output must be the same infinity; elsewhere finite and within the
// tolerance. The relative L2 error is over elements with a finite oracle.
struct PolicyComparison {
  Comparison numbers;             // finite-oracle elements only
  int64_t policy_violations = 0;  // non-finite where finite expected, or the wrong non-finite
  bool passed = false;
};
PolicyComparison CompareUnderPolicy(const std::vector<double>& out, const std::vector<double>& ref,
                                    double rtol, double atol, double max_relative_l2);

}  // namespace cake::workloads
