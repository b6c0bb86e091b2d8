// The judge of a GEMM-shaped output against an exact oracle, for workloads whose oracle gives
// each element's exact value (rounded once to FP32) and the magnitude sum_k |a_ik b_jk| of its
// products (the block-scaled GEMMs: workloads/block_scaled_mma.h). An element is correct within
// atol + rtol * |exact| + (K + 1) * 2^-23 * magnitude: the contract's tolerance for the BF16
// output plus the bound of an FP32 datapath rounding after each addition. A NaN or infinite exact
// value must be matched (NaN by NaN, an infinity by itself). Problems over 2^26 multiply-adds
// compare 512 elements drawn from the seed and the last element. Pure; thread-compatible.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "cake/contract.pb.h"
#include "cake/evidence.pb.h"

namespace cake::workloads {

struct ExactElement {
  double exact = 0;      // the oracle's value (NaN or infinite where it must propagate)
  double magnitude = 0;  // sum over k of |product|
};

// Judges C (BF16, [m][n] row-major bytes) and fills `rc`: counts, errors, the failure in words.
// `unwritten` output elements still held the poison.
void JudgeAgainstExact(int m, int n, int k, uint64_t seed, const std::string& c_bf16,
                       int64_t unwritten, const contract::Tolerance& tolerance,
                       const std::function<ExactElement(int i, int j)>& element,
                       evidence::RowCheck* rc);

}  // namespace cake::workloads
