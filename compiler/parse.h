// Text-format schedule parsing with file:line:col errors and a source map from IR paths to spans.
// Pure functions; thread-compatible.
#pragma once

#include <map>
#include <string>
#include "absl/strings/string_view.h"

#include "absl/status/statusor.h"
#include "cake/ir.pb.h"
#include "cake/report.pb.h"

namespace cake::compiler {

// Maps IR paths ("kernels[0].ops[2].body[1]") to where they were written.
class SourceMap {
 public:
  void Record(std::string path, report::SourceSpan span) { spans_[std::move(path)] = span; }
  // The span of `path`, or of its nearest recorded ancestor; empty span if none.
  report::SourceSpan Lookup(absl::string_view path) const;
  const std::map<std::string, report::SourceSpan>& spans() const { return spans_; }

 private:
  std::map<std::string, report::SourceSpan> spans_;
};

struct ParsedModule {
  ir::Module module;
  std::string file;
  SourceMap source_map;
};

// Parses protobuf text format. On malformed input returns InvalidArgument whose message is
// "FILE:LINE:COL: what" (1-based), one line per error.
absl::StatusOr<ParsedModule> ParseModuleText(absl::string_view text, absl::string_view file);

// Reads and parses a file. NotFound if it cannot be read.
absl::StatusOr<ParsedModule> ParseModuleFile(const std::string& path);

}  // namespace cake::compiler
