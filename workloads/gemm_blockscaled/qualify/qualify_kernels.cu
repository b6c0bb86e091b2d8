// The SM12x qualification kernels: one FP8 MMA in the legacy form and in the block-scaled form
// with unit UE8M0 scales, on the same fragments (bitwise identity), and the same two forms in a
// raw issue loop (rate). Built for sm_120f and sm_121a only: neither form runs anywhere else
// (sm_90 emulates the legacy form; the block-scaled one does not exist there).
#include <stdint.h>

namespace {

constexpr uint32_t kUnitScales = 0x7F7F7F7Fu;  // UE8M0 127 = 1.0 in every byte

__device__ __forceinline__ void MmaLegacy(float (&d)[4], const uint32_t (&a)[4],
                                          const uint32_t (&b)[2], const float (&c)[4]) {
  asm volatile(
      "mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e4m3.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
      "{%8,%9}, {%10,%11,%12,%13};\n"
      : "=f"(d[0]), "=f"(d[1]), "=f"(d[2]), "=f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]), "f"(c[0]), "f"(c[1]),
        "f"(c[2]), "f"(c[3]));
}

__device__ __forceinline__ void MmaUnitScale(float (&d)[4], const uint32_t (&a)[4],
                                             const uint32_t (&b)[2], const float (&c)[4]) {
  asm volatile(
      "mma.sync.aligned.kind::mxf8f6f4.block_scale.scale_vec::1X.m16n8k32.row.col.f32.e4m3.e4m3."
      "f32.ue8m0 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%10,%11,%12,%13}, %14, {0, 0}, %15, "
      "{0, 0};\n"
      : "=f"(d[0]), "=f"(d[1]), "=f"(d[2]), "=f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]), "f"(c[0]), "f"(c[1]),
        "f"(c[2]), "f"(c[3]), "r"(kUnitScales), "r"(kUnitScales));
}

// One MMA per (warp, tile): fragments packed per lane by the host ([tile][lane][4] A registers,
// [tile][lane][2] B registers, [tile][lane][4] C and D values).
template <bool kScaled>
__device__ void OneMma(const uint32_t* a, const uint32_t* b, const float* c, float* d, int tiles) {
  const int lane = threadIdx.x & 31;
  const int tile = blockIdx.x * (blockDim.x / 32) + (threadIdx.x >> 5);
  if (tile >= tiles) return;
  const int at = tile * 32 + lane;
  const uint32_t ra[4] = {a[at * 4], a[at * 4 + 1], a[at * 4 + 2], a[at * 4 + 3]};
  const uint32_t rb[2] = {b[at * 2], b[at * 2 + 1]};
  const float rc[4] = {c[at * 4], c[at * 4 + 1], c[at * 4 + 2], c[at * 4 + 3]};
  float rd[4];
  if (kScaled)
    MmaUnitScale(rd, ra, rb, rc);
  else
    MmaLegacy(rd, ra, rb, rc);
  for (int i = 0; i < 4; ++i) d[at * 4 + i] = rd[i];
}

// Four independent accumulator chains per warp, `iterations` times; the sums are written so that
// nothing is dead.
template <bool kScaled>
__device__ void RateLoop(float* sink, int iterations, uint32_t seed) {
  const uint32_t v = 0x38383838u ^ (seed & 0x01010101u);  // E4M3 1.0 (or 1.125) in every byte
  const uint32_t a[4] = {v, v, v, v}, b[2] = {v, v};
  float acc[4][4] = {};
  for (int it = 0; it < iterations; ++it)
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      if (kScaled)
        MmaUnitScale(acc[j], a, b, acc[j]);
      else
        MmaLegacy(acc[j], a, b, acc[j]);
    }
  float s = 0;
  for (int j = 0; j < 4; ++j)
    for (int i = 0; i < 4; ++i) s += acc[j][i];
  sink[blockIdx.x * blockDim.x + threadIdx.x] = s;
}

}  // namespace

extern "C" __global__ void cake_qualify_mma_legacy(const uint32_t* a, const uint32_t* b,
                                                   const float* c, float* d, int tiles) {
  OneMma<false>(a, b, c, d, tiles);
}
extern "C" __global__ void cake_qualify_mma_unit_scale(const uint32_t* a, const uint32_t* b,
                                                       const float* c, float* d, int tiles) {
  OneMma<true>(a, b, c, d, tiles);
}
extern "C" __global__ void cake_qualify_rate_legacy(float* sink, int iterations, uint32_t seed) {
  RateLoop<false>(sink, iterations, seed);
}
extern "C" __global__ void cake_qualify_rate_unit_scale(float* sink, int iterations,
                                                        uint32_t seed) {
  RateLoop<true>(sink, iterations, seed);
}
