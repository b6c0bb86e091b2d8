#include "gemm_bf16.h"

#include <cmath>
#include <cstring>
#include <random>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "base/checked_int.h"
#include "google/protobuf/text_format.h"
#include "space.h"
#include "workloads/numeric.h"

namespace cake::workloads::gemm_bf16 {
namespace {

constexpr int kExtremeExponent = 48;
// Rows whose oracle would take more than 2^31 multiply-adds compare sampled output rows.
constexpr int64_t kFullOracleMacs = int64_t{1} << 31;
constexpr int kSampledRows = 96;
std::vector<double> DecodeOutput(const std::string& raw, bool bf16_out) {
  std::vector<double> out;
  if (bf16_out) {
    out.resize(raw.size() / 2);
    for (size_t e = 0; e < out.size(); ++e) {
      uint16_t v;
      std::memcpy(&v, raw.data() + 2 * e, 2);
      out[e] = Bf16ToFloat(v);
    }
  } else {
    out.resize(raw.size() / 4);
    for (size_t e = 0; e < out.size(); ++e) {
      float v;
      std::memcpy(&v, raw.data() + 4 * e, 4);
      out[e] = v;
    }
  }
  return out;
}

class GemmBf16 final : public Workload {
 public:
  std::string operation() const override { return kOperation; }
  std::string description() const override {
    return "C[M,N] = A[M,K] * B[N,K]^T: BF16 inputs, FP32 accumulation, BF16 or F32 output";
  }

  absl::Status CheckShape(const contract::ProblemShape& p) const override {
    if (!p.has_gemm_bf16()) return absl::InvalidArgumentError("shape is not a gemm_bf16 shape");
    const GemmShape& s = p.gemm_bf16();
    if (s.m() <= 0 || s.n() <= 0 || s.k() <= 0 || s.k() % 8 != 0)
      return absl::InvalidArgumentError("shape must be positive with K a multiple of 8");
    return CheckMatrixExtents(s.m(), s.n(), s.k());
  }

  absl::Status CheckContract(const contract::Contract& c) const override {
    if (c.output_dtype() != "bf16" && c.output_dtype() != "f32")
      return absl::InvalidArgumentError("output_dtype must be bf16 or f32");
    if (c.tolerance().max_relative_l2() <= 0 || c.tolerance().rtol() <= 0)
      return absl::InvalidArgumentError("contract tolerance must be positive");
    return absl::OkStatus();
  }

  int64_t WorkUnits(const contract::ProblemShape& p) const override {
    const GemmShape& s = p.gemm_bf16();
    return (base::CheckedInt(s.m()) * s.n() * s.k()).value();  // saturated, never wrapped
  }

  MatmulExtents Extents(const contract::ProblemShape& p) const override {
    const GemmShape& s = p.gemm_bf16();
    return {s.m(), s.n(), s.k()};
  }

  WorkModel Model(const contract::ProblemShape& p, const contract::Contract& c) const override {
    const GemmShape& s = p.gemm_bf16();
    WorkModel w;
    w.flops = 2.0 * s.m() * s.n() * s.k();
    w.bytes = 2.0 * (double(s.m()) * s.k() + double(s.n()) * s.k()) +
              (c.output_dtype() == "f32" ? 4.0 : 2.0) * s.m() * s.n();
    return w;
  }

  std::string ShapeText(const contract::ProblemShape& p) const override {
    const GemmShape& s = p.gemm_bf16();
    return absl::StrCat(s.m(), "x", s.n(), "x", s.k());
  }

