#include "workloads/sparse_mla_decode/oracle.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numbers>

#include "absl/strings/str_cat.h"

namespace cake::workloads::sparse_mla_decode {
namespace {

absl::Status CheckSize(const char* name, size_t have, int64_t want) {
  if (static_cast<int64_t>(have) != want)
    return absl::InvalidArgumentError(
        absl::StrCat(name, " has ", have, " elements; its shape needs ", want));
  return absl::OkStatus();
}

absl::Status CheckIndices(const char* name, const std::vector<int32_t>& indices,
                          const PagedCache& cache) {
  for (size_t i = 0; i < indices.size(); ++i)
    if (indices[i] < -1 || indices[i] >= cache.tokens())
      return absl::OutOfRangeError(absl::StrCat(name, "[", i, "] = ", indices[i],
                                                " is outside its cache's [0, ", cache.tokens(),
                                                ") (and is not -1, the mask)"));
  return absl::OkStatus();
}

int64_t Clamp(int32_t length, int64_t topk) { return std::clamp<int64_t>(length, 0, topk); }

}  // namespace

absl::Status CheckProblem(const DecodeProblem& p) {
  if (std::find(std::begin(kHeadCounts), std::end(kHeadCounts), p.heads) == std::end(kHeadCounts))
    return absl::InvalidArgumentError(
        absl::StrCat("q: H = ", p.heads, " is not one of 8, 16, 32, 48, 64, 80, 96, 112, 128"));
  if (p.tokens < 1 || p.tokens > kMaxTokensThisRoute)
    return absl::InvalidArgumentError(absl::StrCat("q: T = ", p.tokens, " is outside [1, ",
                                                   kMaxTokensThisRoute, "] (decode only)"));
  if (absl::Status s = CheckSize("q", p.q.size(), p.tokens * p.heads * kLatentDim); !s.ok())
    return s;
  if (p.main == nullptr) return absl::InvalidArgumentError("the main cache is missing");
  if (p.main->kind != CacheKind::kMain)
    return absl::InvalidArgumentError("main cache: it holds extra-cache records (288 B)");
  if (absl::Status s = CheckGeometry(*p.main); !s.ok()) return s;
  if (p.topk < 0) return absl::InvalidArgumentError("topk is negative");
  if (absl::Status s = CheckSize("indices", p.indices.size(), p.tokens * p.topk); !s.ok()) return s;
  if (absl::Status s = CheckSize("topk_length", p.topk_length.size(), p.tokens); !s.ok()) return s;
  if (absl::Status s = CheckIndices("indices", p.indices, *p.main); !s.ok()) return s;
  if (p.extra != nullptr) {
    if (p.extra->kind != CacheKind::kExtra)
      return absl::InvalidArgumentError("extra cache: it holds main-cache records (528 B)");
    if (absl::Status s = CheckGeometry(*p.extra); !s.ok()) return s;
    if (p.extra_topk < 0) return absl::InvalidArgumentError("extra_topk is negative");
    if (absl::Status s =
            CheckSize("extra_indices", p.extra_indices.size(), p.tokens * p.extra_topk);
        !s.ok())
      return s;
    if (absl::Status s = CheckSize("extra_topk_length", p.extra_topk_length.size(), p.tokens);
        !s.ok())
      return s;
    if (absl::Status s = CheckIndices("extra_indices", p.extra_indices, *p.extra); !s.ok())
      return s;
  } else if (p.extra_topk != 0 || !p.extra_indices.empty()) {
    return absl::InvalidArgumentError("extra_indices given without an extra cache");
  }
  if (p.attn_sink)
    if (absl::Status s = CheckSize("attn_sink", p.attn_sink->size(), p.heads); !s.ok()) return s;
  return absl::OkStatus();
}

absl::StatusOr<DecodeReference> ReferenceDecode(const DecodeProblem& p) {
  if (absl::Status s = CheckProblem(p); !s.ok()) return s;
  const double inf = std::numeric_limits<double>::infinity();
  DecodeReference r;
  r.output.assign(static_cast<size_t>(p.tokens * p.heads * kLatentDim), 0.0);
  r.out_lse.assign(static_cast<size_t>(p.tokens * p.heads), -inf);
  for (int64_t t = 0; t < p.tokens; ++t) {
    // The row's candidates, decoded once: masked slots and those past the length never are.
    std::vector<std::vector<double>> latents;
    const auto gather = [&](const PagedCache* cache, const std::vector<int32_t>& indices,
                            int64_t topk, int32_t length) {
      for (int64_t j = 0; j < Clamp(length, topk); ++j)
        if (const int32_t token = indices[static_cast<size_t>(t * topk + j)]; token >= 0)
          latents.push_back(DecodeToken(*cache, token));
    };
    gather(p.main, p.indices, p.topk, p.topk_length[t]);
    if (p.extra != nullptr) gather(p.extra, p.extra_indices, p.extra_topk, p.extra_topk_length[t]);
    for (int64_t h = 0; h < p.heads; ++h) {
      const double* q = p.q.data() + (t * p.heads + h) * kLatentDim;
      double* out = r.output.data() + (t * p.heads + h) * kLatentDim;
      double lse = -inf;
      if (!latents.empty()) {
        std::vector<double> scores(latents.size());
        double top = -inf;
        for (size_t j = 0; j < latents.size(); ++j) {
          double dot = 0;
          for (int i = 0; i < kLatentDim; ++i) dot += q[i] * latents[j][i];
          scores[j] = p.sm_scale * dot;
          top = std::max(top, scores[j]);
        }
        double sum = 0;
        for (double& s : scores) sum += (s = std::exp(s - top));
        for (size_t j = 0; j < latents.size(); ++j)
          for (int i = 0; i < kLatentDim; ++i) out[i] += scores[j] / sum * latents[j][i];
        lse = top + std::log(sum);
      }
      if (p.attn_sink) {
        const double sink = (*p.attn_sink)[h];
        // sigmoid(lse - sink); 0 over no candidate (lse = -inf).
        const double keep = std::isinf(lse) ? 0.0 : 1.0 / (1.0 + std::exp(sink - lse));
        for (int i = 0; i < kLatentDim; ++i) out[i] *= keep;
        lse = std::isinf(lse) ? sink
                              : std::max(lse, sink) + std::log1p(std::exp(-std::fabs(lse - sink)));
      }
      r.out_lse[t * p.heads + h] = p.lse_scale * lse / std::numbers::ln2;
    }
  }
  return r;
}

}  // namespace cake::workloads::sparse_mla_decode
