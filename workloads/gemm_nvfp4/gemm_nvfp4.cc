#include "workloads/gemm_nvfp4/gemm_nvfp4.h"

#include <algorithm>
#include <cmath>
#include <random>
#include <utility>

#include "absl/strings/str_cat.h"
#include "base/checked_int.h"
#include "workloads/block_scaled_mma.h"
#include "workloads/exact_judge.h"
#include "workloads/gemm_nvfp4/schedules.h"
#include "workloads/narrow_float.h"
#include "workloads/numeric.h"

namespace cake::workloads::gemm_nvfp4 {
namespace {

constexpr uint8_t kScaleNan = 0x7F, kScaleOne = 0x38, kScaleMax = 0x7E;

// `count` codes drawn uniformly from [lo, hi], those `accept` keeps.
std::vector<uint8_t> Draw(size_t count, std::mt19937_64& rng, uint8_t lo, uint8_t hi,
                          bool (*accept)(uint8_t) = nullptr) {
  std::vector<uint8_t> out(count);
  std::uniform_int_distribution<int> pick(lo, hi);
  for (uint8_t& c : out) {
    do c = static_cast<uint8_t>(pick(rng));
    while (accept != nullptr && !accept(c));
  }
  return out;
}

Nvfp4Operand Uniform(size_t rows, size_t k, std::mt19937_64& rng) {
  return {Draw(rows * k, rng, 0, 15), Draw(rows * k / kScaleGroup, rng, 0, kScaleMax)};
}

MmaForm Form() {
  return *MakeMmaForm(MmaKind::kMxF4NvF4, NarrowFormat::kE2M1, NarrowFormat::kE2M1,
                      NarrowFormat::kUE4M3, kScaleGroup);
}

class GemmNvfp4 final : public Workload {
 public:
  std::string operation() const override { return kOperation; }
  std::string description() const override {
    return "C[M,N] = (A . SA) * (B . SB)^T: E2M1 inputs packed two to a byte, UE4M3 scales per "
           "16 of K (mma.sync kind::mxf4nvf4, SM12x), FP32 accumulation, BF16 output";
  }

  absl::Status CheckShape(const contract::ProblemShape& p) const override {
    if (!p.has_gemm_nvfp4()) return absl::InvalidArgumentError("shape is not a gemm_nvfp4 shape");
    const Nvfp4GemmShape& s = p.gemm_nvfp4();
    if (s.m() <= 0 || s.n() <= 0 || s.k() <= 0 || s.k() % kKMultiple != 0)
      return absl::InvalidArgumentError(absl::StrCat("shape must be positive with K a multiple of ",
                                                     kKMultiple, " (four scale groups)"));
    return CheckMatrixExtents(s.m(), s.n(), s.k());
  }

  absl::Status CheckContract(const contract::Contract& c) const override {
    if (c.input_dtype() != "nvfp4")
      return absl::InvalidArgumentError(absl::StrCat(
          "input_dtype '", c.input_dtype(),
          "': this workload reads E2M1 operands with UE4M3 scales per 16 (want nvfp4)"));
    if (c.output_dtype() != "bf16") return absl::InvalidArgumentError("output_dtype must be bf16");
    if (!c.accumulate_dtype().empty() && c.accumulate_dtype() != "f32")
      return absl::InvalidArgumentError("accumulate_dtype must be f32");
    if (c.tolerance().max_relative_l2() <= 0 || c.tolerance().rtol() <= 0)
      return absl::InvalidArgumentError("contract tolerance must be positive");
    return absl::OkStatus();
  }

