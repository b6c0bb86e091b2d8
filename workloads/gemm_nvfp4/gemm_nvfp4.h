// The NVFP4 GEMM workload, operation "gemm_nvfp4": C[M,N] (BF16) = (A . SA)[M,K] *
// ((B . SB)[N,K])^T with A and B E2M1 codes packed two to a byte (the lower K index in the low
// nibble) and UE4M3 scales, one per 16 elements of K (SA [M, K/16], SB [N, K/16] bytes,
// row-major), FP32 accumulation. Lowered for SM12x only (mma.sync kind::mxf4nvf4 scale_vec::4X):
// compiled and receipted, executed only on a device that runs the contract's execution target,
// so every report on this machine says there is no SM120 execution witness.
//
// The independent oracle is the exact CPU model (workloads/block_scaled_mma.h, GemmReference):
// every element is its exact sum rounded once to FP32, correct within atol + rtol * |exact| +
// (K + 1) * 2^-23 * sum_k |a_ik sa_ik b_jk sb_jk| (the bound of an FP32 datapath rounding after
// each addition; the hardware's order is not specified). A NaN scale (code 0x7F) makes its row or
// column of C NaN. Pure functions; thread-compatible.
#pragma once

#include <cstdint>
#include <vector>

#include "workloads/gemm_nvfp4/shape.pb.h"
#include "workloads/workload.h"

namespace cake::workloads::gemm_nvfp4 {

inline constexpr char kOperation[] = "gemm_nvfp4";
inline constexpr int kScaleGroup = 16;  // elements of K per UE4M3 scale
inline constexpr int kKMultiple = 64;   // one MMA k step: four scale groups, 32 packed bytes

contract::ProblemShape Problem(int m, int n, int k);

// One operand's codes: E2M1 codes (one per element, unpacked) and UE4M3 scale codes.
struct Nvfp4Operand {
  std::vector<uint8_t> codes;   // [rows][K], each 0..15
  std::vector<uint8_t> scales;  // [rows][K / 16]
};
struct Nvfp4Inputs {
  Nvfp4Operand a, b;
};

// Fresh inputs of `dist` from `seed`: UNIFORM every E2M1 code alike and every finite UE4M3 scale
// (zero and subnormals included); EXTREME_MAGNITUDE codes +-4 and +-6 under the top binade's and
// the subnormal scales only; CANCELLATION rows whose second half repeats the first, against
// even columns that negate it (those columns of C exactly zero); PEAKED codes +-0.5 under scales up
// to 1, one +-6 at scale 448 per row of A; SPECIAL_VALUES one NaN scale in SA and one in SB.
Nvfp4Inputs MakeInputs(const Nvfp4GemmShape& s, contract::InputDistribution dist, uint64_t seed);

// Two codes a byte, the lower K index in the low nibble (PACKED_FP4); and back.
std::vector<uint8_t> PackE2M1(const std::vector<uint8_t>& codes);
std::vector<uint8_t> UnpackE2M1(const std::string& packed);

}  // namespace cake::workloads::gemm_nvfp4
