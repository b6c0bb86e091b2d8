// Text leaving the daemon is valid UTF-8 however it was cut or wherever it came from.
#include "base/text.h"

#include <gtest/gtest.h>

#include <random>

namespace cake {
namespace {

// An independent check of well-formedness (RFC 3629), byte by byte.
bool WellFormed(const std::string& s) {
  size_t i = 0;
  while (i < s.size()) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    size_t n = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xE ? 3 : (c >> 3) == 0x1E ? 4 : 0;
    if (n == 0 || i + n > s.size()) return false;
    uint32_t cp = n == 1 ? c : n == 2 ? (c & 0x1F) : n == 3 ? (c & 0x0F) : (c & 0x07);
    for (size_t k = 1; k < n; ++k) {
      const unsigned char b = static_cast<unsigned char>(s[i + k]);
      if ((b & 0xC0) != 0x80) return false;
      cp = (cp << 6) | (b & 0x3F);
    }
    const uint32_t min[] = {0, 0, 0x80, 0x800, 0x10000};
    if (cp < min[n] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return false;
    i += n;
  }
  return true;
}

TEST(Utf8, CutsFallOnCharacterBoundaries) {
  const std::string s = "ab\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80z";  // a b é € 😀 z
  for (size_t n = 0; n <= s.size() + 1; ++n) {
    const std::string p = base::Utf8Prefix(s, n);
    EXPECT_LE(p.size(), n);
    EXPECT_TRUE(WellFormed(p)) << n;
    EXPECT_EQ(s.compare(0, p.size(), p), 0);
    const std::string t = base::Utf8Suffix(s, n);
    EXPECT_LE(t.size(), n);
    EXPECT_TRUE(WellFormed(t)) << n;
    EXPECT_EQ(s.compare(s.size() - t.size(), t.size(), t), 0);
  }
  EXPECT_EQ(base::Utf8Prefix(s, 3), "ab");
  EXPECT_EQ(base::ClipUtf8(s, 3), "ab...");
  EXPECT_EQ(base::ClipUtf8("abc", 3), "abc");
}

TEST(Utf8, AnyBytesBecomeWellFormedTextAndValidTextIsKept) {
  EXPECT_EQ(base::ValidUtf8("plain \xc3\xa9"), "plain \xc3\xa9");
  EXPECT_EQ(base::ValidUtf8("\xff"), "\xef\xbf\xbd");
  EXPECT_EQ(base::ValidUtf8("\xc0\xaf"), "\xef\xbf\xbd\xef\xbf\xbd") << "overlong";
  EXPECT_EQ(base::ValidUtf8("\xed\xa0\x80"), "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd") << "surrogate";
  std::mt19937_64 rng(std::random_device{}());
  for (int i = 0; i < 2000; ++i) {
    std::string bytes(rng() % 40, '\0');
    for (char& c : bytes) c = static_cast<char>(rng() & 0xff);
    const std::string v = base::ValidUtf8(bytes);
    EXPECT_TRUE(WellFormed(v));
    if (WellFormed(bytes)) {
      EXPECT_EQ(v, bytes);
    }
    EXPECT_TRUE(WellFormed(base::Utf8Prefix(bytes, rng() % 40)));
    EXPECT_TRUE(WellFormed(base::Utf8Suffix(bytes, rng() % 40)));
  }
}

}  // namespace
}  // namespace cake
