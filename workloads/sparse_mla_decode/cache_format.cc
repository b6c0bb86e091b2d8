#include "workloads/sparse_mla_decode/cache_format.h"

#include <cmath>

#include "absl/strings/str_cat.h"
#include "workloads/narrow_float.h"

namespace cake::workloads::sparse_mla_decode {
namespace {

constexpr CacheFormat kMainFormat{CacheKind::kMain, kLatentDim, kLatentDim / 32, 32};
constexpr CacheFormat kExtraFormat{CacheKind::kExtra, kLatentDim / 2, kLatentDim / 16, 16};
constexpr double kE4M3Max = 448.0, kE2M1Max = 6.0;

const char* Name(CacheKind kind) { return kind == CacheKind::kMain ? "main" : "extra"; }

uint32_t Encode(NarrowFormat f, double v, Rounding r = Rounding::kNearestEven) {
  // Every caller passes a finite value the format holds (its scale was chosen so).
  return *EncodeNarrow(f, v, r, Overflow::kSaturateFinite);
}

}  // namespace

const CacheFormat& FormatOf(CacheKind kind) {
  return kind == CacheKind::kMain ? kMainFormat : kExtraFormat;
}

absl::Status CheckGeometry(const PagedCache& c) {
  const CacheFormat& f = FormatOf(c.kind);
  if (c.page_size <= 0)
    return absl::InvalidArgumentError(
        absl::StrCat(Name(c.kind), " cache: page_size must be positive (it is ", c.page_size, ")"));
  if (c.page_stride_bytes % 16 != 0)
    return absl::InvalidArgumentError(absl::StrCat(Name(c.kind),
                                                   " cache: page_stride_bytes must be a multiple "
                                                   "of 16 (it is ",
                                                   c.page_stride_bytes, ")"));
  if (c.page_stride_bytes < c.page_size * f.record_bytes())
    return absl::InvalidArgumentError(
        absl::StrCat(Name(c.kind), " cache: page_stride_bytes ", c.page_stride_bytes,
                     " cannot hold ", c.page_size, " records of ", f.record_bytes(), " bytes"));
  if (c.pages < 0 || static_cast<int64_t>(c.bytes.size()) != c.pages * c.page_stride_bytes)
    return absl::InvalidArgumentError(absl::StrCat(Name(c.kind), " cache: ", c.bytes.size(),
                                                   " bytes are not ", c.pages, " pages of ",
                                                   c.page_stride_bytes));
  return absl::OkStatus();
}

TokenOffsets OffsetsOf(const PagedCache& c, int64_t token) {
  const CacheFormat& f = FormatOf(c.kind);
  const int64_t page = token / c.page_size, slot = token % c.page_size;
  const int64_t base = page * c.page_stride_bytes;
  if (c.layout == PageLayout::kTokenRecords) {
    const int64_t record = base + slot * f.record_bytes();
    return {record, record + f.data_bytes};
  }
  return {base + slot * f.data_bytes, base + c.page_size * f.data_bytes + slot * f.scale_bytes};
}

absl::StatusOr<PagedCache> PoisonedCache(CacheKind kind, PageLayout layout, int64_t page_size,
                                         int64_t page_stride_bytes, int64_t tokens) {
  PagedCache c;
  c.kind = kind;
  c.layout = layout;
  c.page_size = page_size;
  c.page_stride_bytes = page_stride_bytes;
  if (page_size <= 0 || tokens < 0)
    return absl::InvalidArgumentError(absl::StrCat(Name(kind), " cache: page_size ", page_size,
                                                   " and tokens ", tokens,
                                                   " must be positive and non-negative"));
  c.pages = (tokens + page_size - 1) / page_size;
  if (page_stride_bytes > 0 && c.pages > (int64_t{1} << 40) / page_stride_bytes)
    return absl::InvalidArgumentError(absl::StrCat(Name(kind), " cache: too large"));
  c.bytes.assign(static_cast<size_t>(c.pages * std::max<int64_t>(page_stride_bytes, 0)), 0xFF);
  if (absl::Status s = CheckGeometry(c); !s.ok()) return s;
  return c;
}

absl::Status WriteToken(PagedCache& c, int64_t token, std::span<const double> latent) {
  if (absl::Status s = CheckGeometry(c); !s.ok()) return s;
  if (latent.size() != static_cast<size_t>(kLatentDim))
    return absl::InvalidArgumentError(
        absl::StrCat("a latent has ", kLatentDim, " values, not ", latent.size()));
  if (token < 0 || token >= c.tokens())
    return absl::OutOfRangeError(
        absl::StrCat(Name(c.kind), " cache: token ", token, " is outside [0, ", c.tokens(), ")"));
  const CacheFormat& f = FormatOf(c.kind);
  const TokenOffsets at = OffsetsOf(c, token);
  uint8_t* data = c.bytes.data() + at.data;
  uint8_t* scales = c.bytes.data() + at.scales;
  for (int g = 0; g < kLatentDim / f.group; ++g) {
    double amax = 0;
    for (int i = g * f.group; i < (g + 1) * f.group; ++i) {
      if (!std::isfinite(latent[i]))
        return absl::InvalidArgumentError(absl::StrCat("latent value ", i, " is not finite"));
      amax = std::max(amax, std::fabs(latent[i]));
    }
    double scale = 1.0;
    if (c.kind == CacheKind::kMain) {
      int k = 0;
      if (amax > 0) {
        k = static_cast<int>(std::ceil(std::log2(amax / kE4M3Max)));
        while (k > -127 && std::ldexp(kE4M3Max, k - 1) >= amax) --k;  // log2's rounding
        while (std::ldexp(kE4M3Max, k) < amax) ++k;
        k = std::max(k, -127);
      }
      if (k > 127)
        return absl::InvalidArgumentError(
            absl::StrCat("latent group ", g, " has |x| up to ", amax, ": beyond 448 * 2^127"));
      scales[g] = static_cast<uint8_t>(k + 127);
      scale = std::ldexp(1.0, k);
      for (int i = g * f.group; i < (g + 1) * f.group; ++i)
        data[i] = static_cast<uint8_t>(Encode(NarrowFormat::kE4M3, latent[i] / scale));
    } else {
      if (amax > kE2M1Max * kE4M3Max)
        return absl::InvalidArgumentError(
            absl::StrCat("latent group ", g, " has |x| up to ", amax, ": beyond 6 * 448"));
      const uint32_t code =
          amax > 0 ? Encode(NarrowFormat::kE4M3, amax / kE2M1Max, Rounding::kTowardPositive)
                   : Encode(NarrowFormat::kE4M3, 1.0);
      scales[g] = static_cast<uint8_t>(code);
      scale = DecodeNarrow(NarrowFormat::kE4M3, code);
      for (int i = g * f.group; i < (g + 1) * f.group; i += 2) {
        const uint32_t lo = Encode(NarrowFormat::kE2M1, latent[i] / scale);
        const uint32_t hi = Encode(NarrowFormat::kE2M1, latent[i + 1] / scale);
        data[i / 2] = static_cast<uint8_t>(lo | (hi << 4));
      }
    }
  }
  return absl::OkStatus();
}

std::vector<double> DecodeToken(const PagedCache& c, int64_t token) {
  const CacheFormat& f = FormatOf(c.kind);
  const TokenOffsets at = OffsetsOf(c, token);
  const uint8_t* data = c.bytes.data() + at.data;
  const uint8_t* scales = c.bytes.data() + at.scales;
  std::vector<double> out(kLatentDim);
  for (int i = 0; i < kLatentDim; ++i) {
    const int g = i / f.group;
    if (c.kind == CacheKind::kMain) {
      out[i] = DecodeNarrow(NarrowFormat::kE4M3, data[i]) *
               DecodeNarrow(NarrowFormat::kUE8M0, scales[g]);
    } else {
      const uint32_t nibble = (i % 2 == 0) ? (data[i / 2] & 0xFu) : (data[i / 2] >> 4);
      out[i] =
          DecodeNarrow(NarrowFormat::kE2M1, nibble) * DecodeNarrow(NarrowFormat::kE4M3, scales[g]);
    }
  }
  return out;
}

}  // namespace cake::workloads::sparse_mla_decode
