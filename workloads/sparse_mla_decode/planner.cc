#include "workloads/sparse_mla_decode/planner.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "workloads/sparse_mla_decode/cache_format.h"

namespace cake::workloads::sparse_mla_decode {
namespace {

int64_t CeilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

}  // namespace

absl::StatusOr<DecodePlan> PlanDecode(const DecodePlanInput& in) {
  if (in.sm_count <= 0 || in.ctas_per_sm <= 0)
    return absl::InvalidArgumentError(absl::StrCat("sm_count ", in.sm_count, " and ctas_per_sm ",
                                                   in.ctas_per_sm, " must be positive"));
  if (in.tokens <= 0 || in.heads <= 0)
    return absl::InvalidArgumentError(
        absl::StrCat("T ", in.tokens, " and H ", in.heads, " must be positive"));
  if (in.topk < 0 || in.extra_topk < 0)
    return absl::InvalidArgumentError(
        absl::StrCat("topk ", in.topk, " and extra_topk ", in.extra_topk, " must not be negative"));
  DecodePlan p;
  p.heads_per_cta = in.heads % 32 == 0 ? 32 : 16;
  p.head_tiles = CeilDiv(in.heads, p.heads_per_cta);
  p.chunks = CeilDiv(in.topk + in.extra_topk, kChunkCandidates);
  const int64_t per_split = in.tokens * p.head_tiles;
  const int64_t wave = int64_t{in.sm_count} * in.ctas_per_sm;
  const int64_t wanted = CeilDiv(wave, per_split);
  // The fewest chunks a split (at least 2) that still gives `wanted` splits; the chunks are then
  // spread evenly, so no split is empty.
  p.chunks_per_split = p.chunks < 2 ? p.chunks : std::max<int64_t>(2, p.chunks / wanted);
  p.splits = p.chunks_per_split == 0 ? 1 : CeilDiv(p.chunks, p.chunks_per_split);
  const bool capped = p.splits < wanted;
  p.ctas = per_split * p.splits;
  p.workspace_bytes =
      p.splits > 1 ? in.tokens * in.heads * p.splits * (kLatentDim + 1) * int64_t{4} : 0;
  p.reason = absl::StrCat(p.heads_per_cta, " heads a CTA (H ", in.heads, "), ", p.chunks,
                          " chunks of 64; ", per_split, " CTAs a split for a wave of ", wave,
                          " -> ", p.splits, " split(s) of ", p.chunks_per_split, " chunk(s)",
                          capped ? " (capped: at least 2 chunks a split)" : "");
  return p;
}

}  // namespace cake::workloads::sparse_mla_decode
