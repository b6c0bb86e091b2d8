// Adversarial KMeans-assignment candidates with the ABI of the kmeans_argmin lowering (X[B,N,D],
// C[B,K,D] BF16, idx[B,N] int32, dist[B,N] F32; grid ceil(N/128) x B, 128 threads, one point per
// thread), compiled with -DVARIANT=<n>; kmeans_adversarial_gpu_test.cc names the record that must
// refuse each one.
//   1 valid           direct distances, strict < over increasing j (lowest index), K when none
//   2 stale_output    computes on its first call only, then returns (output reused)
//   3 cached_result   called again on the same buffers, replays the answer it stored then
//   4 skipped_points  leaves every 97th point unassigned
#include <cstdint>

#ifndef VARIANT
#define VARIANT 1
#endif

namespace {

__device__ unsigned g_calls = 0;
__device__ unsigned g_blocks_done = 0;
__device__ const void* g_last_x = nullptr;
__device__ int g_last_n = -1;
constexpr int kCachePoints = 1 << 20;
__device__ int g_cache_idx[kCachePoints];
__device__ float g_cache_dist[kCachePoints];

__device__ __forceinline__ float Bf16ToFloat(uint16_t b) {
  return __uint_as_float(static_cast<uint32_t>(b) << 16);
}

// True in one thread of the launch: thread 0 of the last block to finish.
__device__ bool LastBlockDone() {
  __shared__ bool last;
  __syncthreads();
  if (threadIdx.x == 0) {
    __threadfence();
    last = atomicAdd(&g_blocks_done, 1u) == gridDim.x * gridDim.y - 1;
    if (last) g_blocks_done = 0;
  }
  __syncthreads();
  return last && threadIdx.x == 0;
}

__device__ void Assign(const uint16_t* x, const uint16_t* c, int* idx, float* dist, int n, int k,
                       int d) {
  const int b = blockIdx.y, i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
#if VARIANT == 4
  if (i % 97 == 0) return;
#endif
  const uint16_t* xp = x + (int64_t(b) * n + i) * d;
  int best = -1;
  float bv = 0.0f;
  for (int j = 0; j < k; ++j) {
    const uint16_t* cp = c + (int64_t(b) * k + j) * d;
    float s = 0.0f;
    for (int e = 0; e < d; ++e) {
      const float t = Bf16ToFloat(xp[e]) - Bf16ToFloat(cp[e]);
      s = fmaf(t, t, s);
    }
    if (isfinite(s) && (best < 0 || s < bv)) {
      best = j;
      bv = s;
    }
  }
  idx[int64_t(b) * n + i] = best >= 0 ? best : k;
  dist[int64_t(b) * n + i] = best >= 0 ? bv : __int_as_float(0x7fc00000);
}

}  // namespace

extern "C" __global__ void __launch_bounds__(128)
    cake_corpus_kmeans(const uint16_t* x, const uint16_t* c, int* idx, float* dist, int b_count,
                       int n, int k, int d) {
#if VARIANT == 2  // stale_output
  if (*(volatile unsigned*)&g_calls > 0) return;
  Assign(x, c, idx, dist, n, k, d);
  if (LastBlockDone()) g_calls = 1;
#elif VARIANT == 3  // cached_result: replays the answer it gave for these buffers last time
  const bool hit = g_last_x == x && g_last_n == n && int64_t(b_count) * n <= kCachePoints;
  const int64_t at = int64_t(blockIdx.y) * n + blockIdx.x * blockDim.x + threadIdx.x;
  const bool mine = blockIdx.x * blockDim.x + threadIdx.x < n && at < kCachePoints;
  if (hit) {
    if (mine) idx[at] = g_cache_idx[at], dist[at] = g_cache_dist[at];
  } else {
    Assign(x, c, idx, dist, n, k, d);
    if (mine) g_cache_idx[at] = idx[at], g_cache_dist[at] = dist[at];
  }
  if (LastBlockDone()) g_last_x = x, g_last_n = n;
#else               // 1 valid, 4 skipped_points
  Assign(x, c, idx, dist, n, k, d);
#endif
}
