#include "base/text.h"

namespace cake::base {
namespace {

constexpr absl::string_view kReplacement = "\xEF\xBF\xBD";  // U+FFFD

// Length of the well-formed UTF-8 sequence at the start of `s` (RFC 3629: no overlongs, no
// surrogates, nothing past U+10FFFF), or 0 when it is not one.
size_t SequenceLength(absl::string_view s) {
  const auto b = [&](size_t i) { return static_cast<unsigned char>(s[i]); };
  const unsigned char c = b(0);
  if (c < 0x80) return 1;
  size_t n = 0;
  unsigned char lo = 0x80, hi = 0xBF;  // allowed range of the second byte
  if (c >= 0xC2 && c <= 0xDF) {
    n = 2;
  } else if (c >= 0xE0 && c <= 0xEF) {
    n = 3;
    if (c == 0xE0) lo = 0xA0;
    if (c == 0xED) hi = 0x9F;
  } else if (c >= 0xF0 && c <= 0xF4) {
    n = 4;
    if (c == 0xF0) lo = 0x90;
    if (c == 0xF4) hi = 0x8F;
  } else {
    return 0;
  }
  if (s.size() < n || b(1) < lo || b(1) > hi) return 0;
  for (size_t i = 2; i < n; ++i)
    if (b(i) < 0x80 || b(i) > 0xBF) return 0;
  return n;
}

}  // namespace

std::string ValidUtf8(absl::string_view s) {
  std::string out;
  out.reserve(s.size());
  while (!s.empty()) {
    const size_t n = SequenceLength(s);
    if (n == 0) {
      out.append(kReplacement.data(), kReplacement.size());
      s.remove_prefix(1);
    } else {
      out.append(s.data(), n);
      s.remove_prefix(n);
    }
  }
  return out;
}

std::string Utf8Prefix(absl::string_view s, size_t max_bytes) {
  std::string valid = ValidUtf8(s);
  if (valid.size() <= max_bytes) return valid;
  size_t cut = max_bytes;
  while (cut > 0 && (static_cast<unsigned char>(valid[cut]) & 0xC0) == 0x80) --cut;
  valid.resize(cut);
  return valid;
}

std::string Utf8Suffix(absl::string_view s, size_t max_bytes) {
  const std::string valid = ValidUtf8(s);
  if (valid.size() <= max_bytes) return valid;
  size_t from = valid.size() - max_bytes;
  while (from < valid.size() && (static_cast<unsigned char>(valid[from]) & 0xC0) == 0x80) ++from;
  return valid.substr(from);
}

std::string ClipUtf8(absl::string_view s, size_t max_bytes) {
  std::string out = Utf8Prefix(s, max_bytes);
  if (out.size() < ValidUtf8(s).size()) out += "...";
  return out;
}

}  // namespace cake::base