  contract::ValidationPolicy DefaultPolicy() const override {
    contract::ValidationPolicy p;
    RequireEvidence(&p, evidence::NUMERICAL_CONTRACT);
    RequireEvidence(&p, evidence::MUTATION_AND_LIFECYCLE);
    RequireEvidence(&p, evidence::REPEATED_EXECUTION_DETERMINISM);
    AddPolicyCase(&p, "tails_small", Problem(264, 200, 520), contract::UNIFORM, "boundary");
    AddPolicyCase(&p, "extreme_magnitude", Problem(256, 192, 512), contract::EXTREME_MAGNITUDE,
                  "adversarial");
    AddPolicyCase(&p, "cancellation", Problem(256, 192, 512), contract::CANCELLATION,
                  "adversarial");
    AddPolicyCase(&p, "peaked", Problem(256, 192, 520), contract::PEAKED, "adversarial");
    AddPolicyCase(&p, "special_values", Problem(136, 72, 264), contract::SPECIAL_VALUES,
                  "adversarial");
    p.set_non_finite(contract::PROPAGATE);
    p.set_derive_boundary_cases(true);
    return p;
  }

  std::vector<Case> DerivedCases(const Tiles& tiles) const override {
    return MatrixTailCases(tiles, {8, 72, 264}, Problem);
  }

  std::vector<contract::ProblemShape> LifecycleShapes() const override {
    return {Problem(256, 192, 264), Problem(392, 264, 136)};
  }
  contract::ProblemShape DeterminismShape() const override { return Problem(1032, 1000, 1000); }

  std::vector<TensorSpec> Tensors(const contract::ProblemShape& p,
                                  const contract::Contract& c) const override {
    const GemmShape& s = p.gemm_bf16();
    const int out_bytes = c.output_dtype() == "f32" ? 4 : 2;
    return {{"A", size_t(s.m()) * s.k() * 2, 2, false},
            {"B", size_t(s.n()) * s.k() * 2, 2, false},
            {"C", size_t(s.m()) * s.n() * out_bytes, out_bytes, true}};
  }

  std::map<std::string, int64_t> Scalars(const contract::ProblemShape& p) const override {
    const GemmShape& s = p.gemm_bf16();
    return {{"M", s.m()}, {"N", s.n()}, {"K", s.k()}};
  }

  TensorBytes MakeInputs(const contract::ProblemShape& p, contract::InputDistribution dist,
                         uint64_t seed) const override {
    GemmInputs in = gemm_bf16::MakeInputs(p.gemm_bf16(), dist, seed);
    return {{"A", Bf16TensorBytes(in.a)}, {"B", Bf16TensorBytes(in.b)}};
  }

  void Judge(const contract::ProblemShape& p, const contract::Contract& c,
             contract::InputDistribution dist, uint64_t seed, const TensorBytes& inputs,
             const TensorBytes& outputs, int64_t unwritten, evidence::RowCheck* rc) const override {
    const GemmShape& s = p.gemm_bf16();
    const bool bf16_out = c.output_dtype() != "f32";
    const std::vector<uint16_t> a = Bf16FromTensorBytes(inputs.at("A")),
                                b = Bf16FromTensorBytes(inputs.at("B"));
    const std::vector<double> out = DecodeOutput(outputs.at("C"), bf16_out);
    std::vector<double> ref, compared;
    int sampled = 0;
    if (int64_t(s.m()) * s.n() * s.k() <= kFullOracleMacs) {
      ref = ReferenceGemm(a, b, s.m(), s.n(), s.k());
      compared = out;
    } else {
      std::mt19937_64 pick(seed ^ 0x5eed);
      std::vector<int> rows;
      for (int r = 0; r < kSampledRows; ++r)
        rows.push_back(static_cast<int>(pick() % static_cast<uint64_t>(s.m())));
      rows.push_back(s.m() - 1);
      sampled = static_cast<int>(rows.size());
      ref = ReferenceGemmRows(a, b, s.n(), s.k(), rows);
      for (int r : rows)
        compared.insert(compared.end(), out.begin() + int64_t(r) * s.n(),
                        out.begin() + int64_t(r + 1) * s.n());
    }
    // The tolerance is stated for unit-scale inputs: scaled inputs scale its absolute part.
    const contract::Tolerance& t = c.tolerance();
    const double atol = t.atol() * AbsoluteToleranceScale(dist);
    const auto cmp = CompareUnderPolicy(compared, ref, t.rtol(), atol, t.max_relative_l2());
    rc->set_non_finite(std::max(cmp.numbers.non_finite, unwritten));
    rc->set_out_of_tolerance(cmp.numbers.out_of_tolerance);
    rc->set_max_abs_error(cmp.numbers.max_abs_error);
    rc->set_relative_l2_error(cmp.numbers.relative_l2_error);
    rc->set_nonfinite_policy_violations(cmp.policy_violations);
    rc->set_sampled_rows(sampled);
    rc->set_passed(cmp.passed && unwritten == 0);
    if (unwritten > 0)
      rc->set_failure(absl::StrCat(unwritten, " output elements never written (poison left)"));
    else if (cmp.policy_violations > 0)
      rc->set_failure(absl::StrCat(cmp.policy_violations,
                                   " outputs break the NaN/Inf policy (non-finite where the oracle "
                                   "is finite, or the wrong non-finite value)"));
    else if (!cmp.passed)
      rc->set_failure(absl::StrFormat(
          "%d elements out of tolerance; relative L2 error %.3g (limit %.3g)",
          cmp.numbers.out_of_tolerance, cmp.numbers.relative_l2_error, t.max_relative_l2()));
  }

