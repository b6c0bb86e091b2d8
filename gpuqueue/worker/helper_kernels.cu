// Trusted helper kernels of the validate/measure runners, compiled at build time (a fatbin with
// sm_90 and sm_120 code plus compute_90 PTX) and embedded in the worker. They never come from a
// schedule: they fill fresh inputs, fingerprint timed outputs against an independent projection
// of the inputs, checksum inputs, and hold the stream while launches are queued.
//
// Hash: splitmix64. Value i of a fill with seed s is a function of (s, i) alone, so the host can
// recompute any element (workloads/gemm_cases.h: UniformBf16At) and tests can cross-check.
#include <cstdint>

#include "gpuqueue/worker/device_mix64.cuh"

namespace {

__device__ __forceinline__ uint16_t FloatToBf16(float f) {
  const uint32_t bits = __float_as_uint(f);
  const uint32_t rounding = 0x7fffu + ((bits >> 16) & 1u);
  return static_cast<uint16_t>((bits + rounding) >> 16);
}

__device__ __forceinline__ float Bf16ToFloat(uint16_t b) {
  return __uint_as_float(static_cast<uint32_t>(b) << 16);
}

// Sign p (+1 or -1) of index i is bit 63 - p of the hash of (seed, i): one hash serves every
// projection.
__device__ __forceinline__ uint64_t SignBits(uint64_t seed, uint64_t i) {
  return Mix64(seed ^ Mix64(i));
}
__device__ __forceinline__ double Sign(uint64_t bits, int p) {
  return ((bits >> (63 - p)) & 1) ? 1.0 : -1.0;
}

__device__ __forceinline__ double WarpSum(double v) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(0xffffffffu, v, o);
  return v;
}

constexpr int kMaxProjections = 4;

}  // namespace

// out[i] = bf16(U[-1, 1)) from hash(seed, i): the top 24 bits of the hash, scaled.
extern "C" __global__ void cake_helper_fill_uniform_bf16(uint16_t* out, uint64_t count,
                                                         uint64_t seed) {
  for (uint64_t i = blockIdx.x * uint64_t(blockDim.x) + threadIdx.x; i < count;
       i += uint64_t(gridDim.x) * blockDim.x) {
    const uint64_t h = Mix64(seed ^ Mix64(i));
    const float u = static_cast<float>(h >> 40) * (1.0f / 16777216.0f);
    out[i] = FloatToBf16(2.0f * u - 1.0f);
  }
}

// For a row-major [rows, cols] BF16 matrix X: proj[p * cols + c] += sum_r sign_p(r) * X[r, c]
// and colsq[c] += sum_r X[r, c]^2, with sign_p(r) = Sign(SignBits(seed, r), p). The caller zeroes
// the outputs. Grid: x over columns (blockDim.x threads), y over chunks of `rows_per_chunk` rows.
extern "C" __global__ void cake_helper_project_rows(const uint16_t* x, int rows, int cols,
                                                    uint64_t seed, int projections,
                                                    int rows_per_chunk, double* proj,
                                                    double* colsq) {
  const int c = blockIdx.x * blockDim.x + threadIdx.x;
  if (c >= cols) return;
  const int r0 = blockIdx.y * rows_per_chunk;
  const int r1 = min(rows, r0 + rows_per_chunk);
  double acc[kMaxProjections] = {0, 0, 0, 0};
  double sq = 0;
  for (int r = r0; r < r1; ++r) {
    const double v = Bf16ToFloat(x[size_t(r) * cols + c]);
    sq += v * v;
    const uint64_t bits = SignBits(seed, r);
#pragma unroll
    for (int p = 0; p < kMaxProjections; ++p)
      if (p < projections) acc[p] += Sign(bits, p) * v;
  }
  for (int p = 0; p < projections; ++p) atomicAdd(&proj[size_t(p) * cols + c], acc[p]);
  atomicAdd(&colsq[c], sq);
}

