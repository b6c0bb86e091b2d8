// Diagnostics: construction of cake.report.Diagnostic records and the sink passes write to.
// A pass never throws or logs; it appends diagnostics and returns a verdict. Not thread-safe: one
// sink per analysis run.
#pragma once

#include <string>
#include "absl/strings/string_view.h"

#include <vector>

#include "cake/report.pb.h"

namespace cake::compiler {

using report::DiagId;
using report::Diagnostic;
using report::Severity;
using report::Verdict;

// Fluent builder for one diagnostic owned by a sink.
class DiagBuilder {
 public:
  explicit DiagBuilder(Diagnostic* d) : d_(d) {}
  DiagBuilder& Op(absl::string_view op_id) {
    d_->set_op_id(std::string(op_id));
    return *this;
  }
  DiagBuilder& Path(absl::string_view path) {
    d_->set_path(std::string(path));
    return *this;
  }
  DiagBuilder& Resource(absl::string_view r) {
    d_->set_resource(std::string(r));
    return *this;
  }
  DiagBuilder& Role(absl::string_view r) {
    d_->set_role(std::string(r));
    return *this;
  }
  DiagBuilder& Condition(absl::string_view c) {
    d_->set_condition(std::string(c));
    return *this;
  }
  DiagBuilder& Evidence(absl::string_view e) {
    d_->set_evidence(std::string(e));
    return *this;
  }
  DiagBuilder& Repair(absl::string_view r) {
    d_->add_repair(std::string(r));
    return *this;
  }
  DiagBuilder& Message(absl::string_view m) {
    d_->set_message(std::string(m));
    return *this;
  }

 private:
  Diagnostic* d_;
};

class DiagnosticSink {
 public:
  DiagBuilder Add(DiagId id, Severity severity);
  DiagBuilder Error(DiagId id) { return Add(id, report::ERROR); }
  DiagBuilder Unknown(DiagId id) { return Add(id, report::UNKNOWN); }
  DiagBuilder Warning(DiagId id) { return Add(id, report::WARNING); }
  DiagBuilder Hint(DiagId id) { return Add(id, report::PERFORMANCE_HINT); }

  const std::vector<Diagnostic>& diagnostics() const { return diagnostics_; }
  std::vector<Diagnostic>& mutable_diagnostics() { return diagnostics_; }
  size_t size() const { return diagnostics_.size(); }
  bool HasErrors() const;

 private:
  // A deque-like guarantee is not needed: builders are used immediately, before the next Add.
  std::vector<Diagnostic> diagnostics_;
};

// The worst verdict wins: rejected > unknown > verified.
Verdict Worst(Verdict a, Verdict b);

// The verdict implied by diagnostics added since `first`: any error rejects, any unknown leaves
// the pass undetermined; warnings and hints do not change the verdict.
Verdict VerdictSince(const DiagnosticSink& sink, size_t first);

absl::string_view DiagName(DiagId id);
absl::string_view SeverityName(Severity s);

}  // namespace cake::compiler
