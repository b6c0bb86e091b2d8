#include "source_writer.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace cake::compiler {

void SourceWriter::Line(absl::string_view s) {
  lines_.emplace_back(s);
  for (auto& [id, range] : open_) range.set_last_line(static_cast<int>(lines_.size()));
}

void SourceWriter::Begin(const std::string& op_id) {
  report::SourceRange r;
  r.set_op_id(op_id);
  r.set_first_line(static_cast<int>(lines_.size()) + 1);
  r.set_last_line(r.first_line());
  open_[op_id] = r;
  Line(absl::StrCat("// op:", op_id));
}

void SourceWriter::End(const std::string& op_id) {
  auto it = open_.find(op_id);
  if (it == open_.end()) return;
  done_.push_back(it->second);
  open_.erase(it);
}

std::string SourceWriter::Text() const { return absl::StrJoin(lines_, "\n") + "\n"; }

std::vector<report::SourceRange> SourceWriter::Ranges() const {
  std::vector<report::SourceRange> r = done_;
  std::sort(r.begin(), r.end(), [](const auto& a, const auto& b) {
    return a.first_line() != b.first_line() ? a.first_line() < b.first_line()
                                            : a.op_id() < b.op_id();
  });
  return r;
}

}  // namespace cake::compiler