  int64_t WorkUnits(const contract::ProblemShape& p) const override {
    const Nvfp4GemmShape& s = p.gemm_nvfp4();
    return (base::CheckedInt(s.m()) * s.n() * s.k()).value();
  }
  MatmulExtents Extents(const contract::ProblemShape& p) const override {
    const Nvfp4GemmShape& s = p.gemm_nvfp4();
    return {s.m(), s.n(), s.k()};
  }
  WorkModel Model(const contract::ProblemShape& p, const contract::Contract&) const override {
    const Nvfp4GemmShape& s = p.gemm_nvfp4();
    WorkModel w;
    w.flops = 2.0 * s.m() * s.n() * s.k();
    // Half a byte an element plus a scale byte per 16, read once; BF16 out.
    w.bytes = (double(s.m()) + s.n()) * s.k() * (0.5 + 1.0 / kScaleGroup) + 2.0 * s.m() * s.n();
    return w;
  }
  std::string ShapeText(const contract::ProblemShape& p) const override {
    const Nvfp4GemmShape& s = p.gemm_nvfp4();
    return absl::StrCat(s.m(), "x", s.n(), "x", s.k());
  }

  contract::ValidationPolicy DefaultPolicy() const override {
    contract::ValidationPolicy p;
    RequireEvidence(&p, evidence::NUMERICAL_CONTRACT);
    RequireEvidence(&p, evidence::MUTATION_AND_LIFECYCLE);
    RequireEvidence(&p, evidence::REPEATED_EXECUTION_DETERMINISM);
    AddPolicyCase(&p, "tails_small", Problem(264, 200, 576), contract::UNIFORM, "boundary");
    AddPolicyCase(&p, "extreme_magnitude", Problem(256, 192, 512), contract::EXTREME_MAGNITUDE,
                  "adversarial");
    AddPolicyCase(&p, "cancellation", Problem(256, 192, 512), contract::CANCELLATION,
                  "adversarial");
    AddPolicyCase(&p, "peaked", Problem(256, 192, 576), contract::PEAKED, "adversarial");
    AddPolicyCase(&p, "special_values", Problem(136, 72, 320), contract::SPECIAL_VALUES,
                  "adversarial");
    p.set_non_finite(contract::PROPAGATE);
    p.set_derive_boundary_cases(true);
    return p;
  }

  std::vector<Case> DerivedCases(const Tiles& tiles) const override {
    return MatrixTailCases(tiles, {64, 192, 320}, Problem);
  }

  std::vector<contract::ProblemShape> LifecycleShapes() const override {
    return {Problem(256, 192, 320), Problem(392, 264, 192)};
  }
  contract::ProblemShape DeterminismShape() const override { return Problem(1032, 1000, 1024); }

  std::vector<TensorSpec> Tensors(const contract::ProblemShape& p,
                                  const contract::Contract&) const override {
    const Nvfp4GemmShape& s = p.gemm_nvfp4();
    const size_t m = size_t(s.m()), n = size_t(s.n()), k = size_t(s.k());
    return {{"A", m * k / 2, 1, false},
            {"B", n * k / 2, 1, false},
            {"SA", m * k / kScaleGroup, 1, false},
            {"SB", n * k / kScaleGroup, 1, false},
            {"C", m * n * 2, 2, true}};
  }
  std::map<std::string, int64_t> Scalars(const contract::ProblemShape& p) const override {
    const Nvfp4GemmShape& s = p.gemm_nvfp4();
    return {{"M", s.m()}, {"N", s.n()}, {"K", s.k()}};
  }

  TensorBytes MakeInputs(const contract::ProblemShape& p, contract::InputDistribution dist,
                         uint64_t seed) const override {
    const Nvfp4Inputs in = gemm_nvfp4::MakeInputs(p.gemm_nvfp4(), dist, seed);
    const auto bytes = [](const std::vector<uint8_t>& v) {
      return std::string(v.begin(), v.end());
    };
    return {{"A", bytes(PackE2M1(in.a.codes))},
            {"B", bytes(PackE2M1(in.b.codes))},
            {"SA", bytes(in.a.scales)},
            {"SB", bytes(in.b.scales)}};
  }

