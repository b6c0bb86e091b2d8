// The orchestrator's evidence path: validation and sanitizer records in, eligibility derived,
// measurements judged, the promotion policy applied. Split from orchestrator.cc (jobs, RPCs).
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "base/status_macros.h"
#include "compiler/canonical.h"
#include "compiler/parse.h"
#include "contract_checks.h"
#include "eligibility.h"
#include "job_requests.h"
#include "lane_admission.h"
#include "orchestrator.h"
#include "promotion_policy.h"
#include "protocol/paired_verdict.h"
#include "regress_policy.h"
#include "spdlog/spdlog.h"
#include "workloads/workload.h"

namespace cake::server {
namespace {

// "NUMERICAL_CONTRACT FAILED: ..." for the first failed record, "" when none failed.
std::string FirstFailure(const evidence::Validation& v) {
  for (const evidence::EvidenceRecord& r : v.records())
    if (r.status() == evidence::FAILED)
      return absl::StrCat("failed evidence: ", RecordName(r.kind(), r.tool()), ": ", r.failure());
  return "";
}

}  // namespace

absl::Status Orchestrator::OnValidated(const ledger::Job& job, const worker::Reply& reply) {
  CAKE_ASSIGN_OR_RETURN(evidence::Candidate cand, ledger_->candidates().Get(job.candidate_id));
  CAKE_ASSIGN_OR_RETURN(contract::Contract c, ledger_->contracts().Get(cand.contract_id()));
  return ledger_->Atomically([&]() -> absl::Status {
    CAKE_RETURN_IF_ERROR(ledger_->jobs().Finish(job.id, true, ""));
    CAKE_RETURN_IF_ERROR(
        ledger_->evidence().PutValidation(job.candidate_id, job.id, reply.validation()));
    for (const evidence::EvidenceRecord& r : reply.validation().records())
      CAKE_RETURN_IF_ERROR(ledger_->evidence().PutRecord(job.candidate_id, job.id, r));
    if (std::string failed = FirstFailure(reply.validation()); !failed.empty())
      return Advance(job.candidate_id, Step::kEvidenceFailed, failed);
    // Sanitizers run only for a candidate that passed the cheaper records.
    if (const auto tools = SanitizerTools(c); !tools.empty()) {
      CAKE_RETURN_IF_ERROR(Advance(job.candidate_id, Step::kNote,
                                   absl::StrCat("validation records passed; compute-sanitizer (",
                                                tools.size(), " tools) queued")));
      return EnqueueSanitize(job.candidate_id, tools).status();
    }
    return Admit(job.candidate_id);
  });
}

absl::Status Orchestrator::OnSanitized(const ledger::Job& job, const worker::Reply& reply) {
  return ledger_->Atomically([&]() -> absl::Status {
    CAKE_RETURN_IF_ERROR(ledger_->jobs().Finish(job.id, true, ""));
    for (const evidence::EvidenceRecord& r : reply.validation().records())
      CAKE_RETURN_IF_ERROR(ledger_->evidence().PutRecord(job.candidate_id, job.id, r));
    if (std::string failed = FirstFailure(reply.validation()); !failed.empty())
      return Advance(job.candidate_id, Step::kEvidenceFailed, failed);
    return Admit(job.candidate_id);
  });
}

absl::Status Orchestrator::Admit(const std::string& candidate) {
  CAKE_ASSIGN_OR_RETURN(evidence::Candidate cand, ledger_->candidates().Get(candidate));
  CAKE_ASSIGN_OR_RETURN(contract::Contract c, ledger_->contracts().Get(cand.contract_id()));
  const evidence::Eligibility e =
      DeriveEligibility(c, {cand.evidence().begin(), cand.evidence().end()});
  CAKE_ASSIGN_OR_RETURN(std::string incumbent, ledger_->contracts().Incumbent(cand.contract_id()));
  switch (server::Admit(e, candidate, incumbent, cand.schedule_hash() == BaselineHash(c))) {
    case Admission::kReject:
      CAKE_RETURN_IF_ERROR(ledger_->events().Add("ineligible", candidate, 0, e.summary()));
      return Advance(candidate, Step::kEvidenceFailed, e.summary());
    case Admission::kWaitForEvidence:
      // Missing evidence is not success: the candidate stays where it is and says why.
      CAKE_RETURN_IF_ERROR(ledger_->events().Add("ineligible", candidate, 0, e.summary()));
      return Advance(candidate, Step::kNote, e.summary());
    case Admission::kAlreadyIncumbent:
      return absl::OkStatus();
    case Admission::kMeasure:
      CAKE_RETURN_IF_ERROR(Advance(candidate, Step::kEligible, e.summary()));
      return EnqueueMeasure(candidate, incumbent, 0).status();
    case Admission::kWaitForBaseline:
      return Advance(candidate, Step::kEligible,
                     "eligible; waiting for the contract baseline to be validated");
    case Admission::kBecomeFirstIncumbent:
      break;
  }
  CAKE_RETURN_IF_ERROR(Advance(candidate, Step::kEligible, e.summary()));
  CAKE_RETURN_IF_ERROR(ledger_->contracts().SetIncumbent(cand.contract_id(), candidate,
                                                         "baseline of the contract, eligible"));
  CAKE_RETURN_IF_ERROR(Advance(candidate, Step::kBecameIncumbent, "incumbent (baseline)"));
  // Candidates that became eligible before the baseline are measured against it now.
  CAKE_ASSIGN_OR_RETURN(std::vector<std::string> waiting,
                        ledger_->candidates().InState(cand.contract_id(), evidence::VALIDATED));
  for (const std::string& id : waiting) {
    if (id == candidate) continue;
    CAKE_ASSIGN_OR_RETURN(evidence::Candidate other, ledger_->candidates().Get(id));
    if (DeriveEligibility(c, {other.evidence().begin(), other.evidence().end()}).eligible())
      CAKE_RETURN_IF_ERROR(EnqueueMeasure(id, candidate, 0).status());
  }
  return absl::OkStatus();
}

absl::Status Orchestrator::OnMeasured(const ledger::Job& job, const worker::Reply& reply) {
  CAKE_ASSIGN_OR_RETURN(evidence::Candidate cand, ledger_->candidates().Get(job.candidate_id));
  CAKE_ASSIGN_OR_RETURN(contract::Contract c, ledger_->contracts().Get(cand.contract_id()));
  // The daemon judges the raw samples itself: the worker's verdict is not taken on trust.
  evidence::Measurement m = reply.measurement();
  protocol::JudgeMeasurement(&m, c);
  m.set_device_uuid(job.device);
  for (const gpuqueue::Device& d : devices_)
    if (DeviceLabel(d) == job.device) m.set_device_profile(DeviceProfile(d));
  if (worker::Request req; req.ParseFromString(job.request) && req.measure().regress())
    return OnRegressTimed(job, cand, c, std::move(m));
  // What was timed was checked: the challenger's outputs and inputs on every timed launch.
  const TimedOutputEvidence timed =
      ReadTimedOutputChecks(m, workloads::EffectivePolicy(c).inputs_mutable());
  return ledger_->Atomically([&]() -> absl::Status {
    CAKE_RETURN_IF_ERROR(ledger_->jobs().Finish(job.id, true, ""));
    CAKE_RETURN_IF_ERROR(ledger_->evidence().PutMeasurement(job.candidate_id, m));
    for (const std::string& failure : timed.incumbent_failures)
      CAKE_RETURN_IF_ERROR(
          ledger_->events().Add("incumbent_output_check_failed", m.incumbent(), job.id, failure));
    for (const evidence::EvidenceRecord& r : timed.records)
      CAKE_RETURN_IF_ERROR(ledger_->evidence().PutRecord(job.candidate_id, job.id, r));
    CAKE_ASSIGN_OR_RETURN(std::string incumbent,
                          ledger_->contracts().Incumbent(cand.contract_id()));
    const MeasurementDecision d = DecideOnMeasurement(m, timed.challenger_failed, job.candidate_id,
                                                      incumbent, c.protocol().confirmation_runs());
    switch (d.action) {
      case MeasurementDecision::kAlreadyIncumbent:
        return ledger_->events().Add("measured_after_promotion", job.candidate_id, job.id,
                                     d.summary);
      case MeasurementDecision::kRejectTimedOutput:
        return Advance(job.candidate_id, Step::kTimedOutputFailed, d.summary);
      case MeasurementDecision::kRecordInvalid:
        CAKE_RETURN_IF_ERROR(ledger_->events().Add("measurement_invalid", job.candidate_id, job.id,
                                                   m.invalid_reason()));
        return Advance(job.candidate_id, Step::kNote, d.summary);
      case MeasurementDecision::kKeepIncumbent:
        return Advance(job.candidate_id, Step::kNotFaster,
                       absl::StrCat(d.summary, "; incumbent kept"));
      case MeasurementDecision::kRemeasure:  // the incumbent changed meanwhile
        return EnqueueMeasure(job.candidate_id, incumbent, d.next_run).status();
      case MeasurementDecision::kConfirm:
        CAKE_RETURN_IF_ERROR(Advance(job.candidate_id, Step::kConfirmationQueued,
                                     absl::StrCat(d.summary, "; confirmation run queued")));
        return EnqueueMeasure(job.candidate_id, incumbent, d.next_run).status();
      case MeasurementDecision::kPromote:
        break;
    }
    CAKE_RETURN_IF_ERROR(ledger_->contracts().SetIncumbent(
        cand.contract_id(), job.candidate_id,
        absl::StrCat("faster in ", m.run() + 1, " paired runs; ", d.summary)));
    return Advance(job.candidate_id, Step::kPromoted, absl::StrCat("promoted: ", d.summary));
  });
}

namespace {

constexpr char kRegressNote[] = "regress re-timing";

// A run that can stand as a record: valid, and not itself a re-timing.
bool IsRecord(const evidence::Measurement& m) {
  return !m.invalid() && !absl::StartsWith(m.note(), kRegressNote);
}

// The newest record of `c` as the challenger; nullptr if none.
const evidence::Measurement* OwnRecord(const evidence::Candidate& c) {
  for (auto m = c.measurements().rbegin(); m != c.measurements().rend(); ++m)
    if (IsRecord(*m) && m->candidate() == c.id()) return &*m;
  return nullptr;
}

// The newest record of another candidate timed against `id` (`candidates` newest first);
// nullptr if none.
const evidence::Measurement* RecordAgainst(const std::string& id,
                                           const std::vector<evidence::Candidate>& candidates) {
  for (const evidence::Candidate& c : candidates)
    for (auto m = c.measurements().rbegin(); m != c.measurements().rend(); ++m)
      if (IsRecord(*m) && m->incumbent() == id && c.id() != id) return &*m;
  return nullptr;
}

}  // namespace

absl::Status Orchestrator::OnRegressTimed(const ledger::Job& job, const evidence::Candidate& inc,
                                          const contract::Contract& c, evidence::Measurement m) {
  m.set_note(absl::StrCat(kRegressNote, m.note().empty() ? "" : "; ", m.note()));
  // Its own run as the challenger; for the baseline (never a challenger), another candidate's
  // run against it, so the contract's candidates are read only then.
  const evidence::Measurement* recorded = OwnRecord(inc);
  ledger::CandidateStore::CandidatePage others;
  if (recorded == nullptr) {
    CAKE_ASSIGN_OR_RETURN(others, ledger_->candidates().List(inc.contract_id(), 1000));
    recorded = RecordAgainst(inc.id(), others.candidates);
  }
  const RegressTiming t =
      DecideRegressTiming(m, recorded, inc.id(), m.incumbent(), c.protocol().practical_floor());
  const char* kind = t.result == RegressTiming::kOk           ? "regress_timing_ok"
                     : t.result == RegressTiming::kRegression ? "regress_timing_failed"
                                                              : "regress_timing_inconclusive";
  return ledger_->Atomically([&]() -> absl::Status {
    CAKE_RETURN_IF_ERROR(ledger_->jobs().Finish(job.id, true, ""));
    CAKE_RETURN_IF_ERROR(ledger_->evidence().PutMeasurement(job.candidate_id, m));
    return ledger_->events().Add(kind, job.candidate_id, job.id, t.summary);
  });
}

absl::Status Orchestrator::OnRegressed(const ledger::Job& job, const worker::Reply& reply) {
  return ledger_->Atomically([&]() -> absl::Status {
    const bool passed = reply.validation().passed();
    // The job did its work either way: a regression is its finding (regress_failed), not a
    // failed job (job_failed is for a worker that died or hung).
    CAKE_RETURN_IF_ERROR(ledger_->jobs().Finish(job.id, true, ""));
    CAKE_RETURN_IF_ERROR(
        ledger_->evidence().PutValidation(job.candidate_id, job.id, reply.validation()));
    return ledger_->events().Add(
        passed ? "regress_ok" : "regress_failed", job.candidate_id, job.id,
        passed ? "incumbent still passes every validation record on every case"
               : reply.validation().failure());
  });
}

}  // namespace cake::server
