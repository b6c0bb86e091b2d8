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

void RecordSpans(const pb::Message& msg, const pb::TextFormat::ParseInfoTree* tree,
                 const std::string& prefix, const std::string& file, SourceMap* map) {
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
        RecordSpans(child, tree->GetTreeForNested(field, index), path, file, map);
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
      return absl::InvalidArgumentError(absl::StrCat(std::string(file), ":1:1: malformed schedule text"));
    return absl::InvalidArgumentError(absl::StrJoin(errors.errors(), "\n"));
  }
  RecordSpans(parsed.module, &tree, "", parsed.file, &parsed.source_map);
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