  void Judge(const contract::ProblemShape& p, const contract::Contract& c,
             contract::InputDistribution, uint64_t seed, const TensorBytes& inputs,
             const TensorBytes& outputs, int64_t unwritten, evidence::RowCheck* rc) const override {
    const Nvfp4GemmShape& s = p.gemm_nvfp4();
    const int k = s.k(), groups = k / kScaleGroup;
    const std::vector<uint8_t> a = UnpackE2M1(inputs.at("A"));
    const std::vector<uint8_t> b = UnpackE2M1(inputs.at("B"));
    const std::string& sa = inputs.at("SA");
    const std::string& sb = inputs.at("SB");
    const MmaForm form = Form();
    GemmOperands one;
    one.m = one.n = 1;
    one.k = k;
    JudgeAgainstExact(
        s.m(), s.n(), k, seed, outputs.at("C"), unwritten, c.tolerance(),
        [&](int i, int j) {
          one.a.assign(a.begin() + size_t(i) * k, a.begin() + size_t(i + 1) * k);
          one.b.assign(b.begin() + size_t(j) * k, b.begin() + size_t(j + 1) * k);
          one.scale_a.assign(sa.begin() + size_t(i) * groups, sa.begin() + size_t(i + 1) * groups);
          one.scale_b.assign(sb.begin() + size_t(j) * groups, sb.begin() + size_t(j + 1) * groups);
          for (uint32_t& v : one.scale_a) v &= 0xFF;
          for (uint32_t& v : one.scale_b) v &= 0xFF;
          ExactElement e;
          for (int kk = 0; kk < k; ++kk)
            e.magnitude +=
                std::fabs(DecodeNarrow(NarrowFormat::kE2M1, one.a[kk]) *
                          DecodeNarrow(NarrowFormat::kUE4M3, one.scale_a[kk / kScaleGroup]) *
                          DecodeNarrow(NarrowFormat::kE2M1, one.b[kk]) *
                          DecodeNarrow(NarrowFormat::kUE4M3, one.scale_b[kk / kScaleGroup]));
          const auto exact = GemmReference(form, one);
          e.exact = exact.ok() ? double((*exact)[0]) : std::nan("");
          return e;
        },
        rc);
  }

  std::vector<Proposal> ScheduleSpace() const override { return Proposals(Nvfp4GemmPoints()); }
  std::vector<Proposal> SearchSpace() const override {
    std::vector<Nvfp4GemmPoint> points = Nvfp4GemmPoints();
    for (const Nvfp4GemmPoint& p : Nvfp4GemmGrid())
      if (std::none_of(points.begin(), points.end(),
                       [&](const Nvfp4GemmPoint& q) { return q.Describe() == p.Describe(); }))
        points.push_back(p);
    return Proposals(points);
  }

