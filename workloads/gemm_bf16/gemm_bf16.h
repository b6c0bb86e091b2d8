// The BF16 GEMM workload, operation "gemm_bf16_tn": C[M,N] = A[M,K] * B[N,K]^T, BF16 inputs,
// FP32 accumulation, BF16 or F32 output. Its independent oracle is float64 on the CPU from the
// exact BF16 inputs; its cases are the contract's rows, boundary and adversarial inputs
// (extreme magnitudes, cancellation, peaked rows, NaN/Inf under the policy) and partial tiles
// derived from the kernel's tile; its timed-output check projects outputs on random +-1 vectors
// (device/gemm_device.cc), whose host twins are here. Pure functions; thread-compatible.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "workloads/gemm_bf16/shape.pb.h"
#include "workloads/workload.h"

namespace cake::workloads::gemm_bf16 {

inline constexpr char kOperation[] = "gemm_bf16_tn";

GemmShape Shape(int m, int n, int k);
contract::ProblemShape Problem(int m, int n, int k);

struct GemmInputs {
  std::vector<uint16_t> a, b;  // BF16 bits, row-major A[M,K], B[N,K]
};
// Fresh inputs of `dist` from `seed`. CANCELLATION needs K % 16 == 0 (else it is UNIFORM).
GemmInputs MakeInputs(const GemmShape& s, contract::InputDistribution dist, uint64_t seed);

// The factor of the contract's absolute tolerance for inputs of `dist`: the square of the exact
// power-of-two input scale (2^96 for EXTREME_MAGNITUDE), 1 otherwise.
double AbsoluteToleranceScale(contract::InputDistribution dist);

// float64 reference of A[M,K] * B[N,K]^T, row-major.
std::vector<double> ReferenceGemm(const std::vector<uint16_t>& a, const std::vector<uint16_t>& b,
                                  int m, int n, int k);
// Reference of the selected output rows only (for shapes too large for a full CPU oracle):
// result is rows.size() x n, in the order of `rows`.
std::vector<double> ReferenceGemmRows(const std::vector<uint16_t>& a,
                                      const std::vector<uint16_t>& b, int n, int k,
                                      const std::vector<int>& rows);

// Tolerances for an output dtype: BF16 output carries one BF16 rounding.
struct Tolerance {
  double rtol, atol, max_relative_l2;
};
Tolerance GemmTolerance(bool bf16_output, int k);

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

// The registered Workload.
const Workload& GemmWorkload();

}  // namespace cake::workloads::gemm_bf16
