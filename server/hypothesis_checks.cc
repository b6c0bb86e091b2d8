#include "hypothesis_checks.h"

#include <set>
#include <string>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "base/text.h"
#include "error_detail.h"

namespace cake::server {
namespace {

// Words that carry no claim by themselves: a text made only of these (and stop words) says
// nothing a measurement could refute.
const std::set<std::string>& VagueWords() {
  static const auto* words = new std::set<std::string>{
      "a",           "an",        "the",        "it",          "this",         "that",
      "to",          "of",        "and",        "or",          "for",          "in",
      "on",          "be",        "is",         "will",        "should",       "would",
      "could",       "may",       "might",      "make",        "makes",        "making",
      "more",        "less",      "better",     "faster",      "slower",       "good",
      "improve",     "improves",  "improved",   "improvement", "optimise",     "optimize",
      "optimised",   "optimized", "optimising", "optimizing",  "optimisation", "optimization",
      "performance", "speed",     "speedup",    "efficient",   "efficiency",   "memory",
      "compute",     "things",    "stuff",      "kernel",      "code",         "somehow",
      "maybe",       "probably",  "try",        "tweak",       "tune",         "tuning",
      "if",          "not",       "no",         "works",       "work",         "fails",
      "fail"};
  return *words;
}

std::vector<std::string> Words(const std::string& text) {
  std::vector<std::string> out;
  for (absl::string_view w :
       absl::StrSplit(text, absl::ByAnyChar(" \t\n,.;:!?()"), absl::SkipEmpty()))
    out.push_back(absl::AsciiStrToLower(w));
  return out;
}

absl::Status CheckText(const char* field, const std::string& text) {
  const std::vector<std::string> words = Words(text);
  if (words.empty())
    return InvalidField(absl::StrCat("hypothesis.", field),
                        absl::StrCat("hypothesis.", field, " is missing"));
  int specific = 0;
  for (const std::string& w : words) specific += VagueWords().count(w) == 0;
  if (static_cast<int>(words.size()) < kMinHypothesisWords || specific == 0)
    return InvalidField(
        absl::StrCat("hypothesis.", field),
        absl::StrCat("hypothesis.", field, " '", base::Utf8Prefix(text, 80),
                     "' is too vague: say which quantity changes and by how much, or which result "
                     "refutes it "
                     "(at least ",
                     kMinHypothesisWords,
                     " words, not only words like 'optimise', 'memory', 'faster')"));
  return absl::OkStatus();
}

}  // namespace

absl::Status CheckHypothesis(const evidence::Hypothesis& h) {
  if (h.parent().empty())
    return InvalidField(
        "hypothesis.parent",
        "hypothesis.parent is missing: name the candidate this proposal changes (the baseline "
        "or the incumbent, at first)");
  if (h.changed_decisions().empty())
    return InvalidField(
        "hypothesis.changed_decisions",
        "hypothesis.changed_decisions is empty: list the schedule decisions this proposal "
        "changes (e.g. \"tile\", \"pipeline stages\")");
  for (int i = 0; i < h.changed_decisions_size(); ++i)
    if (absl::StripAsciiWhitespace(h.changed_decisions(i)).empty())
      return InvalidField(absl::StrCat("hypothesis.changed_decisions[", i, "]"),
                          absl::StrCat("hypothesis.changed_decisions[", i, "] is empty"));
  if (absl::Status s = CheckText("expected_effect", h.expected_effect()); !s.ok()) return s;
  return CheckText("falsification", h.falsification());
}

absl::Status CheckBranchName(const std::string& name) {
  const auto allowed = [](char ch) {
    return absl::ascii_isalnum(static_cast<unsigned char>(ch)) || ch == '.' || ch == '_' ||
           ch == '/' || ch == '-';
  };
  bool ok = !name.empty() && name.size() <= kMaxBranchNameBytes &&
            absl::ascii_isalnum(static_cast<unsigned char>(name[0]));
  for (char ch : name) ok = ok && allowed(ch);
  if (ok) return absl::OkStatus();
  return InvalidField(
      "branch",
      absl::StrCat("branch '", base::Utf8Prefix(name, 80), "' is not a branch name: 1-",
                   kMaxBranchNameBytes,
                   " bytes of letters, digits and '. _ / -', starting with a letter or digit"),
      static_cast<int64_t>(kMaxBranchNameBytes));
}

absl::Status CheckParentBranch(const std::string& parent, const std::string& parent_branch,
                               const std::string& branch, int64_t candidates_on_branch,
                               bool parent_is_shared_root) {
  if (parent_branch == branch || parent_is_shared_root || candidates_on_branch == 0)
    return absl::OkStatus();
  return InvalidField(
      "hypothesis.parent",
      absl::StrCat(
          "hypothesis.parent '", parent, "' is on branch '", parent_branch, "', not on '", branch,
          "': a branch continues from its own candidates, the contract's incumbent or its baseline "
          "(propose on a new branch to fork from another line)"));
}

}  // namespace cake::server
