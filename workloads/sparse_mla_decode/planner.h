// The split-KV planner of sparse-MLA decode: from the device's SM count and the problem's T, H and
// candidate counts, how many heads a CTA takes, how the candidates are cut into 64-wide chunks
// and how many splits share a row (each writing a partial output and LSE that a merge kernel
// combines), and the workspace that takes. Pure; the receipt records its choices and the reason.
//
// Rules, in order:
//   - a CTA takes 32 heads (two 16-row MMA tiles sharing each gathered chunk, halving the
//     gather traffic) when H is a multiple of 32, else 16;
//   - candidates (main and extra together) are cut into chunks of 64;
//   - with B = T * head tiles CTAs per split, at least ceil(SMs * CTAs per SM / B) splits, so
//     one wave is full, but no split gets fewer than 2 chunks (a merge costs more than it hides
//     below that): each split takes max(2, chunks / wanted) chunks, the last the rest;
//   - with more than one split, the caller's workspace holds T * H * splits partial outputs (512
//     FP32) and partial LSEs (FP32).
#pragma once

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"

namespace cake::workloads::sparse_mla_decode {

inline constexpr int64_t kChunkCandidates = 64;

struct DecodePlanInput {
  int sm_count = 0;
  int ctas_per_sm = 1;  // occupancy of the partial kernel (from its receipt)
  int64_t tokens = 0, heads = 0, topk = 0, extra_topk = 0;
};

struct DecodePlan {
  int heads_per_cta = 16;
  int64_t head_tiles = 0;        // ceil(H / heads_per_cta)
  int64_t chunks = 0;            // ceil((topk + extra_topk) / 64)
  int64_t splits = 1;            // per (token, head tile)
  int64_t chunks_per_split = 0;  // the last split may take fewer
  int64_t ctas = 0;              // T * head_tiles * splits
  int64_t workspace_bytes = 0;   // 0 with one split (no merge)
  std::string reason;            // one line for the receipt
};

// InvalidArgument for a non-positive SM count or occupancy, T or H, or negative candidate counts.
absl::StatusOr<DecodePlan> PlanDecode(const DecodePlanInput& in);

}  // namespace cake::workloads::sparse_mla_decode
