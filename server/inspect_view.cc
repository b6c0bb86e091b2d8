#include "inspect_view.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "base/text.h"
#include "candidate_view.h"

namespace cake::server {
namespace {

// Cut at a character boundary: a reply with a split character is refused whole by clients.
std::string Clip(const std::string& s, size_t n) { return base::ClipUtf8(s, n); }

// The latest measurement run that was not invalid, or nullptr.
const evidence::Measurement* LatestValidRun(const evidence::Candidate& c) {
  for (int i = c.measurements_size() - 1; i >= 0; --i)
    if (!c.measurements(i).invalid()) return &c.measurements(i);
  return nullptr;
}

// Adds one section of `full` to `out`; false if there was nothing to add.
bool AddSection(v1::EvidenceSection section, const InspectInputs& in, v1::InspectReply* out) {
  const evidence::Candidate& full = in.candidate;
  evidence::Candidate* c = out->mutable_candidate();
  switch (section) {
    case v1::DIAGNOSTICS:
      *c->mutable_diagnostics() = full.diagnostics();
      *c->mutable_analysis()->mutable_diagnostics() = full.analysis().diagnostics();
      *c->mutable_analysis()->mutable_passes() = full.analysis().passes();
      return true;
    case v1::RECEIPT:
      *c->mutable_receipt() = full.receipt();
      return true;
    case v1::ROW_CHECKS:
      *c->mutable_validation() = full.validation();
      *c->mutable_evidence() = full.evidence();
      return true;
    case v1::MEASUREMENTS:
      *c->mutable_measurements() = full.measurements();
      for (evidence::Measurement& m : *c->mutable_measurements()) ClearRawSamples(&m);
      return true;
    case v1::RAW_SAMPLES:
      *c->mutable_measurements() = full.measurements();
      return true;
    case v1::SCHEDULE_TEXT:
      c->set_schedule_text(full.schedule_text());
      return true;
    case v1::EVENTS:
      for (const v1::Event& e : in.events) *out->add_events() = e;
      return true;
    default:
      return false;
  }
}

}  // namespace

v1::Event EventView(const ledger::Event& e) {
  v1::Event out;
  out.set_id(e.id);
  out.set_created_unix_ms(e.created_ms);
  out.set_kind(e.kind);
  out.set_candidate_id(e.candidate_id);
  out.set_job_id(e.job_id);
  out.set_message(e.message);
  return out;
}

std::string ContractSummaryLine(const contract::Contract& c) {
  std::vector<std::string> rows;
  for (const contract::Row& r : c.rows())
    if (!r.held_out()) rows.push_back(absl::StrCat(r.name(), r.required() ? "*" : ""));
  return absl::StrCat(
      c.name(), ": ", c.operation(), " ", c.input_dtype(), "->", c.output_dtype(),
      ", compiled for ", c.compile_target(), ", executed on ", c.execution_target(), ", nvcc ",
      c.toolchain(), "; ", rows.size(),
      " public rows (* required): ", Clip(absl::StrJoin(rows, " "), 400),
      absl::StrFormat(
          "; a win must be faster by more than %.1f%%",
          100.0 * (c.protocol().practical_floor() > 0 ? c.protocol().practical_floor() : 0.02)));
}

std::vector<std::string> Bottlenecks(const evidence::Candidate& full) {
  std::vector<std::string> out;
  if (full.state() == evidence::REJECTED)
    out.push_back(absl::StrCat("rejected at ", evidence::CandidateState_Name(full.rejected_at()),
                               ": ", Clip(full.status_note(), 300)));
  else if (!full.status_note().empty())
    out.push_back(absl::StrCat("note: ", Clip(full.status_note(), 300)));
  if (full.diagnostics_size() > 0) {
    const report::Diagnostic& d = full.diagnostics(0);
    out.push_back(absl::StrCat(
        "first of ", full.diagnostics_size(), " diagnostics: ", report::DiagId_Name(d.id()),
        d.op_id().empty() ? "" : absl::StrCat(" at ", d.op_id()), ": ", Clip(d.message(), 300)));
  }
  if (full.receipt().outcome() == report::LoweringReceipt::PASS) {
    const report::ResourceUsage& r = full.receipt().resources();
    out.push_back(absl::StrCat(
        "resources (", full.receipt().target(), " receipt): ", r.registers(), " registers/thread, ",
        full.receipt().threads_per_cta(), " threads/CTA, ", r.shared_static_bytes(), " B static + ",
        r.shared_dynamic_bytes(), " B dynamic shared, spills ", r.spill_store_bytes(),
        " B stored / ", r.spill_load_bytes(), " B loaded"));
  }
  if (const evidence::Measurement* m = LatestValidRun(full)) {
    std::string worst;
    for (const evidence::RowTiming& t : m->rows())
      if (t.row() == m->worst_row() && t.primary())
        worst = absl::StrFormat("; worst row %s: %.4fx [%.4f, %.4f] %s", t.row(), t.median_ratio(),
                                t.ratio_low(), t.ratio_high(),
                                evidence::TimingVerdict_Name(t.verdict()));
    out.push_back(absl::StrFormat(
        "run %d against %s on %s: %s, weighted geomean ratio %.4f%s%s", m->run(), m->incumbent(),
        m->device(), evidence::TimingVerdict_Name(m->verdict()), m->weighted_geomean_ratio(), worst,
        m->required_regression().empty()
            ? ""
            : absl::StrCat("; ", Clip(m->required_regression(), 200))));
  }
  if (full.measurements_size() > 0 && full.measurements().rbegin()->invalid())
    out.push_back(absl::StrCat("latest run invalid: ",
                               Clip(full.measurements().rbegin()->invalid_reason(), 300)));
  if (full.eligibility().missing_size() > 0)
    out.push_back(
        absl::StrCat("missing evidence: ", absl::StrJoin(full.eligibility().missing(), ", ")));
  if (full.eligibility().failed_size() > 0)
    out.push_back(
        absl::StrCat("failed evidence: ", absl::StrJoin(full.eligibility().failed(), ", ")));
  return out;
}

v1::InspectReply InspectView(const InspectInputs& in,
                             const std::vector<v1::EvidenceSection>& sections, int64_t max_bytes) {
  v1::InspectReply reply;
  reply.set_contract_id(in.contract_id);
  reply.set_contract_summary(ContractSummaryLine(in.contract));
  reply.set_incumbent(in.incumbent);
  *reply.mutable_candidate() = SummaryView(in.candidate);
  const size_t first_branch =
      in.branches.size() > kInspectBranches ? in.branches.size() - kInspectBranches : 0;
  for (size_t i = first_branch; i < in.branches.size(); ++i) *reply.add_branches() = in.branches[i];
  for (size_t i = 0; i < in.failures.size() && i < kInspectFailures; ++i)
    *reply.add_recent_failures() = in.failures[i];
  for (std::string& line : Bottlenecks(in.candidate)) reply.add_bottlenecks(std::move(line));
  std::vector<v1::EvidenceSection> wanted;
  for (v1::EvidenceSection s : sections)
    if (std::find(wanted.begin(), wanted.end(), s) == wanted.end()) wanted.push_back(s);
  // Raw samples supersede the sampled-free runs.
  if (std::find(wanted.begin(), wanted.end(), v1::RAW_SAMPLES) != wanted.end())
    wanted.erase(std::remove(wanted.begin(), wanted.end(), v1::MEASUREMENTS), wanted.end());
  for (v1::EvidenceSection s : wanted) {
    v1::InspectReply with = reply;
    if (!AddSection(s, in, &with)) continue;
    with.add_granted(s);
    if (static_cast<int64_t>(with.ByteSizeLong()) <= max_bytes) {
      reply = std::move(with);
    } else {
      reply.add_omitted(s);
    }
  }
  return reply;
}

}  // namespace cake::server
