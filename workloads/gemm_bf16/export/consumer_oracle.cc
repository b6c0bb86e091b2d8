// The export consumer's oracle of gemm_bf16_tn (examples/export_consumer/oracle.h): C[M,N] (BF16)
// against A[M,K] * B[N,K]^T in float64, |c - ref| <= 0.01 + 2^-7 |ref| (the bundled contract's
// tolerance), on about 96 rows spread over M.
#include <algorithm>
#include <cmath>

#include "oracle.h"

namespace {

consumer::CheckResult CheckGemm(const consumer::Shape& s, const consumer::Tensors& in,
                                const consumer::Tensors& out) {
  const int64_t m = s.at("M"), n = s.at("N"), k = s.at("K");
  const auto a = consumer::As<uint16_t>(in.at("A")), b = consumer::As<uint16_t>(in.at("B"));
  const auto c = consumer::As<uint16_t>(out.at("C"));
  consumer::CheckResult r;
  for (int64_t i = 0; i < m; i += std::max<int64_t>(1, m / 96))
    for (int64_t j = 0; j < n; ++j) {
      double ref = 0;
      for (int64_t p = 0; p < k; ++p)
        ref += double(consumer::Bf16ToFloat(a[i * k + p])) * consumer::Bf16ToFloat(b[j * k + p]);
      const double got = consumer::Bf16ToFloat(c[i * n + j]);
      r.Note(std::fabs(got - ref), 0.01 + 0.0078125 * std::fabs(ref),
             "C[" + std::to_string(i) + "," + std::to_string(j) + "] = " + std::to_string(got) +
                 ", oracle " + std::to_string(ref));
    }
  r.passed = r.failed == 0 && r.checked > 0;
  return r;
}

const bool registered = consumer::RegisterOracle("gemm_bf16_tn", CheckGemm);

}  // namespace