 private:
  static std::vector<Proposal> Proposals(const std::vector<Nvfp4GemmPoint>& points) {
    std::vector<Proposal> out;
    for (const Nvfp4GemmPoint& p : points) {
      Proposal prop;
      prop.label = p.Describe();
      prop.schedule_text = Nvfp4GemmSchedule(p);
      prop.hypothesis.add_changed_decisions(p.Describe());
      prop.hypothesis.set_expected_effect(
          absl::StrCat("NVFP4 (OMMA.SF.16864, k=64 an instruction) on tiles ", p.Describe()));
      prop.hypothesis.set_falsification(
          "paired timing against the incumbent on an SM12x device is not FASTER beyond the "
          "practical floor");
      out.push_back(std::move(prop));
    }
    return out;
  }
};

CAKE_REGISTER_WORKLOAD(GemmNvfp4);

}  // namespace

contract::ProblemShape Problem(int m, int n, int k) {
  contract::ProblemShape p;
  Nvfp4GemmShape* s = p.mutable_gemm_nvfp4();
  s->set_m(m);
  s->set_n(n);
  s->set_k(k);
  return p;
}

std::vector<uint8_t> PackE2M1(const std::vector<uint8_t>& codes) {
  std::vector<uint8_t> out((codes.size() + 1) / 2, 0);
  for (size_t i = 0; i < codes.size(); ++i)
    out[i / 2] |= static_cast<uint8_t>((codes[i] & 0xF) << (i % 2 ? 4 : 0));
  return out;
}

std::vector<uint8_t> UnpackE2M1(const std::string& packed) {
  std::vector<uint8_t> out(packed.size() * 2);
  for (size_t i = 0; i < packed.size(); ++i) {
    const auto byte = static_cast<uint8_t>(packed[i]);
    out[2 * i] = byte & 0xF;
    out[2 * i + 1] = byte >> 4;
  }
  return out;
}

Nvfp4Inputs MakeInputs(const Nvfp4GemmShape& s, contract::InputDistribution dist, uint64_t seed) {
  std::mt19937_64 rng(seed);
  const size_t m = size_t(s.m()), n = size_t(s.n()), k = size_t(s.k());
  Nvfp4Inputs in;
  switch (dist) {
    case contract::EXTREME_MAGNITUDE: {
      // Codes +-4 and +-6 under scales of the top binade (256..448) or subnormal (2^-9..7*2^-9).
      auto big = +[](uint8_t c) { return (c & 7) >= 6; };
      auto extreme = +[](uint8_t c) { return c >= 0x78 || (c >= 0x01 && c <= 0x07); };
      for (auto [op, rows] : {std::pair{&in.a, m}, std::pair{&in.b, n}}) {
        op->codes = Draw(rows * k, rng, 0, 15, big);
        op->scales = Draw(rows * k / kScaleGroup, rng, 0x01, kScaleMax, extreme);
      }
      break;
    }
    case contract::CANCELLATION: {
      // The second half of each row of A repeats its first; each even column of B negates its
      // first half there (same scales): every product appears once with each sign, so even
      // columns of C are exactly zero (odd ones repeat it, so no row of C is all zero).
      in.a = Uniform(m, k, rng);
      in.b = Uniform(n, k, rng);
      const size_t h = k / 2, hg = h / kScaleGroup, g = k / kScaleGroup;
      for (size_t i = 0; i < m; ++i) {
        for (size_t q = 0; q < h; ++q) in.a.codes[i * k + h + q] = in.a.codes[i * k + q];
        for (size_t q = 0; q < hg; ++q) in.a.scales[i * g + hg + q] = in.a.scales[i * g + q];
      }
      for (size_t j = 0; j < n; ++j) {
        for (size_t q = 0; q < h; ++q)
          in.b.codes[j * k + h + q] = in.b.codes[j * k + q] ^ (j % 2 == 0 ? 0x8 : 0x0);
        for (size_t q = 0; q < hg; ++q) in.b.scales[j * g + hg + q] = in.b.scales[j * g + q];
      }
      break;
    }
    case contract::PEAKED: {
      // Codes +-0.5 under scales up to 1, one +-6 at scale 448 in each row of A.
      auto half = +[](uint8_t c) { return (c & 7) == 1; };
      in.a = {Draw(m * k, rng, 0, 15, half), Draw(m * k / kScaleGroup, rng, 0, kScaleOne)};
      in.b = Uniform(n, k, rng);
      for (size_t i = 0; i < m; ++i) {
        const size_t at = rng() % k;
        in.a.codes[i * k + at] = rng() % 2 ? 0x7 : 0xF;
        in.a.scales[(i * k + at) / kScaleGroup] = kScaleMax;
      }
      break;
    }
    case contract::SPECIAL_VALUES: {
      in.a = Uniform(m, k, rng);
      in.b = Uniform(n, k, rng);
      // NaN scales: their row (column) of C is NaN. E2M1 has no NaN of its own.
      in.a.scales[rng() % in.a.scales.size()] = kScaleNan;
      in.b.scales[rng() % in.b.scales.size()] = kScaleNan;
      break;
    }
    default:
      in.a = Uniform(m, k, rng);
      in.b = Uniform(n, k, rng);
  }
  return in;
}

}  // namespace cake::workloads::gemm_nvfp4
