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

// acc += a * b, one m16n8k16 BF16 mma.sync with FP32 accumulation.
__device__ __forceinline__ void Mma(float (&acc)[4], uint32_t a0, uint32_t a1, uint32_t a2,
                                    uint32_t a3, uint32_t b0, uint32_t b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
      "{%8,%9}, {%0,%1,%2,%3};\n"
      : "+f"(acc[0]), "+f"(acc[1]), "+f"(acc[2]), "+f"(acc[3])
      : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
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
    for (int c = 0; c < kChains; ++c) Mma(acc[c], a[0], a[1], a[2], a[3], b[0], b[1]);
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

// The same rate with the operands fed as a staged GEMM feeds them: eight warps on a 128x256
// CTA tile of 64x64 warp tiles (2x4), each k step of 16 loading its A and B fragments with
// ldmatrix.x4 from a 128-byte-swizzled shared stage (bank-conflict free) while the previous
// step's 32 mma.sync issue, exactly the family's inner loop, but with no global traffic, no
// barrier and no epilogue. Its rate bounds what a 64x64-warp-tile mma.sync GEMM can reach on
// this chip: shared-memory reads per mma are fixed by the warp tile. (Measured on sm_90; the
// sm_120 build spills 72 bytes, so it is no bound there.)
namespace {

constexpr int kFedWarpsN = 4, kFedThreads = 256, kFedTileM = 128, kFedTileN = 256, kFedK = 64;

__device__ __forceinline__ uint32_t FedOffset(int row, int chunk) {  // bytes in a 128 B row
  return uint32_t(row * 128 + ((chunk ^ (row & 7)) * 16));
}

}  // namespace

extern "C" __global__ void __launch_bounds__(kFedThreads, 1)
    cake_mma_ldmatrix_ceiling(float* out, int iters) {
  __shared__ __align__(1024) uint32_t stage[(kFedTileM + kFedTileN) * kFedK / 2];
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  for (int i = tid; i < (kFedTileM + kFedTileN) * kFedK / 2; i += kFedThreads)
    stage[i] = RandomBf16Pair(blockIdx.x * 65536u + uint32_t(i));
  __syncthreads();
  const uint32_t base = static_cast<uint32_t>(__cvta_generic_to_shared(stage));
  const uint32_t b_base = base + kFedTileM * 128;
  const int warp_m = warp / kFedWarpsN, warp_n = warp % kFedWarpsN;
  const int a_row = warp_m * 64 + (lane & 15),
            b_row = warp_n * 64 + (lane & 7) + ((lane >> 4) << 3);
  uint32_t a[2][4][4], b[2][8][2];
  float acc[4][8][4];
#pragma unroll
  for (int i = 0; i < 4; ++i)
#pragma unroll
    for (int j = 0; j < 8; ++j)
#pragma unroll
      for (int r = 0; r < 4; ++r) acc[i][j][r] = 0.0f;
  auto load = [&](int buf, int ks) {
#pragma unroll
    for (int i = 0; i < 4; ++i)
      asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                   : "=r"(a[buf][i][0]), "=r"(a[buf][i][1]), "=r"(a[buf][i][2]), "=r"(a[buf][i][3])
                   : "r"(base + FedOffset(a_row + i * 16, ks * 2 + (lane >> 4))));
#pragma unroll
    for (int j = 0; j < 8; j += 2)
      asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                   : "=r"(b[buf][j][0]), "=r"(b[buf][j][1]), "=r"(b[buf][j + 1][0]),
                     "=r"(b[buf][j + 1][1])
                   : "r"(b_base + FedOffset(b_row + j * 8, ks * 2 + ((lane >> 3) & 1))));
  };
  load(0, 0);
  for (int it = 0; it < iters; ++it) {
#pragma unroll
    for (int ks = 0; ks < kFedK / 16; ++ks) {
      load((ks + 1) & 1, (ks + 1) % (kFedK / 16));  // the next step's (the next tile's first)
#pragma unroll
      for (int i = 0; i < 4; ++i)
#pragma unroll
        for (int j = 0; j < 8; ++j)
          Mma(acc[i][j], a[ks & 1][i][0], a[ks & 1][i][1], a[ks & 1][i][2], a[ks & 1][i][3],
              b[ks & 1][j][0], b[ks & 1][j][1]);
    }
  }
  float sum = 0.0f;
#pragma unroll
  for (int i = 0; i < 4; ++i)
#pragma unroll
    for (int j = 0; j < 8; ++j)
#pragma unroll
      for (int r = 0; r < 4; ++r) sum += acc[i][j][r];
  out[blockIdx.x * kFedThreads + tid] = sum;
}
