// The NVFP4 GEMM schedule family of the gemm_nvfp4 workload. Pure.
#pragma once

#include <string>
#include <vector>

namespace cake::workloads::gemm_nvfp4 {

// The NVFP4 GEMM: C[M,N] (BF16) = (A . SA)[M,K] * ((B . SB)[N,K])^T with A and B E2M1 packed
// two to a byte and UE4M3 scales per 16 elements of K (real scale tensors SA [M, K/16] and
// SB [N, K/16] bytes, row-major), FP32 accumulate: mma.sync m16n8k64 kind::mxf4nvf4
// scale_vec::4X on the same warp tiles and cp.async stages (lowering warp_gemm_nvfp4). SM12x
// only: compile + SASS + the CPU model (workloads/block_scaled_mma.h); no SM120 execution witness.
struct Nvfp4GemmPoint {
  int tile_m = 128, tile_n = 128, tile_k = 128;  // tile_k in elements (a multiple of 64)
  int warps_m = 2, warps_n = 2, stages = 3;
  std::string Describe() const;  // "128x128x128 w2x2 s3 nvfp4"
};

// The schedule (protobuf text) of one point, for target sm_120f; K is a multiple of 64.
std::string Nvfp4GemmSchedule(const Nvfp4GemmPoint& p);

// Two tilings: 128x128x128 with 3 stages, 128x64x256 with 2.
std::vector<Nvfp4GemmPoint> Nvfp4GemmPoints();

// Points over CTA tiles 64/128 x 64/128, k-tiles 64/128/256 and 2-4 stages on a 2x2 warp grid,
// those whose stages fit SM12x's 99 KiB of shared memory per block, less those that spill on
// sm_120f: the search's space beyond Nvfp4GemmPoints().
std::vector<Nvfp4GemmPoint> Nvfp4GemmGrid();

// The grid's points whose sm_120f receipt fails for spills to local memory (ptxas 13.0: 32 and
// 152 B at 255 registers); nvfp4_gemm_receipts_test checks that they still spill and that no
// point of the space does.
std::vector<std::string> Nvfp4PointsThatSpill();

}  // namespace cake::workloads::gemm_nvfp4
