// What a name in a schedule may be. A schedule is data: every string an agent writes is either
// free text that never reaches generated source (Module.description, Target.ptx_version) or a
// name (declarations, references, op ids, results, catalogue keys), and a name must be a plain
// C identifier that is neither a C++/CUDA keyword nor reserved. The lowerings emit no schedule
// name as code (their parameters are lowering-owned identifiers): the kernel's name reaches the
// source only inside the kernel symbol and op ids only inside `// op:ID` comments, so this rule
// is what keeps those places inert. Pure functions; thread-safe.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "cake/ir.pb.h"

namespace cake::compiler {

// Longest name accepted (bytes).
inline constexpr int kMaxNameBytes = 64;

// The rule `name` breaks, for people ("is a C++ keyword"), or nullopt when it is a valid name:
// [A-Za-z_][A-Za-z0-9_]{0,63}; not a C++20 keyword, alternative token or CUDA qualifier; no
// "__" anywhere, no leading "_" + capital, no trailing "_" (lowerings join names with "_", as
// in the kernel symbol cake_NAME_HASH, which must not become reserved).
std::optional<std::string> NameRuleBroken(absl::string_view name);

struct NameViolation {
  std::string path;  // IR path of the field, as the parser records it: "kernels[0].tensors[1].name"
  std::string value;  // the offending value, C-escaped and clipped (printable ASCII)
  std::string rule;   // NameRuleBroken's text
};

// Every non-empty name-valued string of `module` that breaks the rule, in field order. An empty
// string is "not written" and is left to the checks of required fields.
std::vector<NameViolation> FindNameViolations(const ir::Module& module);

// True for the string fields that hold free text rather than names.
bool IsFreeTextField(const google::protobuf::FieldDescriptor* field);
// True for the name fields whose value is a key into a fixed catalogue (PagedCache.format,
// DecodeFragment.field): names by the rule, but with a meaning of their own.
bool IsCatalogueKeyField(const google::protobuf::FieldDescriptor* field);

// `module` with every name but the catalogue keys replaced by a fresh one ("zq000000", ...): the
// same name everywhere gets the same fresh name, and the fresh names sort as the originals did,
// so canonical order and every reference are kept. The emission audit lowers both and compares.
ir::Module WithFreshNames(const ir::Module& module);

}  // namespace cake::compiler
