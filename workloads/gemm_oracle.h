// The independent oracle for the warp GEMM contract: C[m,n] = sum_k A[m,k] * B[n,k], computed in
// float64 on the CPU from the exact BF16 inputs. Also BF16 encode/decode (round-to-nearest-even)
// and the comparison metrics used by validation. Pure functions; thread-compatible.
#pragma once

#include <cstdint>
#include <random>
#include <vector>

namespace cake::workloads {

float Bf16ToFloat(uint16_t b);
uint16_t FloatToBf16(float f);  // round to nearest even; NaN stays NaN

// Fresh uniform values in [lo, hi), rounded to BF16.
std::vector<uint16_t> RandomBf16(size_t count, std::mt19937_64& rng, float lo = -1.f,
                                 float hi = 1.f);

// float64 reference of A[M,K] * B[N,K]^T, row-major.
std::vector<double> ReferenceGemm(const std::vector<uint16_t>& a, const std::vector<uint16_t>& b,
                                  int m, int n, int k);

// Reference of the selected output rows only (for shapes too large for a full CPU oracle):
// result is rows.size() x n, in the order of `rows`.
std::vector<double> ReferenceGemmRows(const std::vector<uint16_t>& a,
                                      const std::vector<uint16_t>& b, int n, int k,
                                      const std::vector<int>& rows);

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

// Tolerances of the contract for an output dtype: BF16 output carries one BF16 rounding.
struct Tolerance {
  double rtol, atol, max_relative_l2;
};
Tolerance GemmTolerance(bool bf16_output, int k);

}  // namespace cake::workloads