// out[p] = sum_k xa[p, k] * xb[p, k] (the oracle's fingerprint u_p^T A B^T v_p) and
// out[projections] = sum_k colsq_a[k] * colsq_b[k] (E ||A B^T||_F^2 under random input signs).
// One block.
extern "C" __global__ void cake_helper_fingerprint_dot(const double* xa, const double* xb,
                                                       const double* colsq_a, const double* colsq_b,
                                                       int k, int projections, double* out) {
  __shared__ double partial[32];
  for (int p = 0; p <= projections; ++p) {
    double s = 0;
    for (int i = threadIdx.x; i < k; i += blockDim.x)
      s +=
          p < projections ? xa[size_t(p) * k + i] * xb[size_t(p) * k + i] : colsq_a[i] * colsq_b[i];
    s = WarpSum(s);
    if ((threadIdx.x & 31) == 0) partial[threadIdx.x >> 5] = s;
    __syncthreads();
    if (threadIdx.x == 0) {
      double t = 0;
      for (int w = 0; w < int(blockDim.x + 31) / 32; ++w) t += partial[w];
      out[p] = t;
    }
    __syncthreads();
  }
}

// out[p] += sum_{i,j} u_p(i) * v_p(j) * C[i, j] (u from seed_u, v from seed_v) over a row-major [m,
// n] output (BF16 when bf16 != 0, else FP32); nonfinite += count of NaN/Inf elements (unwritten
// poison is NaN).
extern "C" __global__ void cake_helper_project_output(const void* c, int m, int n, int bf16,
                                                      uint64_t seed_u, uint64_t seed_v,
                                                      int projections, double* out,
                                                      unsigned long long* nonfinite) {
  double acc[kMaxProjections] = {0, 0, 0, 0};
  unsigned long long bad = 0;
  const uint64_t total = uint64_t(m) * n;
  for (uint64_t e = blockIdx.x * uint64_t(blockDim.x) + threadIdx.x; e < total;
       e += uint64_t(gridDim.x) * blockDim.x) {
    const float f =
        bf16 ? Bf16ToFloat(static_cast<const uint16_t*>(c)[e]) : static_cast<const float*>(c)[e];
    if (!isfinite(f)) {
      ++bad;
      continue;
    }
    const uint64_t bu = SignBits(seed_u, e / n), bv = SignBits(seed_v, e % n);
#pragma unroll
    for (int p = 0; p < kMaxProjections; ++p)
      if (p < projections) acc[p] += Sign(bu, p) * Sign(bv, p) * double(f);
  }
  for (int p = 0; p < projections; ++p) {
    const double s = WarpSum(acc[p]);
    if ((threadIdx.x & 31) == 0) atomicAdd(&out[p], s);
  }
  if (bad) atomicAdd(nonfinite, bad);
}

// *out += sum_i mix(words[i], i): an order-independent checksum (mod 2^64) of a buffer.
extern "C" __global__ void cake_helper_checksum(const uint32_t* words, uint64_t count,
                                                unsigned long long* out) {
  unsigned long long s = 0;
  for (uint64_t i = blockIdx.x * uint64_t(blockDim.x) + threadIdx.x; i < count;
       i += uint64_t(gridDim.x) * blockDim.x)
    s += Mix64((uint64_t(words[i]) << 32) ^ i);
  for (int o = 16; o > 0; o >>= 1) s += __shfl_down_sync(0xffffffffu, s, o);
  if ((threadIdx.x & 31) == 0) atomicAdd(out, s);
}

// Holds the stream until the host sets *release (host-mapped memory), so that launches queued
// behind it run back to back without host launch latency (nvbench's blocking kernel). Gives up
// after timeout_ns and sets *timed_out, so a stuck host can never hang the device.
extern "C" __global__ void cake_helper_block_stream(const volatile int* release,
                                                    volatile int* timed_out,
                                                    unsigned long long timeout_ns) {
  unsigned long long start, now;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
  while (*release == 0) {
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
    if (now - start > timeout_ns) {
      *timed_out = 1;
      break;
    }
    __nanosleep(1000);
  }
}
