// Line-by-line writer of generated CUDA source that remembers which operation each line range
// came from (the op-id -> line-range source map of a lowering receipt). Not thread-safe.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "cake/report.pb.h"

namespace cake::compiler {

class SourceWriter {
 public:
  void Line(absl::string_view s);
  // Opens and closes the range of an operation; a `// op:ID` comment marks where it starts.
  void Begin(const std::string& op_id);
  void End(const std::string& op_id);
  std::string Text() const;
  std::vector<report::SourceRange> Ranges() const;  // sorted by first line, then op id

 private:
  std::vector<std::string> lines_;
  std::map<std::string, report::SourceRange> open_;
  std::vector<report::SourceRange> done_;
};

}  // namespace cake::compiler
