#include "gemm_blockscaled.h"

#include <algorithm>
#include <cmath>
#include <random>
#include <utility>

#include "absl/strings/str_cat.h"
#include "base/checked_int.h"
#include "schedules.h"
#include "workloads/block_scaled_mma.h"
#include "workloads/exact_judge.h"
#include "workloads/narrow_float.h"
#include "workloads/numeric.h"

namespace cake::workloads::gemm_blockscaled {
namespace {

constexpr NarrowFormat kFormat = NarrowFormat::kE4M3;
// K in whole groups of the block-scaled forms' scales (32 elements of K per UE8M0).
constexpr int kKMultiple = 32;

bool FiniteCode(uint32_t c) { return std::isfinite(DecodeNarrow(kFormat, c)); }

std::vector<uint8_t> Codes(size_t count, std::mt19937_64& rng, bool (*accept)(uint32_t)) {
  std::vector<uint8_t> out(count);
  for (uint8_t& c : out) {
    uint32_t v;
    do v = static_cast<uint32_t>(rng() & 0xFF);
    while (!accept(v));
    c = static_cast<uint8_t>(v);
  }
  return out;
}

class GemmBlockScaled final : public Workload {
 public:
  std::string operation() const override { return kOperation; }
  std::string description() const override {
    return "C[M,N] = A[M,K] * B[N,K]^T: E4M3 inputs (legacy or unit-scale block-scaled MMA), "
           "FP32 accumulation, BF16 output";
  }

  absl::Status CheckShape(const contract::ProblemShape& p) const override {
    if (!p.has_gemm_blockscaled())
      return absl::InvalidArgumentError("shape is not a gemm_blockscaled shape");
    const BlockScaledGemmShape& s = p.gemm_blockscaled();
    if (s.m() <= 0 || s.n() <= 0 || s.k() <= 0 || s.k() % kKMultiple != 0)
      return absl::InvalidArgumentError(absl::StrCat("shape must be positive with K a multiple of ",
                                                     kKMultiple, " (one scale group)"));
    return CheckMatrixExtents(s.m(), s.n(), s.k());
  }

  absl::Status CheckContract(const contract::Contract& c) const override {
    if (c.input_dtype() != "e4m3")
      return absl::InvalidArgumentError(
          absl::StrCat("input_dtype '", c.input_dtype(),
                       "': this workload's schedule space reads E4M3 operands (want e4m3)"));
    if (c.output_dtype() != "bf16") return absl::InvalidArgumentError("output_dtype must be bf16");
    if (!c.accumulate_dtype().empty() && c.accumulate_dtype() != "f32")
      return absl::InvalidArgumentError("accumulate_dtype must be f32");
    if (c.tolerance().max_relative_l2() <= 0 || c.tolerance().rtol() <= 0)
      return absl::InvalidArgumentError("contract tolerance must be positive");
    return absl::OkStatus();
  }

  int64_t WorkUnits(const contract::ProblemShape& p) const override {
    const BlockScaledGemmShape& s = p.gemm_blockscaled();
    return (base::CheckedInt(s.m()) * s.n() * s.k()).value();
  }
  MatmulExtents Extents(const contract::ProblemShape& p) const override {
    const BlockScaledGemmShape& s = p.gemm_blockscaled();
    return {s.m(), s.n(), s.k()};
  }
  WorkModel Model(const contract::ProblemShape& p, const contract::Contract&) const override {
    const BlockScaledGemmShape& s = p.gemm_blockscaled();
    WorkModel w;
    w.flops = 2.0 * s.m() * s.n() * s.k();
    w.bytes = double(s.m()) * s.k() + double(s.n()) * s.k() + 2.0 * s.m() * s.n();
    return w;
  }
  std::string ShapeText(const contract::ProblemShape& p) const override {
    const BlockScaledGemmShape& s = p.gemm_blockscaled();
    return absl::StrCat(s.m(), "x", s.n(), "x", s.k());
  }

