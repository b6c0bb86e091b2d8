// The audit of emitted CUDA source: schedules are data, so what a lowering writes must not
// depend on the bytes of any name an agent chose, beyond the kernel symbol. Checked before any
// source reaches nvcc (Compile) and by the fuzz targets and tests as their oracle:
//   * the source is printable ASCII lines; no line continues onto the next (`\` at its end);
//   * every preprocessor line is one of the lowerings' fixed lines (two #includes, #pragma
//     unroll);
//   * outside comments, the source is a function of the schedule's structure: lowering the same
//     schedule with every name replaced by a fresh one (WithFreshNames) gives the same tokens,
//     except the kernel symbol in its own place. So every identifier in it is lowering-owned or
//     the symbol, and no name reaches a string literal, an expression or a directive;
//   * the dynamic shared bytes of the launch equal analysis' figure.
// Pure; thread-compatible.
#pragma once

#include <string>
#include <vector>

#include "analysis.h"
#include "lowering.h"
#include "parse.h"
#include "targets.h"

namespace cake::compiler {

// The problems found, each naming the line; empty when the source passes. `lowered` is what
// lowering `parsed` for `target` under `options` produced (its analysis verified).
std::vector<std::string> AuditEmittedSource(const ParsedModule& parsed, const TargetInfo& target,
                                            const AnalyzeOptions& options,
                                            const report::AnalysisReport& analysis,
                                            const LoweredKernel& lowered);

// A token of C++ source outside comments: its kind, text and 1-based line.
struct SourceToken {
  enum Kind { kIdentifier, kNumber, kString, kPunctuation };
  Kind kind;
  std::string text;
  int line;
};
// The tokens of `text`, comments dropped (bytes that are not printable ASCII are skipped: the
// audit's line check reports them); an unterminated comment or literal is appended to
// `problems`.
std::vector<SourceToken> TokenizeSource(const std::string& text,
                                        std::vector<std::string>* problems);

}  // namespace cake::compiler
