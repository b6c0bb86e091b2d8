// The block-scaled GEMM workload, operation "gemm_blockscaled": C[M,N] (BF16) = A[M,K] * B[N,K]^T
// over E4M3 codes (the contract's input_dtype), FP32 accumulation, the instruction form (legacy
// mma.sync or block-scaled with unit UE8M0 scales) a decision of the schedule (schedules.h).
// Compiled and receipted for SM12x; executed only on a device that runs the contract's execution
// target (no SM120 execution witness on sm_90, where FP8 mma.sync is emulated and its speed
// never judged).
//
// The independent oracle is the exact CPU model (block_scaled_mma.h, GemmReference): every
// element is its exact sum rounded once to FP32. An output element is correct when it is within
// atol + rtol * |exact| + (K + 1) * 2^-23 * sum_k |a_ik b_jk| of it: the contract's tolerance
// for the BF16 output plus the bound of an FP32 datapath rounding after each addition (the
// hardware's accumulation order is not specified). NaN codes propagate (NaN rows and columns).
// Pure functions; thread-compatible.
#pragma once

#include <cstdint>
#include <vector>

#include "workloads/gemm_blockscaled/shape.pb.h"
#include "workloads/workload.h"

namespace cake::workloads::gemm_blockscaled {

inline constexpr char kOperation[] = "gemm_blockscaled";

contract::ProblemShape Problem(int m, int n, int k);

struct Fp8Inputs {
  std::vector<uint8_t> a, b;  // E4M3 codes, A[M,K] and B[N,K]
};
// Fresh inputs of `dist` from `seed`: UNIFORM every finite code alike (all binades, subnormals
// and both zeros); EXTREME_MAGNITUDE codes of the top binade and subnormals only; CANCELLATION
// rows whose second half repeats the first, against columns that negate it (even columns of C
// exactly zero); PEAKED small codes with one +-448 per row of A; SPECIAL_VALUES a NaN code in A
// and one in B (E4M3 has no infinity).
Fp8Inputs MakeInputs(const BlockScaledGemmShape& s, contract::InputDistribution dist,
                     uint64_t seed);

}  // namespace cake::workloads::gemm_blockscaled
