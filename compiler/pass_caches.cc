// Paged caches against the format catalogue (cache_formats.h), checked with the fragments: a
// cache names a known format and a page layout, its storage is bytes aligned for 16-byte gathers,
// its page stride (and a TOKEN_RECORDS record stride) is a multiple of 16 bytes holding whole
// records; a gather lands whole records; a decode names a field of the format of the records it
// reads and decodes it exactly to BF16.
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "cache_formats.h"
#include "passes.h"

namespace cake::compiler {
namespace {

constexpr int kChunk = 16;  // bytes of one cp.async gather

void CheckCache(const KernelGraph& g, const ir::PagedCache& c, DiagnosticSink& sink,
                CheckCounter& checks) {
  const std::string path = g.DeclPath("caches", c.name());
  ++checks;
  const CacheFormat* f = FindCacheFormat(c.format());
  if (f == nullptr) {
    sink.Error(report::DIAG_INVALID_VALUE)
        .Path(path)
        .Resource(c.name())
        .Condition("the cache format is one of the catalogue's")
        .Evidence(absl::StrCat("format = '", c.format(), "'"))
        .Repair(absl::StrCat("name one of: ", absl::StrJoin(CacheFormatNames(), ", ")))
        .Message("unknown cache format");
    return;
  }
  ++checks;
  if (c.layout() == ir::PagedCache::PAGE_LAYOUT_UNSPECIFIED)
    sink.Error(report::DIAG_MISSING_FIELD)
        .Path(path)
        .Resource(c.name())
        .Condition("a paged cache names its page layout (DATA_THEN_SCALES or TOKEN_RECORDS)")
        .Message("paged cache without a page layout");
  // Storage: bytes, 16-byte aligned.
  ++checks;
  auto ti = g.tensors.find(c.storage());
  if (ti == g.tensors.end()) {
    sink.Error(report::DIAG_UNDEFINED_REFERENCE)
        .Path(path)
        .Resource(c.storage())
        .Condition("storage names a tensor param")
        .Message(absl::StrCat("cache '", c.name(), "' stores into no tensor"));
  } else if (ti->second->dtype() != ir::U8 || ti->second->alignment_bytes() < kChunk ||
             ti->second->alignment_bytes() % kChunk != 0) {
    sink.Error(report::DIAG_ALIGNMENT_INSUFFICIENT)
        .Path(path)
        .Resource(c.storage())
        .Condition("cache storage is U8 bytes aligned to 16 (the gathers copy 16-byte chunks)")
        .Evidence(absl::StrCat("'", c.storage(), "' is ", DTypeName(ti->second->dtype()),
                               " aligned to ", ti->second->alignment_bytes()))
        .Message("cache storage cannot be gathered in 16-byte chunks");
  }
  // Strides: scalars known multiples of 16 bytes, at least one whole record.
  auto stride = [&](const std::string& field, const std::string& scalar, int64_t at_least) {
    ++checks;
    auto si = g.scalars.find(scalar);
    if (si == g.scalars.end()) {
      sink.Error(scalar.empty() ? report::DIAG_MISSING_FIELD : report::DIAG_UNDEFINED_REFERENCE)
          .Path(absl::StrCat(path, ".", field))
          .Resource(scalar)
          .Condition(absl::StrCat(field, " names a scalar param"))
          .Message(absl::StrCat("cache '", c.name(), "' has no ", field));
      return;
    }
    const ir::ScalarParam& s = *si->second;
    ++checks;
    if (s.multiple_of() <= 0 || s.multiple_of() % kChunk != 0 || s.min() < at_least)
      sink.Error(report::DIAG_ALIGNMENT_INSUFFICIENT)
          .Path(absl::StrCat(path, ".", field))
          .Resource(scalar)
          .Condition(absl::StrCat(field, " is a multiple of 16 bytes and at least ", at_least))
          .Evidence(
              absl::StrCat("'", scalar, "': multiple_of ", s.multiple_of(), ", min ", s.min()))
          .Repair(absl::StrCat("declare '", scalar, "' multiple_of 16 and min ", at_least))
          .Message(absl::StrCat("cache '", c.name(), "': ", field,
                                " is not a whole number of 16-byte chunks holding a record"));
  };
  stride("page_stride", c.page_stride(), f->record_bytes());
  if (c.layout() == ir::PagedCache::TOKEN_RECORDS)
    stride("record_stride", c.record_stride(), f->record_bytes());
  ++checks;
  if (auto pi = g.scalars.find(c.page_size()); pi == g.scalars.end() || pi->second->min() < 1)
    sink.Error(pi == g.scalars.end() ? report::DIAG_MISSING_FIELD : report::DIAG_INVALID_VALUE)
        .Path(absl::StrCat(path, ".page_size"))
        .Resource(c.page_size())
        .Condition("page_size names a scalar param of at least 1 (tokens a page)")
        .Message(absl::StrCat("cache '", c.name(), "' has no page size"));
}

// The format of the cache whose gather writes `buffer`, or nullptr.
const CacheFormat* FormatGatheredInto(const KernelGraph& g, const std::string& buffer) {
  for (const auto& n : g.nodes)
    if (n->op->has_gather_records() && n->op->gather_records().dst() == buffer)
      if (auto ci = g.caches.find(n->op->gather_records().cache()); ci != g.caches.end())
        return FindCacheFormat(ci->second->format());
  return nullptr;
}

void CheckGather(const KernelGraph& g, const OpNode& n, DiagnosticSink& sink,
                 CheckCounter& checks) {
  const ir::GatherRecords& gr = n.op->gather_records();
  auto ci = g.caches.find(gr.cache());
  auto bi = g.buffers.find(gr.dst());
  if (ci == g.caches.end() || bi == g.buffers.end()) return;  // construction reported it
  const CacheFormat* f = FindCacheFormat(ci->second->format());
  if (f == nullptr) return;  // reported at the cache
  const ir::Buffer& b = *bi->second;
  ++checks;
  const bool whole_records = b.dtype() == ir::U8 && b.shape().dims_size() == 2 &&
                             ConstDim(b.shape().dims(0)).value_or(-1) == gr.tile() &&
                             ConstDim(b.shape().dims(1)).value_or(-1) == f->record_bytes();
  if (!whole_records)
    sink.Error(report::DIAG_REPRESENTATION_INCOMPATIBLE)
        .Op(n.op->id())
        .Path(n.path)
        .Resource(b.name())
        .Condition(absl::StrCat("the gather's buffer is U8 [", gr.tile(), ", ", f->record_bytes(),
                                "]: a record of ", f->name, " a token"))
        .Evidence(absl::StrCat("'", b.name(), "' is ", DTypeName(b.dtype()), " of ",
                               b.shape().dims_size(), " dims"))
        .Message(
            absl::StrCat("gathered records of ", f->name, " are ", f->record_bytes(), " bytes"));
}

void CheckDecode(const KernelGraph& g, const OpNode& n, DiagnosticSink& sink,
                 CheckCounter& checks) {
  const ir::DecodeFragment& d = n.op->decode_fragment();
  const CacheFormat* f = FormatGatheredInto(g, d.records());
  ++checks;
  if (f == nullptr) {
    sink.Error(report::DIAG_REPRESENTATION_INCOMPATIBLE)
        .Op(n.op->id())
        .Path(n.path)
        .Resource(d.records())
        .Condition("a decode reads records a gather_records wrote (their format decides)")
        .Evidence(absl::StrCat("no gather of a known format writes '", d.records(), "'"))
        .Message("decode of records of no known format");
    return;
  }
  ++checks;
  if (d.field() != std::string_view(f->field))
    sink.Error(report::DIAG_INVALID_VALUE)
        .Op(n.op->id())
        .Path(n.path)
        .Resource(d.records())
        .Condition(absl::StrCat("the field is one of ", f->name, "'s: ", f->field))
        .Evidence(absl::StrCat("field = '", d.field(), "'"))
        .Message(absl::StrCat("'", d.field(), "' is not a field of ", f->name));
  ++checks;
  if (d.output() != ir::BF16 || d.mode() != ir::DecodeFragment::EXACT)
    sink.Error(report::DIAG_REPRESENTATION_INCOMPATIBLE)
        .Op(n.op->id())
        .Path(n.path)
        .Resource(d.records())
        .Condition(absl::StrCat(f->name, " decodes EXACT to BF16 (", DTypeName(f->element), " x ",
                                DTypeName(f->scale), " is exact there)"))
        .Evidence(absl::StrCat("output ", DTypeName(d.output()), ", mode ",
                               ir::DecodeFragment::Mode_Name(d.mode())))
        .Message("decode to another type or mode would round silently");
}

}  // namespace

void CheckCaches(const KernelGraph& g, DiagnosticSink& sink, CheckCounter& checks) {
  for (const auto& [name, cache] : g.caches) CheckCache(g, *cache, sink, checks);
  for (const auto& n : g.nodes) {
    if (n->op->has_gather_records()) CheckGather(g, *n, sink, checks);
    if (n->op->has_decode_fragment()) CheckDecode(g, *n, sink, checks);
  }
}

}  // namespace cake::compiler