  contract::ValidationPolicy DefaultPolicy() const override {
    contract::ValidationPolicy p;
    RequireEvidence(&p, evidence::NUMERICAL_CONTRACT);
    RequireEvidence(&p, evidence::MUTATION_AND_LIFECYCLE);
    RequireEvidence(&p, evidence::REPEATED_EXECUTION_DETERMINISM);
    AddPolicyCase(&p, "tails_small", Problem(264, 200, 544), contract::UNIFORM, "boundary");
    AddPolicyCase(&p, "extreme_magnitude", Problem(256, 192, 512), contract::EXTREME_MAGNITUDE,
                  "adversarial");
    AddPolicyCase(&p, "cancellation", Problem(256, 192, 512), contract::CANCELLATION,
                  "adversarial");
    AddPolicyCase(&p, "peaked", Problem(256, 192, 544), contract::PEAKED, "adversarial");
    AddPolicyCase(&p, "special_values", Problem(136, 72, 288), contract::SPECIAL_VALUES,
                  "adversarial");
    p.set_non_finite(contract::PROPAGATE);
    p.set_derive_boundary_cases(true);
    return p;
  }

  std::vector<Case> DerivedCases(const Tiles& tiles) const override {
    return MatrixTailCases(tiles, {32, 96, 288}, Problem);
  }

  std::vector<contract::ProblemShape> LifecycleShapes() const override {
    return {Problem(256, 192, 288), Problem(392, 264, 160)};
  }
  contract::ProblemShape DeterminismShape() const override { return Problem(1032, 1000, 1024); }

  std::vector<TensorSpec> Tensors(const contract::ProblemShape& p,
                                  const contract::Contract&) const override {
    const BlockScaledGemmShape& s = p.gemm_blockscaled();
    return {{"A", size_t(s.m()) * s.k(), 1, false},
            {"B", size_t(s.n()) * s.k(), 1, false},
            {"C", size_t(s.m()) * s.n() * 2, 2, true}};
  }
  std::map<std::string, int64_t> Scalars(const contract::ProblemShape& p) const override {
    const BlockScaledGemmShape& s = p.gemm_blockscaled();
    return {{"M", s.m()}, {"N", s.n()}, {"K", s.k()}};
  }

  TensorBytes MakeInputs(const contract::ProblemShape& p, contract::InputDistribution dist,
                         uint64_t seed) const override {
    const Fp8Inputs in = gemm_blockscaled::MakeInputs(p.gemm_blockscaled(), dist, seed);
    return {{"A", std::string(in.a.begin(), in.a.end())},
            {"B", std::string(in.b.begin(), in.b.end())}};
  }

  void Judge(const contract::ProblemShape& p, const contract::Contract& c,
             contract::InputDistribution, uint64_t seed, const TensorBytes& inputs,
             const TensorBytes& outputs, int64_t unwritten, evidence::RowCheck* rc) const override {
    const BlockScaledGemmShape& s = p.gemm_blockscaled();
    const std::string& a = inputs.at("A");
    const std::string& b = inputs.at("B");
    const std::string& out = outputs.at("C");
    const MmaForm form = *MakeMmaForm(MmaKind::kLegacyF8, kFormat, kFormat);
    double decoded[256];
    for (int code = 0; code < 256; ++code) decoded[code] = DecodeNarrow(kFormat, uint32_t(code));

    GemmOperands one;
    one.m = one.n = 1;
    one.k = s.k();
    JudgeAgainstExact(
        s.m(), s.n(), s.k(), seed, out, unwritten, c.tolerance(),
        [&](int i, int j) {
          const auto* ar = reinterpret_cast<const uint8_t*>(a.data()) + size_t(i) * s.k();
          const auto* br = reinterpret_cast<const uint8_t*>(b.data()) + size_t(j) * s.k();
          one.a.assign(ar, ar + s.k());
          one.b.assign(br, br + s.k());
          ExactElement e;
          for (int kk = 0; kk < s.k(); ++kk)
            e.magnitude += std::fabs(decoded[ar[kk]] * decoded[br[kk]]);
          const auto exact = GemmReference(form, one);
          e.exact = exact.ok() ? double((*exact)[0]) : std::nan("");
          return e;
        },
        rc);
  }

  std::vector<Proposal> ScheduleSpace() const override { return Proposals(ListedPoints()); }
  std::vector<Proposal> SearchSpace() const override {
    std::vector<Fp8GemmPoint> points = ListedPoints();
    for (const Fp8GemmPoint& p : Fp8GemmGrid())
      if (std::none_of(points.begin(), points.end(),
                       [&](const Fp8GemmPoint& q) { return q.Describe() == p.Describe(); }))
        points.push_back(p);
    return Proposals(points);
  }

