// Helpers shared by the tests that compile schedules through the real compiler and read their
// receipts: the compile itself, the SASS census by opcode, an independent count of opcodes by
// prefix, and whether admission refused a form on a target by name.
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "cake/report.pb.h"
#include "compiler/compiler.h"
#include "compiler/parse.h"
#include "compiler/targets.h"

namespace cake::testing {

inline std::map<std::string, int64_t> Census(const report::LoweringReceipt& r) {
  std::map<std::string, int64_t> out;
  for (const auto& c : r.sass_census()) out[c.opcode()] += c.count();
  return out;
}

// Opcodes beginning with `prefix`: a count independent of the receipt's own (CountSassForm,
// compiler/toolchain.h), which tests check against it.
inline int64_t CountPrefix(const std::map<std::string, int64_t>& census,
                           const std::string& prefix) {
  int64_t n = 0;
  for (const auto& [opcode, count] : census)
    if (opcode.rfind(prefix, 0) == 0) n += count;
  return n;
}

// Admission refused the MMA form on `target`, by name ("... is not admitted on sm_120").
inline bool RefusedNaming(const report::AnalysisReport& analysis, const std::string& target) {
  if (analysis.verdict() != report::REJECTED) return false;
  for (const report::Diagnostic& d : analysis.diagnostics())
    if (d.id() == report::DIAG_INSTR_NOT_ADMITTED &&
        absl::EndsWith(d.message(), absl::StrCat("is not admitted on ", target)))
      return true;
  return false;
}

// Parses `text` and compiles it for `target` through the real compiler into `store`.
inline absl::StatusOr<compiler::CompileResult> CompileSchedule(const std::string& text,
                                                               const std::string& label,
                                                               const char* target,
                                                               const std::string& store) {
  auto parsed = compiler::ParseModuleText(text, label);
  if (!parsed.ok()) return parsed.status();
  auto t = compiler::TargetByName(target);
  if (!t.ok()) return t.status();
  compiler::CompileOptions opts;
  opts.store_root = store;
  return compiler::Compile(*parsed, **t, opts);
}

}  // namespace cake::testing
