// The case catalogue of a GEMM contract and the inputs of each case: discovery rows, held-out rows,
// boundary cases (tails, partial tiles, derived from a kernel's tile geometry) and adversarial
// inputs (extreme magnitudes, cancellation, peaked rows, NaN/Inf under the contract's policy).
// Inputs are drawn fresh from a recorded seed. Also the comparison that applies the non-finite
// policy, and the host twin of the GPU fill and fingerprint (Freivalds projections), so tests
// can cross-check the device. Pure functions; thread-compatible.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "cake/contract.pb.h"
#include "gemm_oracle.h"

namespace cake::workloads {

struct GemmCase {
  std::string name;
  contract::GemmShape shape;
  contract::InputDistribution inputs = contract::UNIFORM;
  std::string role;  // "discovery" | "held_out" | "boundary" | "adversarial"
  bool held_out = false;
};

// The policy applied when a contract states none: numerical contract, mutation/lifecycle and
// determinism required; the default boundary/adversarial cases; partial-tile cases derived.
contract::ValidationPolicy DefaultValidationPolicy();
// The contract's policy, or the default when it has none.
contract::ValidationPolicy EffectivePolicy(const contract::Contract& c);

// Every case a candidate with CTA tile (tile_m, tile_n) is validated on, in a fixed order:
// contract rows, the policy's cases, then derived partial-tile cases (when enabled).
std::vector<GemmCase> CaseCatalogue(const contract::Contract& c, int tile_m, int tile_n);

// Small cases for instrumented runs (sanitizers): the catalogue's cases with at most
// `max_macs` multiply-adds, plus the derived partial-tile cases.
std::vector<GemmCase> SmallCases(const contract::Contract& c, int tile_m, int tile_n,
                                 int64_t max_macs);

struct GemmInputs {
  std::vector<uint16_t> a, b;  // BF16 bits, row-major A[M,K], B[N,K]
};
// The factor of the contract's absolute tolerance for inputs of `dist`: the square of the exact
// power-of-two input scale (2^96 for EXTREME_MAGNITUDE), 1 otherwise.
double AbsoluteToleranceScale(contract::InputDistribution dist);

// The factor of the contract's absolute tolerance for inputs of `dist`: the square of the exact
// power-of-two input scale (2^96 for EXTREME_MAGNITUDE), 1 otherwise.
double AbsoluteToleranceScale(contract::InputDistribution dist);

// Fresh inputs of `dist` from `seed`. CANCELLATION needs K % 16 == 0 (else it is UNIFORM).
GemmInputs MakeInputs(const contract::GemmShape& s, contract::InputDistribution dist,
                      uint64_t seed);

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

// The value helper_kernels.cu's fill writes at index i for `seed`.
uint16_t UniformBf16At(uint64_t seed, uint64_t i);
// splitmix64, as the GPU helpers use it.
uint64_t Mix64(uint64_t x);

// Host twin of the GPU fingerprint: u_p^T (A B^T) v_p for p < 4 from the inputs alone (the
// oracle side), and from an output C (the candidate side). Signs: bit 63 - p of
// Mix64(seed ^ Mix64(index)).
std::vector<double> OracleFingerprint(const std::vector<uint16_t>& a,
                                      const std::vector<uint16_t>& b, int m, int n, int k,
                                      uint64_t seed_u, uint64_t seed_v, double* scale);
std::vector<double> OutputFingerprint(const std::vector<double>& c, int m, int n, uint64_t seed_u,
                                      uint64_t seed_v);
// The tolerance of a fingerprint difference: 8 standard deviations of u^T E v when the error E
// has relative L2 norm max_relative_l2 of ||A B^T|| (whose expectation is `scale`).
double FingerprintTolerance(double scale, double max_relative_l2);

}  // namespace cake::workloads