 private:
  static std::vector<Fp8GemmPoint> ListedPoints() {
    std::vector<Fp8GemmPoint> out;
    for (const Fp8GemmPoint& p : Fp8GemmPoints())
      if (p.operand == kFormat) out.push_back(p);
    return out;
  }
  static std::vector<Proposal> Proposals(const std::vector<Fp8GemmPoint>& points) {
    std::vector<Proposal> out;
    for (const Fp8GemmPoint& p : points) {
      Proposal prop;
      prop.label = p.Describe();
      prop.schedule_text = Fp8GemmSchedule(p);
      prop.hypothesis.add_changed_decisions(p.Describe());
      prop.hypothesis.set_expected_effect(
          p.form == Fp8Form::kUnitScale
              ? absl::StrCat("the block-scaled form with unit UE8M0 scales (QMMA.SF) on tiles ",
                             p.Describe(), ": about twice the legacy form's MMA rate on SM12x")
              : absl::StrCat("the legacy FP8 form (QMMA.16832) on tiles ", p.Describe()));
      prop.hypothesis.set_falsification(
          "paired timing against the incumbent on an SM12x device is not FASTER beyond the "
          "practical floor");
      out.push_back(std::move(prop));
    }
    return out;
  }
};

CAKE_REGISTER_WORKLOAD(GemmBlockScaled);

}  // namespace

contract::ProblemShape Problem(int m, int n, int k) {
  contract::ProblemShape p;
  BlockScaledGemmShape* s = p.mutable_gemm_blockscaled();
  s->set_m(m);
  s->set_n(n);
  s->set_k(k);
  return p;
}

Fp8Inputs MakeInputs(const BlockScaledGemmShape& s, contract::InputDistribution dist,
                     uint64_t seed) {
  std::mt19937_64 rng(seed);
  const size_t m = size_t(s.m()), n = size_t(s.n()), k = size_t(s.k());
  Fp8Inputs in;
  switch (dist) {
    case contract::EXTREME_MAGNITUDE: {
      // The top binade (256..448) and the subnormals (2^-9 .. 7 * 2^-9), either sign.
      auto extreme = +[](uint32_t c) {
        const uint32_t magnitude = c & 0x7F;
        return FiniteCode(c) && (magnitude >= 0x78 || (magnitude >= 0x01 && magnitude <= 0x07));
      };
      in.a = Codes(m * k, rng, extreme);
      in.b = Codes(n * k, rng, extreme);
      break;
    }
    case contract::CANCELLATION: {
      in.a = Codes(m * k, rng, FiniteCode);
      in.b = Codes(n * k, rng, FiniteCode);
      const size_t h = k / 2;
      for (size_t i = 0; i < m; ++i)
        for (size_t q = 0; q < h; ++q) in.a[i * k + h + q] = in.a[i * k + q];
      // Even output columns are exactly zero: every product appears once with each sign.
      for (size_t j = 0; j < n; ++j)
        for (size_t q = 0; q < h; ++q)
          in.b[j * k + h + q] =
              j % 2 == 0 ? static_cast<uint8_t>(in.b[j * k + q] ^ 0x80u) : in.b[j * k + q];
      break;
    }
    case contract::PEAKED: {
      // Magnitudes up to 1/16 (exponent field at most 3), one +-448 per row of A.
      auto small = +[](uint32_t c) { return FiniteCode(c) && (c & 0x7F) < 0x20; };
      in.a = Codes(m * k, rng, small);
      in.b = Codes(n * k, rng, FiniteCode);
      for (size_t i = 0; i < m; ++i) in.a[i * k + rng() % k] = rng() % 2 ? 0x7E : 0xFE;
      break;
    }
    case contract::SPECIAL_VALUES: {
      in.a = Codes(m * k, rng, FiniteCode);
      in.b = Codes(n * k, rng, FiniteCode);
      in.a[(rng() % m) * k + rng() % k] = 0x7F;  // NaN: its row of C must be NaN
      in.b[(rng() % n) * k + rng() % k] = 0xFF;  // NaN: its column of C must be NaN
      break;
    }
    default:
      in.a = Codes(m * k, rng, FiniteCode);
      in.b = Codes(n * k, rng, FiniteCode);
  }
  return in;
}

}  // namespace cake::workloads::gemm_blockscaled
