// The FP8 GEMM schedule family of the block-scaled workload: C[M,N] (BF16) = A[M,K] * B[N,K]^T
// over E4M3 or E5M2, FP32 accumulate, on warp tiles with cp.async stages and ldmatrix .b16 reads
// of K-contiguous bytes (lowering warp_gemm_fp8). The instruction form is a decision of the
// schedule, never a verifier rule: the legacy mma.sync m16n8k32, or the block-scaled
// kind::mxf8f6f4 with unit UE8M0 scales (scale_unit: 1.0 per 32 elements of K). Pure.
#pragma once

#include <string>
#include <vector>

#include "workloads/narrow_float.h"

namespace cake::workloads::gemm_blockscaled {

enum class Fp8Form { kLegacy, kUnitScale };

struct Fp8GemmPoint {
  NarrowFormat operand = NarrowFormat::kE4M3;  // E4M3 or E5M2, A and B alike
  Fp8Form form = Fp8Form::kUnitScale;
  int tile_m = 128, tile_n = 128, tile_k = 64;  // tile_k in elements (a multiple of 32)
  int warps_m = 2, warps_n = 2, stages = 3;
  std::string Describe() const;  // "128x128x64 w2x2 s3 e4m3 unit-scale"
};

// The schedule (protobuf text) of one point, for target sm_120f.
std::string Fp8GemmSchedule(const Fp8GemmPoint& p);

// Both forms of the same tiles, for each operand format: what a search explores first.
std::vector<Fp8GemmPoint> Fp8GemmPoints();

// E4M3 points of both forms over CTA tiles 64/128 x 64/128, k-tiles 64/128 and 2-4 stages on a
// 2x2 warp grid, those whose stages fit SM12x's 99 KiB of shared memory per block: the search's
// space beyond Fp8GemmPoints().
std::vector<Fp8GemmPoint> Fp8GemmGrid();

}  // namespace cake::workloads::gemm_blockscaled
