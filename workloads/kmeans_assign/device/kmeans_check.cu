// The timed-output check of kmeans_assign, a trusted kernel that never comes from a schedule:
// for sampled points of one launch, every centroid's squared distance computed directly as
// sum_e (x_e - c_e)^2 in FP32 (not the candidate's |c|^2 - 2 x.c), and the reported index and
// distance judged under the contract's rule (near ties within atol + rtol * (|x|^2 + |c_j|^2 +
// |c_min|^2); exact duplicates are not drawn by the timed inputs). One block per sampled point.
#include <cuda_bf16.h>
#include <stdint.h>

#include "gpuqueue/worker/device_mix64.cuh"

namespace {

__device__ float Distance(const __nv_bfloat16* x, const __nv_bfloat16* c, int d) {
  float s = 0.0f;
  for (int e = 0; e < d; ++e) {
    const float t = __bfloat162float(x[e]) - __bfloat162float(c[e]);
    s = fmaf(t, t, s);
  }
  return s;
}

__device__ float Norm(const __nv_bfloat16* x, int d) {
  float s = 0.0f;
  for (int e = 0; e < d; ++e) s = fmaf(__bfloat162float(x[e]), __bfloat162float(x[e]), s);
  return s;
}

}  // namespace

// counts[0] += wrong indices, counts[1] += wrong distances, counts[2] += unwritten or
// out-of-range outputs.
extern "C" __global__ void cake_kmeans_check(const __nv_bfloat16* __restrict__ X,
                                             const __nv_bfloat16* __restrict__ C,
                                             const int* __restrict__ idx,
                                             const float* __restrict__ dist, int B, int N, int K,
                                             int D, uint64_t seed, float rtol, float atol,
                                             unsigned long long* counts) {
  __shared__ float best_v[256];
  __shared__ int best_j[256];
  const uint64_t h = Mix64(seed ^ Mix64(blockIdx.x));
  const int b = int(h % uint64_t(B));
  const int i = blockIdx.x == 0 ? N - 1 : int((h >> 20) % uint64_t(N));
  const __nv_bfloat16* x = X + (int64_t(b) * N + i) * D;
  const __nv_bfloat16* cb = C + int64_t(b) * K * D;
  float v = 3.4e38f;
  int j_best = -1;
  for (int j = threadIdx.x; j < K; j += blockDim.x) {
    const float dj = Distance(x, cb + int64_t(j) * D, D);
    if (dj < v) {
      v = dj;
      j_best = j;
    }
  }
  best_v[threadIdx.x] = v;
  best_j[threadIdx.x] = j_best;
  __syncthreads();
  for (int stride = blockDim.x / 2; stride > 0; stride >>= 1) {
    if (threadIdx.x < stride) {
      const float ov = best_v[threadIdx.x + stride];
      const int oj = best_j[threadIdx.x + stride];
      if (oj >= 0 && (best_j[threadIdx.x] < 0 || ov < best_v[threadIdx.x] ||
                      (ov == best_v[threadIdx.x] && oj < best_j[threadIdx.x]))) {
        best_v[threadIdx.x] = ov;
        best_j[threadIdx.x] = oj;
      }
    }
    __syncthreads();
  }
  if (threadIdx.x != 0) return;
  const int64_t at = int64_t(b) * N + i;
  const int reported = idx[at];
  const float reported_distance = dist[at];
  if (reported < 0 || reported >= K || !(reported_distance == reported_distance)) {
    atomicAdd(&counts[2], 1ull);
    return;
  }
  const float d_min = best_v[0];
  const float d_rep = Distance(x, cb + int64_t(reported) * D, D);
  const float scale =
      Norm(x, D) + Norm(cb + int64_t(reported) * D, D) + Norm(cb + int64_t(best_j[0]) * D, D);
  const float tol = atol + rtol * scale;
  if (!(d_rep - d_min <= tol)) atomicAdd(&counts[0], 1ull);
  if (!(fabsf(reported_distance - d_rep) <= tol)) atomicAdd(&counts[1], 1ull);
}
