#include "proposal.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "compiler/canonical.h"
#include "compiler/portfolio.h"
#include "compiler/schedule_limits.h"
#include "compiler/schedule_names.h"
#include "error_detail.h"
#include "google/protobuf/text_format.h"

namespace cake::server {
namespace {

absl::Status ParseRefusal(const std::string& field, const absl::Status& parsed, size_t bytes) {
  v1::ErrorDetail d;
  d.set_diagnostic_id(report::DIAG_PARSE_ERROR);
  d.set_field(field);
  if (bytes > compiler::kMaxScheduleTextBytes)
    d.set_limit(static_cast<int64_t>(compiler::kMaxScheduleTextBytes));
  return WithDetail(absl::InvalidArgumentError(parsed.message()), d);
}

absl::StatusOr<compiler::ParsedModule> ReadSchedule(const std::string& text,
                                                    const std::string& field,
                                                    const std::string& file) {
  auto parsed = compiler::ParseModuleText(text, file);
  if (!parsed.ok()) return ParseRefusal(field, parsed.status(), text.size());
  if (parsed->module.kernels().empty())
    return InvalidField(field, absl::StrCat(file,
                                            ":1:1: the schedule declares no kernel; an empty "
                                            "schedule is not a candidate"));
  // Names are data: one that is not an identifier is refused here, before anything is queued
  // or compiled (the verifier's construction pass says the same of a schedule analyzed alone).
  if (const std::vector<compiler::NameViolation> bad = compiler::FindNameViolations(parsed->module);
      !bad.empty()) {
    const compiler::NameViolation& v = bad.front();
    const report::SourceSpan at = parsed->source_map.Lookup(v.path);
    v1::ErrorDetail d;
    d.set_diagnostic_id(report::DIAG_INVALID_NAME);
    d.set_field(absl::StrCat(field, ".", v.path));
    return WithDetail(
        absl::InvalidArgumentError(absl::StrCat(
            file, ":", std::max(at.line(), 1), ":", std::max(at.column(), 1), ": ", v.path, " \"",
            v.value, "\" is not a valid name: it ", v.rule,
            bad.size() > 1 ? absl::StrCat(" (and ", bad.size() - 1, " more names)") : "")),
        d);
  }
  return parsed;
}

absl::StatusOr<ProposedSchedules> ReadPortfolio(const portfolio::Portfolio& p) {
  if (absl::Status s = compiler::CheckSelfContained(p); !s.ok())
    return InvalidField("portfolio", std::string(s.message()));
  ProposedSchedules out;
  size_t total = 0;
  for (int i = 0; i <= p.members_size(); ++i) {
    const bool fallback = i == p.members_size();
    const portfolio::Member& m = fallback ? p.fallback() : p.members(i);
    const std::string field = fallback ? std::string("portfolio.fallback.schedule_text")
                                       : absl::StrCat("portfolio.members[", i, "].schedule_text");
    total += m.schedule_text().size();
    if (total > compiler::kMaxScheduleTextBytes)
      return InvalidField(field,
                          absl::StrCat("the portfolio's schedules come to more than ",
                                       compiler::kMaxScheduleTextBytes, " bytes at ", field),
                          static_cast<int64_t>(compiler::kMaxScheduleTextBytes));
    auto parsed =
        ReadSchedule(m.schedule_text(), field, absl::StrCat(compiler::MemberName(m), ".textproto"));
    if (!parsed.ok()) return parsed.status();
    if (fallback) out.representative = *std::move(parsed);
  }
  auto hash = compiler::PortfolioHash(p);
  if (!hash.ok()) return InvalidField("portfolio", std::string(hash.status().message()));
  out.hash = *hash;
  google::protobuf::TextFormat::Printer printer;
  printer.PrintToString(p, &out.stored_text);
  out.portfolio = p;
  return out;
}

}  // namespace

absl::Status CheckBaselineSchedule(const std::string& text) {
  if (text.empty())
    return InvalidField("contract.baseline_schedule",
                        "the contract has no baseline_schedule: its first incumbent (cakectl "
                        "contract create CONTRACT --baseline SCHEDULE)");
  return ReadSchedule(text, "contract.baseline_schedule", "baseline.textproto").status();
}

absl::StatusOr<ProposedSchedules> ReadProposal(const v1::ProposeRequest& req) {
  if (req.has_portfolio()) {
    if (!req.schedule_text().empty())
      return InvalidField("portfolio",
                          "the proposal carries both schedule_text and a portfolio; give one");
    return ReadPortfolio(req.portfolio());
  }
  ProposedSchedules out;
  CAKE_ASSIGN_OR_RETURN(out.representative,
                        ReadSchedule(req.schedule_text(), "schedule_text", "schedule.textproto"));
  out.hash = compiler::ScheduleHash(out.representative.module);
  out.stored_text = req.schedule_text();
  return out;
}

}  // namespace cake::server
