#include "diagnostics.h"

namespace cake::compiler {

DiagBuilder DiagnosticSink::Add(DiagId id, Severity severity) {
  diagnostics_.emplace_back();
  Diagnostic& d = diagnostics_.back();
  d.set_id(id);
  d.set_severity(severity);
  return DiagBuilder(&d);
}

bool DiagnosticSink::HasErrors() const {
  for (const Diagnostic& d : diagnostics_)
    if (d.severity() == report::ERROR) return true;
  return false;
}

Verdict Worst(Verdict a, Verdict b) {
  auto rank = [](Verdict v) {
    switch (v) {
      case report::REJECTED:
        return 3;
      case report::UNDETERMINED:
        return 2;
      case report::VERIFIED:
        return 1;
      default:
        return 0;
    }
  };
  return rank(a) >= rank(b) ? a : b;
}

Verdict VerdictSince(const DiagnosticSink& sink, size_t first) {
  Verdict v = report::VERIFIED;
  const auto& ds = sink.diagnostics();
  for (size_t i = first; i < ds.size(); ++i) {
    if (ds[i].severity() == report::ERROR) v = Worst(v, report::REJECTED);
    if (ds[i].severity() == report::UNKNOWN) v = Worst(v, report::UNDETERMINED);
  }
  return v;
}

absl::string_view DiagName(DiagId id) {
  const std::string& name = report::DiagId_Name(id);
  return name;
}

absl::string_view SeverityName(Severity s) {
  switch (s) {
    case report::ERROR:
      return "error";
    case report::UNKNOWN:
      return "unknown";
    case report::WARNING:
      return "warning";
    case report::PERFORMANCE_HINT:
      return "performance_hint";
    default:
      return "unspecified";
  }
}

}  // namespace cake::compiler
