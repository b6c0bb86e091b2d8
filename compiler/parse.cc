#include "parse.h"

#include <fstream>
#include <sstream>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "google/protobuf/io/tokenizer.h"
#include "google/protobuf/text_format.h"

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

bool IsValidUtf8(const std::string& s) {
  size_t i = 0;
  while (i < s.size()) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    size_t len = c < 0x80           ? 1
                 : (c >> 5) == 0x6  ? 2
                 : (c >> 4) == 0xe  ? 3
                 : (c >> 3) == 0x1e ? 4
                                    : 0;
    if (len == 0 || i + len > s.size()) return false;
    for (size_t j = 1; j < len; ++j)
      if ((static_cast<unsigned char>(s[i + j]) & 0xc0) != 0x80) return false;
    i += len;
  }
  return true;
}

// Records where each message was written and collects strings that are not valid UTF-8
// (text-format escapes can produce any bytes; the schema's strings are text).
void RecordSpans(const pb::Message& msg, const pb::TextFormat::ParseInfoTree* tree,
                 const std::string& prefix, const std::string& file, SourceMap* map,
                 std::vector<std::string>* errors) {
  if (tree == nullptr) return;
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
          errors->push_back(absl::StrCat(file, ":", loc.line + 1, ":", loc.column + 1, ": field \"",
                                         field->name(), "\" is not valid UTF-8"));
      }
      if (loc.line >= 0) {
        report::SourceSpan span;
        span.set_file(file);
        span.set_line(loc.line + 1);
        span.set_column(loc.column + 1);
        map->Record(path, span);
      }
      if (field->cpp_type() == pb::FieldDescriptor::CPPTYPE_MESSAGE) {
        const pb::Message& child = field->is_repeated() ? refl->GetRepeatedMessage(msg, field, i)
                                                        : refl->GetMessage(msg, field);
        RecordSpans(child, tree->GetTreeForNested(field, index), path, file, map, errors);
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
  ParsedModule parsed;
  parsed.file = std::string(file);
  CollectingErrors errors(parsed.file);
  pb::TextFormat::Parser parser;
  pb::TextFormat::ParseInfoTree tree;
  parser.RecordErrorsTo(&errors);
  parser.WriteLocationsTo(&tree);
  if (!parser.ParseFromString(std::string(text), &parsed.module)) {
    if (errors.errors().empty())
      return absl::InvalidArgumentError(
          absl::StrCat(std::string(file), ":1:1: malformed schedule text"));
    return absl::InvalidArgumentError(absl::StrJoin(errors.errors(), "\n"));
  }
  std::vector<std::string> utf8_errors;
  RecordSpans(parsed.module, &tree, "", parsed.file, &parsed.source_map, &utf8_errors);
  if (!utf8_errors.empty()) return absl::InvalidArgumentError(absl::StrJoin(utf8_errors, "\n"));
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
