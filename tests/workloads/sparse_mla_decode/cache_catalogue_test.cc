// The compiler's cache-format catalogue (compiler/cache_formats.h, what schedules name) against
// the workload's typed cache formats (what the golden writer packs and the oracle decodes): the
// same record widths, groups and scale types, and the same byte offsets of every token's data
// and scale rows in both page layouts, for page sizes that do and do not fill a 16-byte chunk.
#include <gtest/gtest.h>

#include "compiler/cache_formats.h"
#include "workloads/sparse_mla_decode/cache_format.h"

namespace cake::workloads::sparse_mla_decode {
namespace {

struct Pair {
  const char* catalogue_name;
  CacheKind kind;
};
constexpr Pair kPairs[] = {{"dsv41_fp8_swa", CacheKind::kMain},
                           {"dsv41_fp4_extra", CacheKind::kExtra}};

TEST(CacheCatalogue, RecordsMatchTheWorkloadsFormats) {
  for (const Pair& p : kPairs) {
    SCOPED_TRACE(p.catalogue_name);
    const compiler::CacheFormat* c = compiler::FindCacheFormat(p.catalogue_name);
    ASSERT_NE(c, nullptr);
    const CacheFormat& w = FormatOf(p.kind);
    EXPECT_EQ(c->data_bytes(), w.data_bytes);
    EXPECT_EQ(c->scale_bytes(), w.scale_bytes);
    EXPECT_EQ(c->record_bytes(), w.record_bytes());
    EXPECT_EQ(c->group, w.group);
    EXPECT_EQ(c->elements, kLatentDim);
  }
  EXPECT_EQ(compiler::FindCacheFormat("dsv41_fp8"), nullptr);
  EXPECT_EQ(compiler::CacheFormatNames().size(), 2u);
}

TEST(CacheCatalogue, EveryTokensOffsetsMatchInBothLayouts) {
  for (const Pair& p : kPairs)
    for (PageLayout layout : {PageLayout::kDataThenScales, PageLayout::kTokenRecords})
      for (int64_t page_size : {1, 3, 16, 64}) {
        SCOPED_TRACE(::testing::Message() << p.catalogue_name << " layout "
                                          << static_cast<int>(layout) << " page " << page_size);
        const compiler::CacheFormat& c = *compiler::FindCacheFormat(p.catalogue_name);
        PagedCache cache;
        cache.kind = p.kind;
        cache.layout = layout;
        cache.page_size = page_size;
        // The smallest stride holding the page, rounded up to 16 bytes, plus a spare chunk.
        cache.page_stride_bytes = (page_size * c.record_bytes() + 15) / 16 * 16 + 16;
        cache.pages = 3;
        cache.bytes.assign(cache.pages * cache.page_stride_bytes, 0);
        ASSERT_TRUE(CheckGeometry(cache).ok()) << CheckGeometry(cache);
        const auto ir_layout = layout == PageLayout::kDataThenScales
                                   ? ir::PagedCache::DATA_THEN_SCALES
                                   : ir::PagedCache::TOKEN_RECORDS;
        for (int64_t token = 0; token < cache.tokens(); ++token) {
          const TokenOffsets w = OffsetsOf(cache, token);
          const compiler::TokenOffsets in_page =
              compiler::OffsetsInPage(c, ir_layout, page_size, c.record_bytes(), token % page_size);
          const int64_t page = token / page_size * cache.page_stride_bytes;
          EXPECT_EQ(page + in_page.data, w.data) << "token " << token;
          EXPECT_EQ(page + in_page.scales, w.scales) << "token " << token;
        }
      }
}

}  // namespace
}  // namespace cake::workloads::sparse_mla_decode
