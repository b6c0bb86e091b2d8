// The catalogue of paged-cache formats a schedule may name (PagedCache.format): each format owns
// its token record (the packed data row, the scale row), its one field's element and scale types
// and group, and, with a page layout, every byte offset. Schedules name tokens and fields, never
// bytes. The formats are those of DeepSeek V4.1's sparse-MLA decode caches:
//
//   dsv41_fp8_swa    528 B a token: 512 x E4M3 latents, then 16 x UE8M0 scales (one per 32).
//   dsv41_fp4_extra  288 B a token: 512 x E2M1 packed two to a byte (even index low), then
//                    32 x E4M3 scales (one per 16).
//
// Both decode exactly to BF16 (E4M3 * 2^k and E2M1 * E4M3 are exact there). Pure; thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "cake/ir.pb.h"

namespace cake::compiler {

struct CacheFormat {
  const char* name;
  const char* field;  // the one field a decode names ("latent")
  int elements;       // of the field, a token
  ir::DType element;  // E4M3, or E2M1 packed two to a byte
  ir::DType scale;    // UE8M0 or E4M3
  int group;          // elements a scale
  int data_bytes() const { return element == ir::E2M1 ? elements / 2 : elements; }
  int scale_bytes() const { return elements / group; }
  int record_bytes() const { return data_bytes() + scale_bytes(); }
};

// The format named `name`, or nullptr.
const CacheFormat* FindCacheFormat(std::string_view name);
// Every format's name, for messages.
std::vector<std::string> CacheFormatNames();

// Byte offsets of one token's data row and scale row from its page's start: DATA_THEN_SCALES
// puts the page's `page_size` data rows first, then its scale rows; TOKEN_RECORDS puts token
// `slot`'s record at slot * record_stride (data, then scales).
struct TokenOffsets {
  int64_t data = 0, scales = 0;
};
TokenOffsets OffsetsInPage(const CacheFormat& f, ir::PagedCache::PageLayout layout,
                           int64_t page_size, int64_t record_stride, int64_t slot);

}  // namespace cake::compiler
