// The sparse-MLA decode workload's host side: the two cache formats (offsets of both page
// layouts, the golden writer exact on representable latents and within half an ulp otherwise, the
// nibble order, poison), and the float64 oracle (softmax over main and extra candidates in their
// own index spaces, masks, clamped lengths, sinks, lse_scale, empty rows, poisoned rows never
// read) against a naive long-double evaluation. Inputs are drawn fresh each run.
#include <gtest/gtest.h>

#include <cmath>
#include <numbers>
#include <random>

#include "workloads/narrow_float.h"
#include "workloads/sparse_mla_decode/cache_format.h"
#include "workloads/sparse_mla_decode/oracle.h"
#include "workloads/sparse_mla_decode/planner.h"

namespace cake::workloads::sparse_mla_decode {
namespace {

std::mt19937_64 Rng() {
  const uint64_t seed = std::random_device{}() * 0x9E3779B97F4A7C15ull;
  std::printf("seed %llu\n", static_cast<unsigned long long>(seed));
  return std::mt19937_64(seed);
}

std::vector<double> RandomLatent(std::mt19937_64& rng, double spread = 4.0) {
  std::normal_distribution<double> n(0.0, 1.0);
  std::uniform_real_distribution<double> e(-spread, spread);
  std::vector<double> v(kLatentDim);
  for (double& x : v) x = n(rng) * std::exp2(e(rng));
  return v;
}

PagedCache Cache(CacheKind kind, PageLayout layout, int64_t page_size, int64_t tokens,
                 int64_t extra_stride = 0) {
  const int64_t stride = (page_size * FormatOf(kind).record_bytes() + 15) / 16 * 16 + extra_stride;
  return *PoisonedCache(kind, layout, page_size, stride, tokens);
}

TEST(CacheFormat, OffsetsOfBothPageLayouts) {
  // Page size 3, stride 1600 (528 * 3 = 1584, rounded to 16 and 16 more).
  PagedCache flat = Cache(CacheKind::kMain, PageLayout::kDataThenScales, 3, 7, 16);
  ASSERT_EQ(flat.page_stride_bytes, 1600);
  const TokenOffsets t4 = OffsetsOf(flat, 4);  // page 1, slot 1
  EXPECT_EQ(t4.data, 1600 + 512);
  EXPECT_EQ(t4.scales, 1600 + 3 * 512 + 16);
  PagedCache records = Cache(CacheKind::kExtra, PageLayout::kTokenRecords, 5, 11);
  const TokenOffsets t7 = OffsetsOf(records, 7);  // page 1, slot 2
  EXPECT_EQ(t7.data, records.page_stride_bytes + 2 * 288);
  EXPECT_EQ(t7.scales, records.page_stride_bytes + 2 * 288 + 256);
  PagedCache extra_flat = Cache(CacheKind::kExtra, PageLayout::kDataThenScales, 5, 11);
  EXPECT_EQ(OffsetsOf(extra_flat, 7).scales, extra_flat.page_stride_bytes + 5 * 256 + 2 * 32);
}

TEST(CacheFormat, BadGeometryIsRefusedNamingTheArgument) {
  auto odd = PoisonedCache(CacheKind::kMain, PageLayout::kDataThenScales, 2, 1064, 4);
  ASSERT_FALSE(odd.ok());
  EXPECT_NE(odd.status().message().find("page_stride_bytes must be a multiple of 16"),
            std::string::npos);
  auto small = PoisonedCache(CacheKind::kMain, PageLayout::kDataThenScales, 2, 1040, 4);
  ASSERT_FALSE(small.ok());
  EXPECT_NE(small.status().message().find("cannot hold 2 records of 528 bytes"), std::string::npos);
  auto zero = PoisonedCache(CacheKind::kExtra, PageLayout::kTokenRecords, 0, 288, 4);
  ASSERT_FALSE(zero.ok());
  EXPECT_NE(zero.status().message().find("page_size"), std::string::npos);
  PagedCache c = Cache(CacheKind::kMain, PageLayout::kDataThenScales, 2, 4);
  std::vector<double> latent(kLatentDim, 1.0);
  EXPECT_EQ(WriteToken(c, 4, latent).code(), absl::StatusCode::kOutOfRange);
  latent[7] = std::nan("");
  EXPECT_NE(WriteToken(c, 0, latent).message().find("latent value 7 is not finite"),
            std::string::npos);
}

// Latents built from random codes and a per-group power of two whose group holds a value in
// (224, 448] * 2^k: the writer must choose that k and give back exactly those codes.
TEST(CacheFormat, MainWriterReproducesRepresentableLatentsByteForByte) {
  auto rng = Rng();
  for (PageLayout layout : {PageLayout::kDataThenScales, PageLayout::kTokenRecords}) {
    PagedCache c = Cache(CacheKind::kMain, layout, 4, 9);
    for (int64_t token = 0; token < 9; ++token) {
      std::vector<double> latent(kLatentDim);
      std::vector<uint8_t> codes(kLatentDim), scales(16);
      for (int g = 0; g < 16; ++g) {
        const int k = static_cast<int>(rng() % 40) - 20;
        scales[g] = static_cast<uint8_t>(k + 127);
        const int largest = g * 32 + static_cast<int>(rng() % 32);
        for (int i = g * 32; i < g * 32 + 32; ++i) {
          uint32_t code;
          do code = rng() & 0xFF;
          while (IsNanCode(NarrowFormat::kE4M3, code) || code == 0x80);  // NaN, -0
          if (i == largest) code = 0x78 | (rng() & 0x87);                // |x| >= 256
          if (IsNanCode(NarrowFormat::kE4M3, code)) code = 0x7E;
          codes[i] = static_cast<uint8_t>(code);
          latent[i] = DecodeNarrow(NarrowFormat::kE4M3, code) * std::ldexp(1.0, k);
        }
        double amax = 0;
        for (int i = g * 32; i < g * 32 + 32; ++i) amax = std::max(amax, std::fabs(latent[i]));
        ASSERT_GT(amax, 224.0 * std::ldexp(1.0, k));
      }
      ASSERT_TRUE(WriteToken(c, token, latent).ok());
      const TokenOffsets at = OffsetsOf(c, token);
      for (int i = 0; i < kLatentDim; ++i) ASSERT_EQ(c.bytes[at.data + i], codes[i]) << i;
      for (int g = 0; g < 16; ++g) ASSERT_EQ(c.bytes[at.scales + g], scales[g]) << g;
      EXPECT_EQ(DecodeToken(c, token), latent);
    }
  }
}

TEST(CacheFormat, RandomLatentsDecodeWithinHalfAnUlpAndNeverSaturate) {
  auto rng = Rng();
  for (CacheKind kind : {CacheKind::kMain, CacheKind::kExtra}) {
    const CacheFormat& f = FormatOf(kind);
    PagedCache c = Cache(kind, PageLayout::kDataThenScales, 7, 20);
    for (int64_t token = 0; token < 20; ++token) {
      const std::vector<double> latent = RandomLatent(rng);
      ASSERT_TRUE(WriteToken(c, token, latent).ok());
      const std::vector<double> back = DecodeToken(c, token);
      const uint8_t* scales = c.bytes.data() + OffsetsOf(c, token).scales;
      for (int i = 0; i < kLatentDim; ++i) {
        const int g = i / f.group;
        const double scale = kind == CacheKind::kMain
                                 ? DecodeNarrow(NarrowFormat::kUE8M0, scales[g])
                                 : DecodeNarrow(NarrowFormat::kE4M3, scales[g]);
        const double x = latent[i] / scale;
        // The element format's spacing at |x| (E4M3: 3 mantissa bits, subnormal step 2^-9;
        // E2M1: 1 mantissa bit, step 0.5 below 2), and its largest value.
        const double limit = kind == CacheKind::kMain ? 448.0 : 6.0;
        ASSERT_LE(std::fabs(x), limit) << "the scale let element " << i << " saturate";
        const int mantissa = kind == CacheKind::kMain ? 3 : 1;
        const double min_normal = kind == CacheKind::kMain ? std::ldexp(1.0, -6) : 1.0;
        const double ulp =
            std::fabs(x) < min_normal
                ? std::ldexp(min_normal, -mantissa)
                : std::ldexp(1.0, static_cast<int>(std::floor(std::log2(std::fabs(x)))) - mantissa);
        ASSERT_LE(std::fabs(back[i] / scale - x), ulp / 2 * (1 + 1e-12))
            << "element " << i << " of token " << token;
      }
    }
  }
}

TEST(CacheFormat, ExtraPacksTheEvenIndexInTheLowNibble) {
  PagedCache c = Cache(CacheKind::kExtra, PageLayout::kTokenRecords, 1, 1);
  std::vector<double> latent(kLatentDim, 0.0);
  latent[0] = 0.5;   // E2M1 code 1 under scale 1
  latent[1] = 6.0;   // code 7; the group's amax 6 gives scale 1.0 (E4M3 0x38)
  latent[3] = -1.5;  // code 0xB
  ASSERT_TRUE(WriteToken(c, 0, latent).ok());
  EXPECT_EQ(c.bytes[0], 0x71);
  EXPECT_EQ(c.bytes[1], 0xB0);
  EXPECT_EQ(c.bytes[256], 0x38);
  EXPECT_EQ(c.bytes[257], 0x38) << "an all-zero group takes scale 1.0";
  EXPECT_EQ(DecodeToken(c, 0), latent);
}

TEST(CacheFormat, BothLayoutsHoldTheSameRecordsAndDecodeAlike) {
  auto rng = Rng();
  for (CacheKind kind : {CacheKind::kMain, CacheKind::kExtra}) {
    PagedCache flat = Cache(kind, PageLayout::kDataThenScales, 3, 10, 32);
    PagedCache records = Cache(kind, PageLayout::kTokenRecords, 4, 10);
    const CacheFormat& f = FormatOf(kind);
    for (int64_t token = 0; token < 10; ++token) {
      const std::vector<double> latent = RandomLatent(rng);
      ASSERT_TRUE(WriteToken(flat, token, latent).ok());
      ASSERT_TRUE(WriteToken(records, token, latent).ok());
      EXPECT_EQ(DecodeToken(flat, token), DecodeToken(records, token));
      const TokenOffsets a = OffsetsOf(flat, token), b = OffsetsOf(records, token);
      EXPECT_TRUE(std::equal(flat.bytes.begin() + a.data,
                             flat.bytes.begin() + a.data + f.data_bytes,
                             records.bytes.begin() + b.data));
      EXPECT_TRUE(std::equal(flat.bytes.begin() + a.scales,
                             flat.bytes.begin() + a.scales + f.scale_bytes,
                             records.bytes.begin() + b.scales));
    }
  }
  // Never-written tokens are poison: NaN wherever a scale is NaN.
  PagedCache poisoned = Cache(CacheKind::kExtra, PageLayout::kDataThenScales, 2, 2);
  for (double v : DecodeToken(poisoned, 1)) EXPECT_TRUE(std::isnan(v));
}

// --- the oracle ---

struct Fixture {
  PagedCache main = Cache(CacheKind::kMain, PageLayout::kDataThenScales, 5, 40);
  PagedCache extra = Cache(CacheKind::kExtra, PageLayout::kTokenRecords, 3, 30);
  DecodeProblem p;
};

// Writes a random latent into every `written` token; the rest stay poisoned.
void Fill(std::mt19937_64& rng, PagedCache& c, const std::vector<int32_t>& written) {
  for (int32_t t : written) ASSERT_TRUE(WriteToken(c, t, RandomLatent(rng, 1.0)).ok());
}

// The same definition evaluated naively in long double: no max shift, sigmoid and logaddexp as
// written in the contract.
DecodeReference Naive(const DecodeProblem& p) {
  DecodeReference r;
  r.output.assign(static_cast<size_t>(p.tokens * p.heads * kLatentDim), 0.0);
  r.out_lse.assign(static_cast<size_t>(p.tokens * p.heads), 0.0);
  for (int64_t t = 0; t < p.tokens; ++t)
    for (int64_t h = 0; h < p.heads; ++h) {
      std::vector<std::vector<double>> kv;
      for (int64_t j = 0; j < std::min<int64_t>(std::max(p.topk_length[t], 0), p.topk); ++j)
        if (p.indices[t * p.topk + j] >= 0)
          kv.push_back(DecodeToken(*p.main, p.indices[t * p.topk + j]));
      if (p.extra)
        for (int64_t j = 0;
             j < std::min<int64_t>(std::max(p.extra_topk_length[t], 0), p.extra_topk); ++j)
          if (p.extra_indices[t * p.extra_topk + j] >= 0)
            kv.push_back(DecodeToken(*p.extra, p.extra_indices[t * p.extra_topk + j]));
      long double z = 0;
      std::vector<long double> acc(kLatentDim, 0);
      for (const auto& v : kv) {
        long double dot = 0;
        for (int i = 0; i < kLatentDim; ++i) dot += p.q[(t * p.heads + h) * kLatentDim + i] * v[i];
        const long double w = std::exp(static_cast<long double>(p.sm_scale) * dot);
        z += w;
        for (int i = 0; i < kLatentDim; ++i) acc[i] += w * v[i];
      }
      long double lse = std::log(z);  // -inf for z = 0
      long double keep = 1;
      if (p.attn_sink) {
        const long double s = (*p.attn_sink)[h];
        keep = z / (z + std::exp(s));
        lse = std::log(z + std::exp(s));
      }
      for (int i = 0; i < kLatentDim; ++i)
        r.output[(t * p.heads + h) * kLatentDim + i] =
            z > 0 ? static_cast<double>(acc[i] / z * keep) : 0.0;
      r.out_lse[t * p.heads + h] =
          static_cast<double>(p.lse_scale * lse / std::numbers::ln2_v<long double>);
    }
  return r;
}

TEST(Oracle, MatchesANaiveEvaluationOnRaggedMaskedMixedRows) {
  auto rng = Rng();
  for (int round = 0; round < 4; ++round) {
    Fixture f;
    DecodeProblem& p = f.p;
    p.tokens = 1 + static_cast<int64_t>(rng() % 6);
    p.heads = 8;
    p.topk = 12;
    p.extra_topk = 6;
    p.main = &f.main;
    p.extra = &f.extra;
    p.sm_scale = 1.0 / std::sqrt(576.0);
    p.lse_scale = round % 2 ? 1.0 : 0.75;
    if (round >= 2) {
      p.attn_sink = std::vector<double>(8);
      for (double& s : *p.attn_sink) s = std::uniform_real_distribution<double>(-3, 3)(rng);
    }
    std::normal_distribution<double> n(0, 1);
    p.q.resize(static_cast<size_t>(p.tokens * p.heads * kLatentDim));
    for (double& x : p.q) x = n(rng);
    std::vector<int32_t> main_written, extra_written;
    for (int64_t t = 0; t < p.tokens; ++t) {
      // Lengths past topk and below zero are clamped; -1 masks; unused slots hold poison indices
      // of unwritten (poisoned) tokens, which must never be read.
      p.topk_length.push_back(static_cast<int32_t>(rng() % 16) - 2);
      p.extra_topk_length.push_back(static_cast<int32_t>(rng() % 9) - 1);
      for (int64_t j = 0; j < p.topk; ++j) {
        int32_t idx = static_cast<int32_t>(rng() % 40);
        if (rng() % 5 == 0) idx = -1;
        const bool used = j < std::clamp<int64_t>(p.topk_length.back(), 0, p.topk);
        if (used && idx >= 0) main_written.push_back(idx);
        p.indices.push_back(idx);
      }
      for (int64_t j = 0; j < p.extra_topk; ++j) {
        int32_t idx = static_cast<int32_t>(rng() % 30);
        if (rng() % 5 == 0) idx = -1;
        const bool used = j < std::clamp<int64_t>(p.extra_topk_length.back(), 0, p.extra_topk);
        if (used && idx >= 0) extra_written.push_back(idx);
        p.extra_indices.push_back(idx);
      }
    }
    Fill(rng, f.main, main_written);
    Fill(rng, f.extra, extra_written);
    auto got = ReferenceDecode(p);
    ASSERT_TRUE(got.ok()) << got.status();
    const DecodeReference want = Naive(p);
    for (size_t i = 0; i < want.output.size(); ++i) {
      ASSERT_TRUE(std::isfinite(got->output[i])) << "poison leaked into output " << i;
      ASSERT_NEAR(got->output[i], want.output[i], 1e-9 * (1 + std::fabs(want.output[i]))) << i;
    }
    for (size_t i = 0; i < want.out_lse.size(); ++i) {
      if (std::isinf(want.out_lse[i])) {
        EXPECT_EQ(got->out_lse[i], want.out_lse[i]) << i;
      } else {
        ASSERT_NEAR(got->out_lse[i], want.out_lse[i], 1e-9 * (1 + std::fabs(want.out_lse[i]))) << i;
      }
    }
  }
}

TEST(Oracle, EdgeRowsOneCandidateEmptyAndSink) {
  auto rng = Rng();
  Fixture f;
  Fill(rng, f.main, {3});
  Fill(rng, f.extra, {3});
  DecodeProblem& p = f.p;
  p.tokens = 3;
  p.heads = 16;
  p.main = &f.main;
  p.extra = &f.extra;
  p.topk = 2;
  p.extra_topk = 1;
  // Row 0: main token 3 alone. Row 1: nothing (all masked). Row 2: main 3 and extra 3, which are
  // different tokens: each cache has its own index space.
  p.indices = {3, -1, -1, -1, 3, -1};
  p.topk_length = {2, 2, 1};
  p.extra_indices = {-1, 3, 3};
  p.extra_topk_length = {1, 0, 1};
  p.q.resize(static_cast<size_t>(3 * 16 * kLatentDim));
  for (double& x : p.q) x = std::normal_distribution<double>(0, 1)(rng);
  p.sm_scale = 0.05;
  p.lse_scale = 2.0;
  auto r = ReferenceDecode(p);
  ASSERT_TRUE(r.ok()) << r.status();
  const std::vector<double> m3 = DecodeToken(f.main, 3), e3 = DecodeToken(f.extra, 3);
  ASSERT_NE(m3, e3);
  const auto score = [&](int64_t t, int64_t h, const std::vector<double>& v) {
    double d = 0;
    for (int i = 0; i < kLatentDim; ++i) d += p.q[(t * 16 + h) * kLatentDim + i] * v[i];
    return p.sm_scale * d;
  };
  for (int64_t h = 0; h < 16; ++h) {
    for (int i = 0; i < kLatentDim; ++i) {
      EXPECT_EQ(r->output[(0 * 16 + h) * kLatentDim + i], m3[i]) << "one candidate: its latent";
      EXPECT_EQ(r->output[(1 * 16 + h) * kLatentDim + i], 0.0) << "an empty row gives 0";
    }
    EXPECT_NEAR(r->out_lse[0 * 16 + h], 2.0 * score(0, h, m3) / std::numbers::ln2, 1e-9);
    EXPECT_EQ(r->out_lse[1 * 16 + h], -std::numeric_limits<double>::infinity());
    const double a = score(2, h, m3), b = score(2, h, e3);
    const double wa = 1 / (1 + std::exp(b - a));
    for (int i = 0; i < kLatentDim; i += 37)
      EXPECT_NEAR(r->output[(2 * 16 + h) * kLatentDim + i], wa * m3[i] + (1 - wa) * e3[i],
                  1e-9 * (1 + std::fabs(m3[i]) + std::fabs(e3[i])));
  }
  // With a sink, the empty row's LSE is the sink's and its output stays 0.
  p.attn_sink = std::vector<double>(16, 0.25);
  auto s = ReferenceDecode(p);
  ASSERT_TRUE(s.ok());
  EXPECT_NEAR(s->out_lse[16], 2.0 * 0.25 / std::numbers::ln2, 1e-12);
  EXPECT_EQ(s->output[16 * kLatentDim], 0.0);
  const double x = score(0, 0, m3);
  EXPECT_NEAR(s->output[5], m3[5] / (1 + std::exp(0.25 - x)), 1e-9 * (1 + std::fabs(m3[5])));
}

TEST(Oracle, BadInputNamesTheArgument) {
  Fixture f;
  DecodeProblem p;
  p.tokens = 1;
  p.heads = 16;
  p.q.assign(16 * kLatentDim, 0.5);
  p.main = &f.main;
  p.topk = 1;
  p.indices = {0};
  p.topk_length = {1};
  EXPECT_TRUE(CheckProblem(p).ok());
  DecodeProblem bad = p;
  bad.heads = 24;
  EXPECT_NE(CheckProblem(bad).message().find("H = 24"), std::string::npos);
  bad = p;
  bad.tokens = 65;
  EXPECT_NE(CheckProblem(bad).message().find("T = 65"), std::string::npos);
  bad = p;
  bad.indices = {40};
  EXPECT_NE(CheckProblem(bad).message().find("indices[0] = 40 is outside"), std::string::npos);
  bad = p;
  bad.main = &f.extra;
  EXPECT_NE(CheckProblem(bad).message().find("main cache: it holds extra-cache records"),
            std::string::npos);
  bad = p;
  bad.q.pop_back();
  EXPECT_NE(CheckProblem(bad).message().find("q has"), std::string::npos);
  bad = p;
  bad.extra_topk = 2;
  EXPECT_NE(CheckProblem(bad).message().find("without an extra cache"), std::string::npos);
}

// --- the planner ---

TEST(Planner, PropertiesOverTheContractsShapes) {
  for (int sms : {48, 132, 170, 188})
    for (int64_t t : {1, 2, 8, 32, 64})
      for (int64_t h : kHeadCounts)
        for (auto [topk, extra] : {std::pair<int64_t, int64_t>{512, 128},
                                   {2048, 512},
                                   {0, 0},
                                   {1, 0},
                                   {64, 1},
                                   {100, 0}})
          for (int occupancy : {1, 2}) {
            auto plan = PlanDecode({sms, occupancy, t, h, topk, extra});
            ASSERT_TRUE(plan.ok()) << plan.status();
            const DecodePlan& p = *plan;
            SCOPED_TRACE(p.reason);
            EXPECT_EQ(p.heads_per_cta, h % 32 == 0 ? 32 : 16);
            EXPECT_EQ(p.head_tiles * p.heads_per_cta >= h, true);
            EXPECT_LT((p.head_tiles - 1) * p.heads_per_cta, h);
            EXPECT_EQ(p.chunks, (topk + extra + 63) / 64);
            EXPECT_GE(p.splits, 1);
            // Every chunk in exactly one split, and no split empty.
            if (p.chunks > 0) {
              EXPECT_GE(p.splits * p.chunks_per_split, p.chunks);
              EXPECT_LT((p.splits - 1) * p.chunks_per_split, p.chunks);
            }
            if (p.splits > 1) {
              EXPECT_GE(p.chunks_per_split, 2) << "a merge for under 2 chunks";
            }
            EXPECT_EQ(p.ctas, t * p.head_tiles * p.splits);
            // A wave is filled unless splits are already as fine as 2 chunks (or one split).
            if (p.ctas < int64_t{sms} * occupancy) {
              EXPECT_TRUE(p.splits == 1 || p.chunks_per_split == 2) << p.splits;
            }
            EXPECT_EQ(p.workspace_bytes, p.splits > 1 ? t * h * p.splits * 513 * 4 : 0);
            // More SMs never mean fewer splits.
            auto bigger = PlanDecode({sms * 2, occupancy, t, h, topk, extra});
            EXPECT_GE(bigger->splits, p.splits);
          }
}

TEST(Planner, TypicalChoicesAndBadInput) {
  // One token, 128 heads (4 tiles of 32), 2560 candidates (40 chunks) on 132 SMs: 33 splits
  // would fill the wave, capped at 20 (2 chunks a split).
  auto p = PlanDecode({132, 1, 1, 128, 2048, 512});
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->head_tiles, 4);
  EXPECT_EQ(p->splits, 20);
  EXPECT_EQ(p->chunks_per_split, 2);
  EXPECT_NE(p->reason.find("capped"), std::string::npos) << p->reason;
  // 8 tokens x 4 tiles = 32 CTAs a split: 5 splits fill 132 SMs; 40 chunks / 5 = 8 a split.
  p = PlanDecode({132, 1, 8, 128, 2048, 512});
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->splits, 5);
  EXPECT_EQ(p->chunks_per_split, 8);
  EXPECT_EQ(p->workspace_bytes, 8 * 128 * 5 * 513 * 4);
  // 64 tokens x 4 tiles = 256 CTAs already fill 132 SMs: no split, no workspace.
  p = PlanDecode({132, 1, 64, 128, 2048, 512});
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->splits, 1);
  EXPECT_EQ(p->workspace_bytes, 0);
  EXPECT_FALSE(PlanDecode({0, 1, 1, 16, 64, 0}).ok());
  EXPECT_FALSE(PlanDecode({132, 1, 0, 16, 64, 0}).ok());
  EXPECT_NE(PlanDecode({132, 1, 1, 16, -1, 0}).status().message().find("topk -1"),
            std::string::npos);
}

}  // namespace
}  // namespace cake::workloads::sparse_mla_decode
