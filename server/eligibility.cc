#include "eligibility.h"

#include <set>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "workloads/workload.h"

namespace cake::server {
namespace {

const std::set<std::string>& KnownTools() {
  static const std::set<std::string> tools = {"memcheck", "racecheck", "initcheck", "synccheck"};
  return tools;
}

}  // namespace

std::string RecordName(evidence::EvidenceKind kind, const std::string& tool) {
  std::string name = absl::AsciiStrToLower(evidence::EvidenceKind_Name(kind));
  return tool.empty() ? name : absl::StrCat(name, ":", tool);
}

std::vector<contract::EvidenceRequirement> Requirements(const contract::Contract& c) {
  const contract::ValidationPolicy p = workloads::EffectivePolicy(c);
  return {p.evidence().begin(), p.evidence().end()};
}

std::vector<std::string> SanitizerTools(const contract::Contract& c) {
  std::vector<std::string> tools;
  for (const contract::EvidenceRequirement& r : Requirements(c))
    if (r.kind() == evidence::SANITIZER) tools.push_back(r.tool());
  return tools;
}

evidence::Eligibility DeriveEligibility(const contract::Contract& c,
                                        const std::vector<evidence::EvidenceRecord>& records) {
  evidence::Eligibility e;
  auto find = [&](evidence::EvidenceKind kind,
                  const std::string& tool) -> const evidence::EvidenceRecord* {
    const evidence::EvidenceRecord* latest = nullptr;
    for (const evidence::EvidenceRecord& r : records)
      if (r.kind() == kind && r.tool() == tool &&
          (latest == nullptr || r.created_unix_ms() >= latest->created_unix_ms()))
        latest = &r;
    return latest;
  };
  std::set<std::string> seen;
  for (const contract::EvidenceRequirement& req : Requirements(c)) {
    const std::string name = RecordName(req.kind(), req.tool());
    seen.insert(name);
    const evidence::EvidenceRecord* r = find(req.kind(), req.tool());
    const evidence::EvidenceStatus status = r ? r->status() : evidence::EVIDENCE_STATUS_UNSPECIFIED;
    if (status == evidence::FAILED) {
      e.add_failed(r->failure().empty() ? name : absl::StrCat(name, " (", r->failure(), ")"));
    } else if (status != evidence::PASSED) {
      const std::string why =
          r == nullptr ? name
          : r->failure().empty()
              ? absl::StrCat(name, " (", evidence::EvidenceStatus_Name(status), ")")
              : absl::StrCat(name, " (", r->failure(), ")");
      (req.required() ? e.mutable_missing() : e.mutable_optional_missing())->Add(std::string(why));
    }
  }
  // A failed record the contract does not list still shows a defect.
  for (const evidence::EvidenceRecord& r : records)
    if (r.status() == evidence::FAILED && !seen.count(RecordName(r.kind(), r.tool())) &&
        find(r.kind(), r.tool()) == &r)
      e.add_failed(absl::StrCat(RecordName(r.kind(), r.tool()), " (", r.failure(), ")"));
  e.set_eligible(e.missing().empty() && e.failed().empty());
  if (e.eligible()) {
    e.set_summary(e.optional_missing().empty()
                      ? "eligible: every required record passed"
                      : absl::StrCat("eligible; optional evidence missing: ",
                                     absl::StrJoin(e.optional_missing(), ", ")));
  } else {
    std::vector<std::string> parts;
    if (!e.failed().empty())
      parts.push_back(absl::StrCat("failed evidence: ", absl::StrJoin(e.failed(), "; ")));
    if (!e.missing().empty())
      parts.push_back(absl::StrCat("missing evidence: ", absl::StrJoin(e.missing(), ", ")));
    e.set_summary(absl::StrCat("not eligible: ", absl::StrJoin(parts, "; ")));
  }
  return e;
}

std::string CheckValidationPolicy(const contract::ValidationPolicy& p, const workloads::Workload& w,
                                  std::string* field) {
  std::set<std::string> names;
  if (field != nullptr) *field = "validation.evidence";
  for (const contract::EvidenceRequirement& r : p.evidence()) {
    if (r.kind() == evidence::EVIDENCE_KIND_UNSPECIFIED || r.kind() == evidence::TIMED_OUTPUT)
      return "validation.evidence: kind must be a validation record (not unspecified or "
             "TIMED_OUTPUT, which every measurement checks)";
    if (r.kind() == evidence::SANITIZER && !KnownTools().count(r.tool()))
      return absl::StrCat("validation.evidence: unknown sanitizer tool '", r.tool(),
                          "' (memcheck, racecheck, initcheck, synccheck)");
    if (r.kind() != evidence::SANITIZER && !r.tool().empty())
      return absl::StrCat("validation.evidence: tool '", r.tool(), "' given for ",
                          evidence::EvidenceKind_Name(r.kind()));
    if (!names.insert(RecordName(r.kind(), r.tool())).second)
      return absl::StrCat("validation.evidence: ", RecordName(r.kind(), r.tool()), " listed twice");
  }
  std::set<std::string> cases;
  for (int i = 0; i < p.cases_size(); ++i) {
    const contract::ValidationCase& c = p.cases(i);
    if (field != nullptr) *field = absl::StrCat("validation.cases[", i, "]");
    if (c.name().empty()) return "validation.cases: a case has no name";
    if (!cases.insert(c.name()).second)
      return absl::StrCat("validation.cases: '", c.name(), "' listed twice");
    if (field != nullptr) absl::StrAppend(field, ".problem");
    if (absl::Status s = w.CheckShape(c.problem()); !s.ok())
      return absl::StrCat("validation case '", c.name(), "': ", s.message());
    if (w.WorkUnits(c.problem()) > (int64_t{1} << 31))
      return absl::StrCat("validation case '", c.name(),
                          "' is too large for a full oracle (at most 2^31 work units)");
  }
  if (field != nullptr) field->clear();
  return "";
}

}  // namespace cake::server