  std::vector<Proposal> ScheduleSpace() const override { return Proposals(WarpGemmCandidates()); }
  std::vector<Proposal> SearchSpace() const override { return Proposals(WarpGemmSearchSpace()); }

 private:
  static std::vector<Proposal> Proposals(const std::vector<WarpGemmParams>& points) {
    std::vector<Proposal> out;
    for (const WarpGemmParams& p : points) {
      Proposal prop;
      prop.label = p.Describe();
      google::protobuf::TextFormat::PrintToString(MakeWarpGemm(p), &prop.schedule_text);
      prop.hypothesis.add_changed_decisions(p.Describe());
      prop.hypothesis.set_expected_effect(
          absl::StrCat("tile geometry ", p.Describe(), " changes data reuse and occupancy"));
      prop.hypothesis.set_falsification(
          "paired timing against the incumbent is not FASTER beyond the practical floor");
      out.push_back(std::move(prop));
    }
    return out;
  }
};

CAKE_REGISTER_WORKLOAD(GemmBf16);

}  // namespace

GemmShape Shape(int m, int n, int k) {
  GemmShape s;
  s.set_m(m);
  s.set_n(n);
  s.set_k(k);
  return s;
}

contract::ProblemShape Problem(int m, int n, int k) {
  contract::ProblemShape p;
  *p.mutable_gemm_bf16() = Shape(m, n, k);
  return p;
}

const Workload& GemmWorkload() { return *FindWorkload(kOperation); }

double AbsoluteToleranceScale(contract::InputDistribution dist) {
  return dist == contract::EXTREME_MAGNITUDE ? std::ldexp(1.0, 2 * kExtremeExponent) : 1.0;
}

GemmInputs MakeInputs(const GemmShape& s, contract::InputDistribution dist, uint64_t seed) {
  std::mt19937_64 rng(seed);
  const size_t m = size_t(s.m()), n = size_t(s.n()), k = size_t(s.k());
  GemmInputs in;
  switch (dist) {
    case contract::EXTREME_MAGNITUDE: {
      // Scaling by a power of two is exact in BF16; products reach ~2^96, sums stay far below
      // FP32's 2^128.
      const float scale = std::ldexp(1.0f, kExtremeExponent);
      in.a = RandomBf16(m * k, rng, -scale, scale);
      in.b = RandomBf16(n * k, rng, -scale, scale);
      break;
    }
    case contract::CANCELLATION: {
      in.a = RandomBf16(m * k, rng);
      in.b = RandomBf16(n * k, rng);
      if (k % 16 != 0) break;
      const size_t h = k / 2;
      for (size_t i = 0; i < m; ++i)
        for (size_t p = 0; p < h; ++p) in.a[i * k + h + p] = in.a[i * k + p];
      // Even output columns are exactly zero: every term appears once with each sign.
      for (size_t j = 0; j < n; ++j)
        for (size_t p = 0; p < h; ++p)
          in.b[j * k + h + p] =
              j % 2 == 0 ? static_cast<uint16_t>(in.b[j * k + p] ^ 0x8000u) : in.b[j * k + p];
      break;
    }
    case contract::PEAKED: {
      in.a = RandomBf16(m * k, rng, -0.0625f, 0.0625f);
      in.b = RandomBf16(n * k, rng);
      for (size_t i = 0; i < m; ++i)
        in.a[i * k + rng() % k] = FloatToBf16(rng() % 2 ? 1024.f : -1024.f);
      break;
    }
    case contract::SPECIAL_VALUES: {
      in.a = RandomBf16(m * k, rng);
      in.b = RandomBf16(n * k, rng);
      in.a[(rng() % m) * k + rng() % k] = 0x7FC1;  // a quiet NaN: its row of C must be NaN
      in.b[(rng() % n) * k + rng() % k] = 0x7F80;  // +Inf: its column of C must be +-Inf
      break;
    }
    default:
      in.a = RandomBf16(m * k, rng);
      in.b = RandomBf16(n * k, rng);
  }
  return in;
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

Tolerance GemmTolerance(bool bf16_output, int k) {
  // FP32 accumulation of exact BF16 products: error grows like sqrt(K) * 2^-24 * |terms|; with
  // inputs in [-1, 1] each term is <= 1. BF16 output adds one rounding (2^-8 relative).
  const double accumulation = 4.0 * std::sqrt(static_cast<double>(k)) * 6e-8 * k;
  if (bf16_output) return {1.0 / 128.0, accumulation + 1e-3, 8e-3};
  return {1e-4, accumulation + 1e-5, 1e-4};
}

std::vector<double> OracleFingerprint(const std::vector<uint16_t>& a,
                                      const std::vector<uint16_t>& b, int m, int n, int k,
                                      uint64_t seed_u, uint64_t seed_v, double* scale) {
  constexpr int kP = 4;
  std::vector<double> xa(size_t(kP) * k), xb(size_t(kP) * k), ca(k), cb(k);
  auto project = [&](const std::vector<uint16_t>& x, int rows, uint64_t seed,
                     std::vector<double>& proj, std::vector<double>& colsq) {
    for (int r = 0; r < rows; ++r) {
      const uint64_t bits = Mix64(seed ^ Mix64(uint64_t(r)));
      for (int c = 0; c < k; ++c) {
        const double v = Bf16ToFloat(x[size_t(r) * k + c]);
        colsq[c] += v * v;
        for (int p = 0; p < kP; ++p) proj[size_t(p) * k + c] += ((bits >> (63 - p)) & 1) ? v : -v;
      }
    }
  };
  project(a, m, seed_u, xa, ca);
  project(b, n, seed_v, xb, cb);
  std::vector<double> f(kP);
  double s2 = 0;
  for (int c = 0; c < k; ++c) {
    for (int p = 0; p < kP; ++p) f[p] += xa[size_t(p) * k + c] * xb[size_t(p) * k + c];
    s2 += ca[c] * cb[c];
  }
  if (scale) *scale = std::sqrt(s2);
  return f;
}

std::vector<double> OutputFingerprint(const std::vector<double>& c, int m, int n, uint64_t seed_u,
                                      uint64_t seed_v) {
  constexpr int kP = 4;
  std::vector<double> f(kP);
  for (int i = 0; i < m; ++i) {
    const uint64_t bu = Mix64(seed_u ^ Mix64(uint64_t(i)));
    for (int j = 0; j < n; ++j) {
      const uint64_t bv = Mix64(seed_v ^ Mix64(uint64_t(j)));
      for (int p = 0; p < kP; ++p) {
        const bool su = (bu >> (63 - p)) & 1, sv = (bv >> (63 - p)) & 1;
        f[p] += (su == sv ? 1.0 : -1.0) * c[size_t(i) * n + j];
      }
    }
  }
  return f;
}

double FingerprintTolerance(double scale, double max_relative_l2) {
  return 8.0 * max_relative_l2 * scale;
}

}  // namespace cake::workloads::gemm_bf16
