// The independent reference of sparse-MLA decode over the two caches, written from the contract
// (not from any kernel): each cache slot's bytes decoded exactly to double, gathered by its own
// index list, masked, one softmax over main and extra candidates together, P.V with K = V = the
// 512-wide latent, an optional attention sink, and the log-sum-exp in base 2 times lse_scale.
//
//   score(t, h, j) = sm_scale * dot(q[t, h], latent_j)                     (natural units)
//   lse(t, h)      = log(sum_j exp(score))          (-inf over no candidate)
//   out(t, h)      = sum_j softmax_j * latent_j     (0 over no candidate)
//   with a sink s_h: out *= sigmoid(lse - s_h); lse = logaddexp(lse, s_h)
//   out_lse(t, h)  = lse_scale * lse / ln 2
//
// Candidates of row t: indices[t][0 .. topk_length[t]) of the main cache and
// extra_indices[t][0 .. extra_topk_length[t]) of the extra cache, each in its own index space;
// -1 masks a slot (never read). A token listed twice counts twice. Pure; thread-safe.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "absl/status/statusor.h"
#include "workloads/sparse_mla_decode/cache_format.h"

namespace cake::workloads::sparse_mla_decode {

inline constexpr int kMaxTokensThisRoute = 64;
// The head counts the contract admits.
inline constexpr int kHeadCounts[] = {8, 16, 32, 48, 64, 80, 96, 112, 128};

struct DecodeProblem {
  int64_t tokens = 0, heads = 0;  // T, H
  std::vector<double> q;          // [T, H, 512]
  const PagedCache* main = nullptr;
  int64_t topk = 0;
  std::vector<int32_t> indices;       // [T, topk]
  std::vector<int32_t> topk_length;   // [T], clamped to [0, topk]
  const PagedCache* extra = nullptr;  // optional: no extra cache
  int64_t extra_topk = 0;
  std::vector<int32_t> extra_indices;      // [T, extra_topk]
  std::vector<int32_t> extra_topk_length;  // [T], clamped to [0, extra_topk]
  double sm_scale = 1.0, lse_scale = 1.0;
  std::optional<std::vector<double>> attn_sink;  // [H], natural log units
};

struct DecodeReference {
  std::vector<double> output;   // [T, H, 512]
  std::vector<double> out_lse;  // [T, H]
};

// A clear error naming the argument: H outside kHeadCounts, T outside [1, 64], a tensor whose
// size does not match its shape, a cache whose geometry is wrong, an index outside its cache.
absl::Status CheckProblem(const DecodeProblem& p);

absl::StatusOr<DecodeReference> ReferenceDecode(const DecodeProblem& p);

}  // namespace cake::workloads::sparse_mla_decode
