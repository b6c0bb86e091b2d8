#include "promotion_policy.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace cake::server {

Admission Admit(const evidence::Eligibility& e, const std::string& candidate,
                const std::string& incumbent, bool is_contract_baseline) {
  if (!e.eligible()) return e.failed().empty() ? Admission::kWaitForEvidence : Admission::kReject;
  if (!incumbent.empty())
    return incumbent == candidate ? Admission::kAlreadyIncumbent : Admission::kMeasure;
  return is_contract_baseline ? Admission::kBecomeFirstIncumbent : Admission::kWaitForBaseline;
}

TimedOutputEvidence ReadTimedOutputChecks(const evidence::Measurement& m, bool inputs_mutable) {
  TimedOutputEvidence out;
  for (const evidence::TimedOutputCheck& chk : m.output_checks()) {
    const bool failed = chk.mismatches() > 0 || (!inputs_mutable && chk.inputs_modified() > 0);
    if (chk.arm() == "incumbent") {
      if (failed)
        out.incumbent_failures.push_back(absl::StrCat(
            "incumbent ", m.incumbent(), " failed the timed-output check: ", chk.first_failure()));
      continue;
    }
    evidence::EvidenceRecord r;
    r.set_kind(evidence::TIMED_OUTPUT);
    r.set_device(m.device());
    r.set_status(failed ? evidence::FAILED : evidence::PASSED);
    r.set_failure(chk.first_failure());
    r.mutable_coverage()->set_launches(chk.launches_checked());
    r.mutable_coverage()->set_scope(
        chk.scope().empty()
            ? absl::StrCat("every timed launch: ", chk.projections(),
                           " random projections of its output against the oracle's, input "
                           "checksums")
            : chk.scope());
    r.mutable_coverage()->set_not_covered(
        "output errors the workload's check cannot see (a projection's null space, points "
        "outside the sample)");
    r.set_summary(absl::StrCat(chk.launches_checked(), " timed launches checked, ",
                               chk.mismatches(), " mismatches, ", chk.inputs_modified(),
                               " with inputs modified"));
    out.records.push_back(std::move(r));
    out.challenger_failed = failed;
  }
  return out;
}

MeasurementDecision DecideOnMeasurement(const evidence::Measurement& m, bool timed_output_failed,
                                        const std::string& candidate,
                                        const std::string& current_incumbent,
                                        int confirmation_runs) {
  MeasurementDecision d;
  // A second confirmation run queued before the promotion ends after it: it is kept as a record,
  // and neither re-measures the incumbent against itself nor demotes it.
  if (candidate == current_incumbent) {
    d.action = MeasurementDecision::kAlreadyIncumbent;
    d.summary = absl::StrCat("run ", m.run(), " vs ", m.incumbent(), " ended after ", candidate,
                             " became the incumbent: recorded, nothing decided",
                             timed_output_failed ? " (its timed-output check FAILED)" : "");
    return d;
  }
  if (timed_output_failed) {
    d.action = MeasurementDecision::kRejectTimedOutput;
    d.summary = absl::StrCat("failed evidence: timed_output: ", m.invalid_reason());
    return d;
  }
  if (m.invalid() || m.verdict() == evidence::INVALID) {
    d.action = MeasurementDecision::kRecordInvalid;
    d.summary = absl::StrCat("measurement run ", m.run(), " invalid (never ranked): ",
                             m.invalid_reason().empty() ? "no reason given" : m.invalid_reason());
    return d;
  }
  d.summary = absl::StrCat("run ", m.run(), " vs ", m.incumbent(), ": ",
                           evidence::TimingVerdict_Name(m.verdict()), ", weighted geomean ratio ",
                           absl::StrFormat("%.4f", m.weighted_geomean_ratio()), ", worst row ",
                           m.worst_row(),
                           m.required_regression().empty() ? "" : "; " + m.required_regression());
  if (m.verdict() != evidence::FASTER || !m.required_regression().empty()) {
    d.action = MeasurementDecision::kKeepIncumbent;
    return d;
  }
  if (current_incumbent != m.incumbent()) {
    d.action = MeasurementDecision::kRemeasure;
    d.next_run = 0;
    return d;
  }
  const int runs_needed = 1 + (confirmation_runs > 0 ? confirmation_runs : 1);
  if (m.run() + 1 < runs_needed) {
    d.action = MeasurementDecision::kConfirm;
    d.next_run = m.run() + 1;
    return d;
  }
  d.action = MeasurementDecision::kPromote;
  return d;
}

}  // namespace cake::server
