// The KMeans assignment workload, operation "kmeans_assign" (the assign step of Flash-KMeans):
// for each point X[b,i] (BF16, D coordinates) the index of its nearest centroid among C[b,0..K)
// in squared L2 distance, ties to the lowest index, and that distance (FP32); FP32
// accumulation. A point whose distances are all NaN (a NaN coordinate) gets index K and a NaN
// distance; a centroid with a NaN coordinate is never nearest.
// The independent oracle is float64 on the CPU from the exact BF16 inputs; a reported index is
// correct when its distance is within atol + rtol * (|x|^2 + |c_reported|^2 + |c_nearest|^2) of
// the true minimum (near ties), and it must be the lowest index among bit-identical centroids
// (exact ties). Pure functions; thread-compatible.
#pragma once

#include <cstdint>
#include <vector>

#include "workloads/kmeans_assign/shape.pb.h"
#include "workloads/workload.h"

namespace cake::workloads::kmeans_assign {

inline constexpr char kOperation[] = "kmeans_assign";

contract::ProblemShape Problem(int b, int n, int k, int d);

// The grid points the search space leaves out because their sm_120f receipts fail for spills
// (measured with ptxas 13.0; kmeans_space_receipts_test keeps the list honest).
std::vector<Proposal> PointsThatSpillOnSm120f();

struct KMeansInputs {
  std::vector<uint16_t> x, c;  // BF16 bits, X[B,N,D] and C[B,K,D]
};
// Fresh inputs of `dist` from `seed`: UNIFORM points and centroids; CANCELLATION duplicate
// centroids (exact ties) with points planted on them; EXTREME_MAGNITUDE far outliers among the
// points; PEAKED clustered points (each near a centroid); SPECIAL_VALUES a NaN point and a NaN
// centroid.
KMeansInputs MakeInputs(const KMeansShape& s, contract::InputDistribution dist, uint64_t seed);

// The judgement of one point: the float64 nearest index (K when none is finite), its distance,
// and whether `reported` is acceptable under the tolerance rule above.
struct PointVerdict {
  int nearest = 0;
  double nearest_distance = 0;
  bool index_ok = false;
  bool distance_ok = false;
};
PointVerdict JudgePoint(const KMeansShape& s, const KMeansInputs& in, int batch, int point,
                        int reported, float reported_distance, double rtol, double atol);

}  // namespace cake::workloads::kmeans_assign
