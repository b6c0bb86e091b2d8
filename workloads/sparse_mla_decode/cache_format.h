// The two quantized latent caches of DeepSeek V4.1 sparse-MLA decode, as typed formats: the
// format owns each field's offset, the packing and the scales' representation, and decodes
// exactly; callers name tokens, never bytes.
//
//   main (SWA) cache, 528 B a token: 512 x E4M3 latents (RoPE lanes included), then 16 x UE8M0
//     scales, one per 32-wide group: value = e4m3 * 2^(u - 127).
//   extra cache, 288 B a token: 512 x E2M1 packed two to a byte (even index in the low nibble)
//     in 256 B, then 32 x E4M3 scales, one per 16-wide group: value = e2m1 * e4m3.
//
// Both are paged: token i lives in page i / page_size at slot i % page_size; page p starts at
// p * page_stride_bytes (a multiple of 16, at least page_size records). Two page layouts of the
// same records exist: kDataThenScales (FlashInfer's and CAKE's: all the page's data rows, then all
// its scale rows) and kTokenRecords (b12x's: each token's data and scales together). The golden
// writer packs float latents into either; decoding either gives the same values.
//
// Every decoded value is exact in double (and in BF16 where its exponent fits BF16's range).
// Pure functions; thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace cake::workloads::sparse_mla_decode {

inline constexpr int kLatentDim = 512;

enum class CacheKind { kMain, kExtra };
enum class PageLayout { kDataThenScales, kTokenRecords };

struct CacheFormat {
  CacheKind kind;
  int data_bytes;   // a token's packed latents
  int scale_bytes;  // a token's scales
  int group;        // latents per scale
  int record_bytes() const { return data_bytes + scale_bytes; }
};
const CacheFormat& FormatOf(CacheKind kind);  // main: 512 + 16, group 32; extra: 256 + 32, group 16

struct PagedCache {
  CacheKind kind = CacheKind::kMain;
  PageLayout layout = PageLayout::kDataThenScales;
  int64_t page_size = 0;          // tokens a page
  int64_t page_stride_bytes = 0;  // bytes from one page to the next
  int64_t pages = 0;
  std::vector<uint8_t> bytes;  // pages * page_stride_bytes

  int64_t tokens() const { return pages * page_size; }
};

// Clear errors naming the argument: a page size that is not positive, a stride that is not a
// multiple of 16 or does not hold page_size records, a byte count that is not pages * stride.
absl::Status CheckGeometry(const PagedCache& cache);

// Byte offsets of token `token`'s data row and scale row in `cache.bytes`.
struct TokenOffsets {
  int64_t data = 0, scales = 0;
};
TokenOffsets OffsetsOf(const PagedCache& cache, int64_t token);

// A cache of `tokens` tokens filled with 0xFF (NaN scales, NaN or -6 latents): what was never
// written must never reach an output.
absl::StatusOr<PagedCache> PoisonedCache(CacheKind kind, PageLayout layout, int64_t page_size,
                                         int64_t page_stride_bytes, int64_t tokens);

// Packs `latent` (kLatentDim values) into token `token`, rounding to nearest even. Main: each
// group's scale is the smallest power of two 2^k with amax / 2^k <= 448 (E4M3's largest), so no
// element saturates; an all-zero group takes 2^0. Extra: each group's scale is the E4M3 value
// amax / 6 rounded up (toward +infinity), so no element exceeds E2M1's 6; an all-zero group takes
// 1.0. Non-finite latents are refused.
absl::Status WriteToken(PagedCache& cache, int64_t token, std::span<const double> latent);

// Token `token`'s latents, exactly (NaN where a poisoned byte decodes to NaN).
std::vector<double> DecodeToken(const PagedCache& cache, int64_t token);

}  // namespace cake::workloads::sparse_mla_decode
