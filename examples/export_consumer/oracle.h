// Host-side inputs and checks of the consumer: fresh random BF16 inputs, and float64 oracles of
// the two exported operations this example knows (gemm_bf16_tn, kmeans_assign) with the bundled
// contracts' tolerances.
#pragma once

#include <cstdint>
#include <map>
#include <random>
#include <string>
#include <vector>

namespace consumer {

using Shape = std::map<std::string, int64_t>;

float Bf16ToFloat(uint16_t b);
uint16_t FloatToBf16(float f);  // round to nearest even
std::vector<uint16_t> RandomBf16(size_t n, std::mt19937_64& rng);

struct CheckResult {
  bool passed = false;
  int64_t checked = 0;
  int64_t failed = 0;
  double worst = 0;  // worst error over its bound
  std::string first_failure;
};

// C[M,N] (BF16) against A[M,K] * B[N,K]^T in float64: |c - ref| <= 0.01 + 2^-7 |ref|; every
// `row_step`-th row.
CheckResult CheckGemm(const Shape& s, const std::vector<uint16_t>& a,
                      const std::vector<uint16_t>& b, const std::vector<uint16_t>& c,
                      int64_t row_step);

// idx/dist[B,N] against X[B,N,D], C[B,K,D]: the reported centroid's distance within
// 1e-6 + 6e-5 (|x|^2 + |c_rep|^2 + |c_min|^2) of the minimum, and dist within the same of it;
// every `point_step`-th point.
CheckResult CheckKMeans(const Shape& s, const std::vector<uint16_t>& x,
                        const std::vector<uint16_t>& c, const std::vector<int32_t>& idx,
                        const std::vector<float>& dist, int64_t point_step);

}  // namespace consumer
