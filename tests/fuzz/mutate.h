// Structure-aware mutations of schedule text for fuzzing the parser, the analysis passes and
// emission: numbers replaced by boundary values, enum names swapped, lines deleted, duplicated
// or truncated, bytes flipped.
#pragma once

#include <random>
#include <regex>
#include <string>
#include <vector>

namespace cake::fuzz {

inline std::string Mutate(const std::string& text, std::mt19937_64& rng) {
  static const char* kNumbers[] = {
      "0", "-1", "1", "2", "3", "7", "8", "15", "17", "31", "33", "64", "255", "256", "1023",
      "1024", "4096", "65536", "2147483647", "-2147483648", "9223372036854775807",
      // Size bounds and the products that once wrapped (2^31, 2^40, 2^60, the fuzz finding).
      "2147483648", "1099511627776", "1152921504606846976", "4444444444444445120"};
  static const char* kWords[] = {
      "SM_90", "SM_120A", "BF16", "F16", "F32", "E4M3", "E2M1", "UE8M0", "COL_MAJOR", "ROW_MAJOR",
      "SWIZZLE_128B", "SWIZZLE_64B", "PACKED_FP4", "TMA", "CP_ASYNC", "SYNC_STORE", "MASK_NONE",
      "MASK_ZERO_FILL", "NON_UNIFORM", "LDMATRIX_X4_TRANS", "LDMATRIX_X2", "LDMATRIX_M16N16_B8",
      "WARPGROUP_ASYNC", "M16N8K32", "M8N8K4", "OPERAND_B", "READ_ONLY", "ELECTED_LANE", "TILE_N_K",
      "\"\"", "\"A\"", "\"acc\"", "\"ab\"", "\"compute\"",
      // Names that must stay data: injections, keywords, reserved
      // names, and the lowering's own identifiers.
      "\"A/*x*/\"", "\"x\\n#include \\\"/etc/hostname\\\"\"", "\"int\"", "\"__x\"", "\"tid\"",
      "\"kTileK\"", "\"threadIdx\""};
  std::string s = text;
  std::uniform_int_distribution<int> kind(0, 5);
  std::vector<std::string> lines;
  for (size_t start = 0; start < s.size();) {
    size_t end = s.find('\n', start);
    if (end == std::string::npos) end = s.size();
    lines.push_back(s.substr(start, end - start));
    start = end + 1;
  }
  if (lines.empty()) return s;
  auto pick = [&](size_t n) { return std::uniform_int_distribution<size_t>(0, n - 1)(rng); };
  auto join = [&] {
    std::string out;
    for (const auto& l : lines) out += l + "\n";
    return out;
  };
  switch (kind(rng)) {
    case 0: {  // a number -> boundary value
      static const std::regex kNum(R"(-?\b\d+\b)");
      std::vector<std::pair<size_t, size_t>> spans;
      for (auto it = std::sregex_iterator(s.begin(), s.end(), kNum); it != std::sregex_iterator();
           ++it)
        spans.emplace_back(it->position(), it->length());
      if (spans.empty()) return s;
      auto [pos, len] = spans[pick(spans.size())];
      return s.replace(pos, len, kNumbers[pick(std::size(kNumbers))]);
    }
    case 1: {  // an enum name or string -> another
      static const std::regex kTok(R"(\b[A-Z][A-Z0-9_]{2,}\b|"[^"\n]*")");
      std::vector<std::pair<size_t, size_t>> spans;
      for (auto it = std::sregex_iterator(s.begin(), s.end(), kTok); it != std::sregex_iterator();
           ++it)
        spans.emplace_back(it->position(), it->length());
      if (spans.empty()) return s;
      auto [pos, len] = spans[pick(spans.size())];
      return s.replace(pos, len, kWords[pick(std::size(kWords))]);
    }
    case 2:  // delete a line
      lines.erase(lines.begin() + static_cast<long>(pick(lines.size())));
      return join();
    case 3: {  // duplicate a line
      const size_t i = pick(lines.size());
      lines.insert(lines.begin() + static_cast<long>(i), lines[i]);
      return join();
    }
    case 4:  // truncate
      return s.substr(0, pick(s.size() + 1));
    default: {  // flip a byte
      if (s.empty()) return s;
      s[pick(s.size())] ^= static_cast<char>(1 << pick(7));
      return s;
    }
  }
}

}  // namespace cake::fuzz
