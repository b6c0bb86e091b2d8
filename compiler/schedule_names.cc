#include "schedule_names.h"

#include <algorithm>
#include <iterator>
#include <map>
#include <set>
#include <type_traits>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace cake::compiler {
namespace {

namespace pb = google::protobuf;

// C++20 keywords, alternative tokens and identifiers with special meaning (final, override,
// import, module), and C's restrict. CUDA's own qualifiers (__global__, ...) are reserved by their
// double underscore. Sorted, for binary search.
constexpr absl::string_view kKeywords[] = {
    "alignas",
    "alignof",
    "and",
    "and_eq",
    "asm",
    "auto",
    "bitand",
    "bitor",
    "bool",
    "break",
    "case",
    "catch",
    "char",
    "char16_t",
    "char32_t",
    "char8_t",
    "class",
    "co_await",
    "co_return",
    "co_yield",
    "compl",
    "concept",
    "const",
    "const_cast",
    "consteval",
    "constexpr",
    "constinit",
    "continue",
    "decltype",
    "default",
    "delete",
    "do",
    "double",
    "dynamic_cast",
    "else",
    "enum",
    "explicit",
    "export",
    "extern",
    "false",
    "final",
    "float",
    "for",
    "friend",
    "goto",
    "if",
    "import",
    "inline",
    "int",
    "long",
    "module",
    "mutable",
    "namespace",
    "new",
    "noexcept",
    "not",
    "not_eq",
    "nullptr",
    "operator",
    "or",
    "or_eq",
    "override",
    "private",
    "protected",
    "public",
    "register",
    "reinterpret_cast",
    "requires",
    "restrict",
    "return",
    "short",
    "signed",
    "sizeof",
    "static",
    "static_assert",
    "static_cast",
    "struct",
    "switch",
    "template",
    "this",
    "thread_local",
    "throw",
    "true",
    "try",
    "typedef",
    "typeid",
    "typename",
    "union",
    "unsigned",
    "using",
    "virtual",
    "void",
    "volatile",
    "wchar_t",
    "while",
    "xor",
    "xor_eq",
};

bool IsKeyword(absl::string_view s) {
  return std::binary_search(std::begin(kKeywords), std::end(kKeywords), s);
}

std::string Shown(const std::string& value) {
  constexpr size_t kShown = 48;
  const std::string escaped = absl::CHexEscape(value.substr(0, kShown));
  return value.size() > kShown ? absl::StrCat(escaped, "...") : escaped;
}

// Calls fn(path, field, value) for every string of `msg` that is not free text, in field order;
// with a mutable message fn may change `value` in place.
template <typename Msg, typename Fn>
void ForEachName(Msg& msg, const std::string& prefix, const Fn& fn) {
  const pb::Reflection* refl = msg.GetReflection();
  std::vector<const pb::FieldDescriptor*> fields;
  refl->ListFields(msg, &fields);
  for (const pb::FieldDescriptor* field : fields) {
    const int count = field->is_repeated() ? refl->FieldSize(msg, field) : 1;
    for (int i = 0; i < count; ++i) {
      std::string path = prefix.empty() ? field->name() : absl::StrCat(prefix, ".", field->name());
      if (field->is_repeated()) absl::StrAppend(&path, "[", i, "]");
      if (field->cpp_type() == pb::FieldDescriptor::CPPTYPE_STRING) {
        if (IsFreeTextField(field)) continue;
        std::string value = field->is_repeated() ? refl->GetRepeatedString(msg, field, i)
                                                 : refl->GetString(msg, field);
        fn(path, field, value);
        if constexpr (!std::is_const_v<Msg>) {
          if (field->is_repeated())
            refl->SetRepeatedString(&msg, field, i, std::move(value));
          else
            refl->SetString(&msg, field, std::move(value));
        }
      } else if (field->cpp_type() == pb::FieldDescriptor::CPPTYPE_MESSAGE) {
        if constexpr (std::is_const_v<Msg>)
          ForEachName(field->is_repeated() ? refl->GetRepeatedMessage(msg, field, i)
                                           : refl->GetMessage(msg, field),
                      path, fn);
        else
          ForEachName(field->is_repeated() ? *refl->MutableRepeatedMessage(&msg, field, i)
                                           : *refl->MutableMessage(&msg, field),
                      path, fn);
      }
    }
  }
}

}  // namespace

std::optional<std::string> NameRuleBroken(absl::string_view name) {
  if (name.empty()) return "is empty";
  if (name.size() > static_cast<size_t>(kMaxNameBytes))
    return absl::StrCat("is ", name.size(), " bytes long (a name has at most ", kMaxNameBytes, ")");
  if (absl::ascii_isdigit(static_cast<unsigned char>(name[0])))
    return "starts with a digit (a name is [A-Za-z_][A-Za-z0-9_]*)";
  for (char ch : name)
    if (!absl::ascii_isalnum(static_cast<unsigned char>(ch)) && ch != '_')
      return "holds a character other than a letter, a digit or '_' (a name is "
             "[A-Za-z_][A-Za-z0-9_]*)";
  if (absl::StrContains(name, "__")) return "contains \"__\" (reserved in C++)";
  if (name[0] == '_' && name.size() > 1 && absl::ascii_isupper(static_cast<unsigned char>(name[1])))
    return "starts with '_' and a capital letter (reserved in C++)";
  if (name.back() == '_')
    return "ends with '_' (joined to a lowering's '_' it would form a reserved \"__\")";
  if (IsKeyword(name)) return "is a C++ keyword";
  return std::nullopt;
}

bool IsFreeTextField(const pb::FieldDescriptor* field) {
  return field == ir::Module::descriptor()->FindFieldByName("description") ||
         field == ir::Target::descriptor()->FindFieldByName("ptx_version");
}

bool IsCatalogueKeyField(const pb::FieldDescriptor* field) {
  return field == ir::PagedCache::descriptor()->FindFieldByName("format") ||
         field == ir::DecodeFragment::descriptor()->FindFieldByName("field");
}

std::vector<NameViolation> FindNameViolations(const ir::Module& module) {
  std::vector<NameViolation> out;
  ForEachName(module, "",
              [&](const std::string& path, const pb::FieldDescriptor*, const std::string& value) {
                if (value.empty()) return;
                if (auto rule = NameRuleBroken(value))
                  out.push_back({path, Shown(value), *std::move(rule)});
              });
  return out;
}

ir::Module WithFreshNames(const ir::Module& module) {
  std::set<std::string> names;
  ForEachName(module, "",
              [&](const std::string&, const pb::FieldDescriptor* field, const std::string& value) {
                if (!value.empty() && !IsCatalogueKeyField(field)) names.insert(value);
              });
  std::map<std::string, std::string> fresh;
  for (const std::string& name : names)  // std::set order: fresh names sort as the originals
    fresh.emplace(name, absl::StrFormat("zq%06d", fresh.size()));
  ir::Module out = module;
  ForEachName(out, "",
              [&](const std::string&, const pb::FieldDescriptor* field, std::string& value) {
                if (!value.empty() && !IsCatalogueKeyField(field)) value = fresh.at(value);
              });
  return out;
}

}  // namespace cake::compiler
