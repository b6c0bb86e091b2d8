#include "gemm_cases.h"

#include <cmath>
#include <random>

#include "absl/strings/str_cat.h"

namespace cake::workloads {
namespace {

contract::GemmShape Shape(int m, int n, int k) {
  contract::GemmShape s;
  s.set_m(m);
  s.set_n(n);
  s.set_k(k);
  return s;
}

void AddCase(contract::ValidationPolicy* p, const std::string& name, int m, int n, int k,
             contract::InputDistribution d, const std::string& role) {
  contract::ValidationCase* c = p->add_cases();
  c->set_name(name);
  *c->mutable_shape() = Shape(m, n, k);
  c->set_inputs(d);
  c->set_role(role);
}

void Require(contract::ValidationPolicy* p, evidence::EvidenceKind kind) {
  contract::EvidenceRequirement* r = p->add_evidence();
  r->set_kind(kind);
  r->set_required(true);
}

int64_t Macs(const contract::GemmShape& s) { return int64_t(s.m()) * s.n() * s.k(); }

std::vector<GemmCase> DerivedPartialTileCases(int tile_m, int tile_n) {
  tile_m = std::max(tile_m, 2);
  tile_n = std::max(tile_n, 2);
  std::vector<GemmCase> out;
  auto add = [&](const std::string& name, int m, int n, int k) {
    GemmCase c;
    c.name = name;
    c.shape = Shape(m, n, k);
    c.role = "boundary";
    out.push_back(c);
  };
  add("partial_tile_single_row", 1, tile_n + 1, 8);
  add("partial_tile_minus_one", tile_m - 1, tile_n - 1, 72);
  add("partial_tile_plus_one", 2 * tile_m + 1, tile_n + 1, 264);
  return out;
}

}  // namespace

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

contract::ValidationPolicy DefaultValidationPolicy() {
  contract::ValidationPolicy p;
  Require(&p, evidence::NUMERICAL_CONTRACT);
  Require(&p, evidence::MUTATION_AND_LIFECYCLE);
  Require(&p, evidence::REPEATED_EXECUTION_DETERMINISM);
  AddCase(&p, "tails_small", 264, 200, 520, contract::UNIFORM, "boundary");
  AddCase(&p, "extreme_magnitude", 256, 192, 512, contract::EXTREME_MAGNITUDE, "adversarial");
  AddCase(&p, "cancellation", 256, 192, 512, contract::CANCELLATION, "adversarial");
  AddCase(&p, "peaked", 256, 192, 520, contract::PEAKED, "adversarial");
  AddCase(&p, "special_values", 136, 72, 264, contract::SPECIAL_VALUES, "adversarial");
  p.set_non_finite(contract::PROPAGATE);
  p.set_derive_boundary_cases(true);
  return p;
}

contract::ValidationPolicy EffectivePolicy(const contract::Contract& c) {
  return c.has_validation() ? c.validation() : DefaultValidationPolicy();
}

std::vector<GemmCase> CaseCatalogue(const contract::Contract& c, int tile_m, int tile_n) {
  std::vector<GemmCase> out;
  for (const contract::Row& r : c.rows()) {
    GemmCase g;
    g.name = r.name();
    g.shape = r.shape();
    g.role = r.held_out() ? "held_out" : "discovery";
    g.held_out = r.held_out();
    out.push_back(g);
  }
  const contract::ValidationPolicy p = EffectivePolicy(c);
  for (const contract::ValidationCase& vc : p.cases()) {
    GemmCase g;
    g.name = vc.name();
    g.shape = vc.shape();
    g.inputs =
        vc.inputs() == contract::INPUT_DISTRIBUTION_UNSPECIFIED ? contract::UNIFORM : vc.inputs();
    g.role = vc.role().empty() ? "adversarial" : vc.role();
    g.held_out = vc.held_out();
    out.push_back(g);
  }
  if (p.derive_boundary_cases())
    for (GemmCase& g : DerivedPartialTileCases(tile_m, tile_n)) out.push_back(std::move(g));
  return out;
}

std::vector<GemmCase> SmallCases(const contract::Contract& c, int tile_m, int tile_n,
                                 int64_t max_macs) {
  std::vector<GemmCase> out;
  for (GemmCase& g : CaseCatalogue(c, tile_m, tile_n))
    if (Macs(g.shape) <= max_macs) out.push_back(std::move(g));
  if (!EffectivePolicy(c).derive_boundary_cases())
    for (GemmCase& g : DerivedPartialTileCases(tile_m, tile_n)) out.push_back(std::move(g));
  return out;
}

namespace {
constexpr int kExtremeExponent = 48;
}  // namespace

double AbsoluteToleranceScale(contract::InputDistribution dist) {
  return dist == contract::EXTREME_MAGNITUDE ? std::ldexp(1.0, 2 * kExtremeExponent) : 1.0;
}

GemmInputs MakeInputs(const contract::GemmShape& s, contract::InputDistribution dist,
                      uint64_t seed) {
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

}  // namespace cake::workloads
