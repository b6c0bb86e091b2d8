// The mma.sync BF16 issue-rate ceiling: every warp issues kChains independent
// mma.sync.m16n8k16.row.col.f32.bf16.bf16.f32 chains from registers, no memory traffic in the
// loop. Operands are per-thread pseudo-random BF16 in [-1, 1) (a chip's matrix rate depends on
// the data; zeros run faster), so the rate is the one a GEMM on random inputs could reach. The
// sums are written out so no chain is dead. Built by nvcc at build time (sm_90, sm_120) and
// embedded in cake-gemm-bench.
#include <stdint.h>

namespace {

__device__ __forceinline__ uint32_t Mix(uint32_t x) {
  x ^= x >> 16;
  x *= 0x7feb352du;
  x ^= x >> 15;
  x *= 0x846ca68bu;
  x ^= x >> 16;
  return x;
}

// Two BF16 values: random sign and 7 mantissa bits, magnitude in [2^-9, 2^-1).
__device__ __forceinline__ uint32_t RandomBf16Pair(uint32_t seed) {
  const uint32_t r = Mix(seed);
  const uint32_t lo = ((r & 0x8000u) | (0x3b00u + ((r >> 4) & 0x3ffu))) & 0xffffu;
  const uint32_t hi = (((r >> 16) & 0x8000u) | (0x3b00u + ((r >> 20) & 0x3ffu))) & 0xffffu;
  return lo | (hi << 16);
}

template <int kChains>
__device__ __forceinline__ void Run(float* out, int iters) {
  const uint32_t tid = blockIdx.x * blockDim.x + threadIdx.x;
  uint32_t a[4], b[2];
#pragma unroll
  for (int i = 0; i < 4; ++i) a[i] = RandomBf16Pair(tid * 8u + i);
#pragma unroll
  for (int i = 0; i < 2; ++i) b[i] = RandomBf16Pair(tid * 8u + 4u + i);
  float acc[kChains][4];
#pragma unroll
  for (int c = 0; c < kChains; ++c)
#pragma unroll
    for (int r = 0; r < 4; ++r) acc[c][r] = 0.0f;
  for (int it = 0; it < iters; ++it) {
#pragma unroll
    for (int c = 0; c < kChains; ++c)
      asm volatile(
          "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
          "{%8,%9}, {%0,%1,%2,%3};\n"
          : "+f"(acc[c][0]), "+f"(acc[c][1]), "+f"(acc[c][2]), "+f"(acc[c][3])
          : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
  }
  float sum = 0.0f;
#pragma unroll
  for (int c = 0; c < kChains; ++c)
#pragma unroll
    for (int r = 0; r < 4; ++r) sum += acc[c][r];
  out[tid] = sum;
}

}  // namespace

extern "C" __global__ void cake_mma_ceiling_4(float* out, int iters) { Run<4>(out, iters); }
extern "C" __global__ void cake_mma_ceiling_8(float* out, int iters) { Run<8>(out, iters); }
extern "C" __global__ void cake_mma_ceiling_16(float* out, int iters) { Run<16>(out, iters); }
