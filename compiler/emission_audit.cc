#include "emission_audit.h"

#include <algorithm>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "compiler.h"
#include "schedule_names.h"

namespace cake::compiler {
namespace {

// The only preprocessor lines a lowering writes.
constexpr absl::string_view kFixedDirectives[] = {
    "#include <cuda_bf16.h>",
    "#include <stdint.h>",
    "#pragma unroll",
};

bool IsIdentStart(char c) { return absl::ascii_isalpha(static_cast<unsigned char>(c)) || c == '_'; }
bool IsIdentChar(char c) { return absl::ascii_isalnum(static_cast<unsigned char>(c)) || c == '_'; }

void CheckLines(const std::string& text, std::vector<std::string>* problems) {
  int line_no = 0;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    ++line_no;
    if (std::any_of(line.begin(), line.end(), [](char c) {
          return c != '\t' &&
                 (static_cast<unsigned char>(c) < 0x20 || static_cast<unsigned char>(c) > 0x7e);
        }))
      problems->push_back(
          absl::StrCat("line ", line_no, " holds a byte that is not printable ASCII"));
    if (!line.empty() && line.back() == '\\')
      problems->push_back(
          absl::StrCat("line ", line_no, " continues onto the next ('\\' at its end)"));
    const absl::string_view stripped = absl::StripLeadingAsciiWhitespace(line);
    if (stripped.empty() || stripped.front() != '#') continue;
    const absl::string_view directive = absl::StripTrailingAsciiWhitespace(stripped);
    if (std::find(std::begin(kFixedDirectives), std::end(kFixedDirectives), directive) ==
        std::end(kFixedDirectives))
      problems->push_back(absl::StrCat("line ", line_no,
                                       " is a preprocessor line no lowering writes: ",
                                       absl::CHexEscape(directive.substr(0, 80))));
  }
}

}  // namespace

std::vector<SourceToken> TokenizeSource(const std::string& text,
                                        std::vector<std::string>* problems) {
  std::vector<SourceToken> out;
  int line = 1;
  size_t i = 0;
  const size_t n = text.size();
  while (i < n) {
    const char c = text[i];
    if (c == '\n') {
      ++line;
      ++i;
    } else if (c == ' ' || c == '\t' || static_cast<unsigned char>(c) < 0x20 ||
               static_cast<unsigned char>(c) > 0x7e) {  // the line check reports the latter
      ++i;
    } else if (c == '/' && i + 1 < n && text[i + 1] == '/') {
      while (i < n && text[i] != '\n') ++i;
    } else if (c == '/' && i + 1 < n && text[i + 1] == '*') {
      const size_t end = text.find("*/", i + 2);
      if (end == std::string::npos) {
        problems->push_back(absl::StrCat("line ", line, " opens a comment that never closes"));
        return out;
      }
      line += static_cast<int>(std::count(text.begin() + i, text.begin() + end, '\n'));
      i = end + 2;
    } else if (c == '"' || c == '\'') {
      size_t j = i + 1;
      while (j < n && text[j] != c && text[j] != '\n') j += text[j] == '\\' ? 2 : 1;
      if (j >= n || text[j] != c) {
        problems->push_back(absl::StrCat("line ", line, " opens a literal that never closes"));
        return out;
      }
      out.push_back({SourceToken::kString, text.substr(i, j + 1 - i), line});
      i = j + 1;
    } else if (IsIdentStart(c)) {
      size_t j = i;
      while (j < n && IsIdentChar(text[j])) ++j;
      out.push_back({SourceToken::kIdentifier, text.substr(i, j - i), line});
      i = j;
    } else if (absl::ascii_isdigit(static_cast<unsigned char>(c)) ||
               (c == '.' && i + 1 < n &&
                absl::ascii_isdigit(static_cast<unsigned char>(text[i + 1])))) {
      // A preprocessing number: digits, letters, '.', '_' and a sign after an exponent.
      size_t j = i + 1;
      while (j < n &&
             (IsIdentChar(text[j]) || text[j] == '.' ||
              ((text[j] == '+' || text[j] == '-') && (text[j - 1] == 'e' || text[j - 1] == 'E' ||
                                                      text[j - 1] == 'p' || text[j - 1] == 'P'))))
        ++j;
      out.push_back({SourceToken::kNumber, text.substr(i, j - i), line});
      i = j;
    } else {
      out.push_back({SourceToken::kPunctuation, std::string(1, c), line});
      ++i;
    }
  }
  return out;
}

std::vector<std::string> AuditEmittedSource(const ParsedModule& parsed, const TargetInfo& target,
                                            const AnalyzeOptions& options,
                                            const report::AnalysisReport& analysis,
                                            const LoweredKernel& lowered) {
  std::vector<std::string> problems;
  if (lowered.kernel_symbol.empty() || !IsIdentStart(lowered.kernel_symbol[0]) ||
      !std::all_of(lowered.kernel_symbol.begin(), lowered.kernel_symbol.end(), IsIdentChar))
    problems.push_back(absl::StrCat("the kernel symbol '",
                                    absl::CHexEscape(lowered.kernel_symbol.substr(0, 80)),
                                    "' is not an identifier"));
  CheckLines(lowered.text, &problems);
  const std::vector<SourceToken> tokens = TokenizeSource(lowered.text, &problems);

  if (lowered.dynamic_shared_bytes != analysis.resources().shared_bytes())
    problems.push_back(absl::StrCat("the launch's dynamic shared memory is ",
                                    lowered.dynamic_shared_bytes, " B but analysis planned ",
                                    analysis.resources().shared_bytes(), " B"));

  // The same schedule under fresh names must lower to the same tokens, but for the symbol.
  ParsedModule renamed;
  renamed.module = WithFreshNames(parsed.module);
  renamed.file = parsed.file;
  const EmitResult twin = Emit(renamed, target, options);
  if (!twin.source.has_value()) {
    problems.push_back(
        "the schedule under fresh names does not lower: its verdict or lowering depends on the "
        "bytes of a name");
    return problems;
  }
  std::vector<std::string> twin_problems;
  const std::vector<SourceToken> twin_tokens = TokenizeSource(twin.source->text, &twin_problems);
  const size_t common = std::min(tokens.size(), twin_tokens.size());
  for (size_t i = 0; i < common; ++i) {
    const SourceToken& a = tokens[i];
    const SourceToken& b = twin_tokens[i];
    if (a.kind == b.kind && a.text == b.text) continue;
    if (a.kind == SourceToken::kIdentifier && b.kind == SourceToken::kIdentifier &&
        a.text == lowered.kernel_symbol && b.text == twin.source->kernel_symbol)
      continue;
    problems.push_back(absl::StrCat("line ", a.line, ": '", absl::CHexEscape(a.text.substr(0, 80)),
                                    "' depends on the schedule's names (under fresh names: '",
                                    absl::CHexEscape(b.text.substr(0, 80)), "')"));
    return problems;  // the streams are out of step from here on
  }
  if (tokens.size() != twin_tokens.size())
    problems.push_back(absl::StrCat("the source has ", tokens.size(), " tokens, ",
                                    twin_tokens.size(), " under fresh names"));
  return problems;
}

}  // namespace cake::compiler
