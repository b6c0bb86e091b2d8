#include "workloads/exact_judge.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "workloads/numeric.h"

namespace cake::workloads {
namespace {

// The exact oracle costs about 10 ns a term: problems over 2^26 multiply-adds compare sampled
// elements.
constexpr int64_t kFullOracleMacs = int64_t{1} << 26;
constexpr int kSampledElements = 512;

}  // namespace

void JudgeAgainstExact(int m, int n, int k, uint64_t seed, const std::string& c_bf16,
                       int64_t unwritten, const contract::Tolerance& t,
                       const std::function<ExactElement(int i, int j)>& element,
                       evidence::RowCheck* rc) {
  std::vector<std::pair<int, int>> elements;
  int sampled = 0;
  if (int64_t(m) * n * k <= kFullOracleMacs) {
    for (int i = 0; i < m; ++i)
      for (int j = 0; j < n; ++j) elements.emplace_back(i, j);
  } else {
    std::mt19937_64 pick(seed ^ 0x5eed);
    for (int e = 0; e < kSampledElements; ++e)
      elements.emplace_back(int(pick() % uint64_t(m)), int(pick() % uint64_t(n)));
    elements.emplace_back(m - 1, n - 1);
    sampled = int(elements.size());
  }
  int64_t non_finite = 0, out_of_tolerance = 0, policy_violations = 0;
  double max_abs = 0, err2 = 0, ref2 = 0;
  for (const auto& [i, j] : elements) {
    const ExactElement e = element(i, j);
    const double ref = e.exact;
    uint16_t bits;
    std::memcpy(&bits, c_bf16.data() + 2 * (size_t(i) * n + j), 2);
    const double got = Bf16ToFloat(bits);
    if (!std::isfinite(got)) ++non_finite;
    if (std::isnan(ref) || std::isinf(ref)) {
      const bool same = std::isnan(ref) ? std::isnan(got) : got == ref;
      policy_violations += same ? 0 : 1;
      continue;
    }
    if (!std::isfinite(got)) {
      ++policy_violations;
      continue;
    }
    const double error = std::fabs(got - ref);
    const double bound =
        t.atol() + t.rtol() * std::fabs(ref) + (k + 1) * std::ldexp(e.magnitude, -23);
    out_of_tolerance += error > bound ? 1 : 0;
    max_abs = std::max(max_abs, error);
    err2 += error * error;
    ref2 += ref * ref;
  }
  const double rel_l2 = ref2 > 0 ? std::sqrt(err2 / ref2) : (err2 > 0 ? INFINITY : 0.0);
  rc->set_non_finite(std::max(non_finite, unwritten));
  rc->set_out_of_tolerance(out_of_tolerance);
  rc->set_max_abs_error(max_abs);
  rc->set_relative_l2_error(rel_l2);
  rc->set_nonfinite_policy_violations(policy_violations);
  rc->set_sampled_rows(sampled);
  const bool passed = unwritten == 0 && policy_violations == 0 && out_of_tolerance == 0 &&
                      rel_l2 <= t.max_relative_l2();
  rc->set_passed(passed);
  if (unwritten > 0)
    rc->set_failure(absl::StrCat(unwritten, " output elements never written (poison left)"));
  else if (policy_violations > 0)
    rc->set_failure(absl::StrCat(policy_violations,
                                 " outputs break the NaN policy (non-finite where the oracle is "
                                 "finite, or finite where a NaN must propagate)"));
  else if (!passed)
    rc->set_failure(
        absl::StrFormat("%d elements out of tolerance; relative L2 error %.3g (limit %.3g)",
                        out_of_tolerance, rel_l2, t.max_relative_l2()));
}

}  // namespace cake::workloads
