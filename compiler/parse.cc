#include "parse.h"

#include <fstream>
#include <sstream>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "google/protobuf/io/tokenizer.h"
#include "google/protobuf/stubs/common.h"
#include "google/protobuf/text_format.h"
#include "schedule_limits.h"

namespace cake::compiler {
namespace {

namespace pb = google::protobuf;

class CollectingErrors : public pb::io::ErrorCollector {
 public:
  explicit CollectingErrors(std::string file) : file_(std::move(file)) {}
  void AddError(int line, pb::io::ColumnNumber column, const std::string& message) override {
    // The tokenizer counts from zero; people count from one.
    errors_.push_back(absl::StrCat(file_, ":", line + 1, ":", column + 1, ": ", message));
  }
  void AddWarning(int line, pb::io::ColumnNumber column, const std::string& message) override {
    AddError(line, column, message);
  }
  const std::vector<std::string>& errors() const { return errors_; }

 private:
  std::string file_;
  std::vector<std::string> errors_;
};

// Strict UTF-8: no overlong forms, no surrogates, nothing above U+10FFFF.
bool IsValidUtf8(const std::string& s) {
  return pb::internal::IsStructurallyValidUTF8(s.data(), static_cast<int>(s.size()));
}

struct SpanWalk {
  std::string file;
  SourceMap* map = nullptr;
  std::vector<std::string> errors;
  int operations = 0;
};

// Records where each message was written, collects strings that are not valid UTF-8
// (text-format escapes can produce any bytes; the schema's strings are text) and counts
// operations against kMaxOperations. Recursion is bounded by the parser's nesting limit.
void RecordSpans(const pb::Message& msg, const pb::TextFormat::ParseInfoTree* tree,
                 const std::string& prefix, SpanWalk* walk) {
  if (tree == nullptr || !walk->errors.empty()) return;
  const std::string& file = walk->file;
  const pb::Reflection* refl = msg.GetReflection();
  std::vector<const pb::FieldDescriptor*> fields;
  refl->ListFields(msg, &fields);
  for (const pb::FieldDescriptor* field : fields) {
    const int count = field->is_repeated() ? refl->FieldSize(msg, field) : 1;
    for (int i = 0; i < count; ++i) {
      const int index = field->is_repeated() ? i : -1;
      std::string path = prefix.empty() ? field->name() : absl::StrCat(prefix, ".", field->name());
      if (field->is_repeated()) absl::StrAppend(&path, "[", i, "]");
      pb::TextFormat::ParseLocation loc = tree->GetLocation(field, index);
      if (field->cpp_type() == pb::FieldDescriptor::CPPTYPE_STRING) {
        const std::string value = field->is_repeated() ? refl->GetRepeatedString(msg, field, i)
                                                       : refl->GetString(msg, field);
        if (!IsValidUtf8(value))
          walk->errors.push_back(absl::StrCat(file, ":", loc.line + 1, ":", loc.column + 1,
                                              ": field \"", field->name(),
                                              "\" is not valid UTF-8"));
      }
      if (loc.line >= 0) {
        report::SourceSpan span;
        span.set_file(file);
        span.set_line(loc.line + 1);
        span.set_column(loc.column + 1);
        walk->map->Record(path, span);
      }
      if (field->cpp_type() == pb::FieldDescriptor::CPPTYPE_MESSAGE) {
        const pb::Message& child = field->is_repeated() ? refl->GetRepeatedMessage(msg, field, i)
                                                        : refl->GetMessage(msg, field);
        if (child.GetDescriptor() == ir::Operation::descriptor() &&
            ++walk->operations > kMaxOperations) {
          walk->errors.push_back(absl::StrCat(
              file, ":", loc.line + 1, ":", loc.column + 1, ": more than ", kMaxOperations,
              " operations in one schedule (limit ", kMaxOperations, ")"));
          return;
        }
        RecordSpans(child, tree->GetTreeForNested(field, index), path, walk);
        if (!walk->errors.empty()) return;
      }
    }
  }
}

}  // namespace

report::SourceSpan SourceMap::Lookup(absl::string_view path) const {
  std::string p(path);
  while (!p.empty()) {
    auto it = spans_.find(p);
    if (it != spans_.end()) return it->second;
    const size_t cut = p.find_last_of(".[");
    if (cut == std::string::npos) break;
    p.resize(cut);
  }
  return {};
}

absl::StatusOr<ParsedModule> ParseModuleText(absl::string_view text, absl::string_view file) {
  if (text.size() > kMaxScheduleTextBytes)
    return absl::InvalidArgumentError(absl::StrCat(std::string(file), ":1:1: schedule text is ",
                                                   text.size(), " bytes (limit ",
                                                   kMaxScheduleTextBytes, ")"));
  ParsedModule parsed;
  parsed.file = std::string(file);
  CollectingErrors errors(parsed.file);
  pb::TextFormat::Parser parser;
  pb::TextFormat::ParseInfoTree tree;
  parser.RecordErrorsTo(&errors);
  parser.WriteLocationsTo(&tree);
  // Without a limit a few thousand nested bodies overflow the stack (of a gRPC thread, too).
  parser.SetRecursionLimit(kMaxTextNesting);
  if (!parser.ParseFromString(std::string(text), &parsed.module)) {
    if (errors.errors().empty())
      return absl::InvalidArgumentError(
          absl::StrCat(std::string(file), ":1:1: malformed schedule text"));
    return absl::InvalidArgumentError(absl::StrJoin(errors.errors(), "\n"));
  }
  SpanWalk walk;
  walk.file = parsed.file;
  walk.map = &parsed.source_map;
  RecordSpans(parsed.module, &tree, "", &walk);
  if (!walk.errors.empty()) return absl::InvalidArgumentError(absl::StrJoin(walk.errors, "\n"));
  return parsed;
}

absl::StatusOr<ParsedModule> ParseModuleFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(absl::StrCat(path, ": cannot open schedule file"));
  std::ostringstream buf;
  buf << in.rdbuf();
  return ParseModuleText(buf.str(), path);
}

}  // namespace cake::compiler
