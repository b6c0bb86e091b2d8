#include "compiler/cache_formats.h"

namespace cake::compiler {
namespace {

constexpr CacheFormat kFormats[] = {
    {"dsv41_fp8_swa", "latent", 512, ir::E4M3, ir::UE8M0, 32},
    {"dsv41_fp4_extra", "latent", 512, ir::E2M1, ir::E4M3, 16},
};

}  // namespace

const CacheFormat* FindCacheFormat(std::string_view name) {
  for (const CacheFormat& f : kFormats)
    if (std::string_view(f.name) == name) return &f;
  return nullptr;
}

std::vector<std::string> CacheFormatNames() {
  std::vector<std::string> out;
  for (const CacheFormat& f : kFormats) out.emplace_back(f.name);
  return out;
}

TokenOffsets OffsetsInPage(const CacheFormat& f, ir::PagedCache::PageLayout layout,
                           int64_t page_size, int64_t record_stride, int64_t slot) {
  if (layout == ir::PagedCache::TOKEN_RECORDS)
    return {slot * record_stride, slot * record_stride + f.data_bytes()};
  return {slot * f.data_bytes(), page_size * f.data_bytes() + slot * f.scale_bytes()};
}

}  // namespace cake::compiler
