// The orchestrator's evidence path: validation and sanitizer records in, eligibility derived,
// measurements judged, promotion decided. Split from orchestrator.cc (lanes, jobs, RPCs).
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "base/status_macros.h"
#include "compiler/canonical.h"
#include "compiler/parse.h"
#include "eligibility.h"
#include "orchestrator.h"
#include "protocol/paired_verdict.h"
#include "spdlog/spdlog.h"
#include "workloads/workload.h"

namespace cake::server {
namespace {

// Canonical hash of the contract's baseline schedule ("" if it does not parse).
std::string BaselineHash(const contract::Contract& c) {
  auto parsed = compiler::ParseModuleText(c.baseline_schedule(), "baseline_schedule");
  return parsed.ok() ? compiler::ScheduleHash(parsed->module) : "";
}

// "NUMERICAL_CONTRACT FAILED: ..." for the first failed record, "" when none failed.
std::string FirstFailure(const evidence::Validation& v) {
  for (const evidence::EvidenceRecord& r : v.records())
    if (r.status() == evidence::FAILED)
      return absl::StrCat("failed evidence: ", RecordName(r.kind(), r.tool()), ": ", r.failure());
  return "";
}

}  // namespace

absl::Status Orchestrator::OnValidated(const ledger::Job& job, const worker::Reply& reply) {
  CAKE_ASSIGN_OR_RETURN(evidence::Candidate cand, ledger_->GetCandidate(job.candidate_id));
  CAKE_ASSIGN_OR_RETURN(contract::Contract c, ledger_->GetContract(cand.contract_id()));
  return ledger_->Atomically([&]() -> absl::Status {
    CAKE_RETURN_IF_ERROR(ledger_->FinishJob(job.id, true, ""));
    CAKE_RETURN_IF_ERROR(ledger_->PutValidation(job.candidate_id, job.id, reply.validation()));
    for (const evidence::EvidenceRecord& r : reply.validation().records())
      CAKE_RETURN_IF_ERROR(ledger_->PutEvidence(job.candidate_id, job.id, r));
    if (std::string failed = FirstFailure(reply.validation()); !failed.empty())
      return ledger_->SetCandidateState(job.candidate_id, evidence::REJECTED, evidence::VALIDATED,
                                        failed);
    // Sanitizers run only for a candidate that passed the cheaper records.
    if (const auto tools = SanitizerTools(c); !tools.empty()) {
      CAKE_RETURN_IF_ERROR(ledger_->SetCandidateState(
          job.candidate_id, cand.state(), evidence::CANDIDATE_STATE_UNSPECIFIED,
          absl::StrCat("validation records passed; compute-sanitizer (", tools.size(),
                       " tools) queued")));
      return EnqueueSanitize(job.candidate_id, tools).status();
    }
    return Admit(job.candidate_id);
  });
}

absl::Status Orchestrator::OnSanitized(const ledger::Job& job, const worker::Reply& reply) {
  return ledger_->Atomically([&]() -> absl::Status {
    CAKE_RETURN_IF_ERROR(ledger_->FinishJob(job.id, true, ""));
    for (const evidence::EvidenceRecord& r : reply.validation().records())
      CAKE_RETURN_IF_ERROR(ledger_->PutEvidence(job.candidate_id, job.id, r));
    if (std::string failed = FirstFailure(reply.validation()); !failed.empty())
      return ledger_->SetCandidateState(job.candidate_id, evidence::REJECTED, evidence::VALIDATED,
                                        failed);
    return Admit(job.candidate_id);
  });
}

absl::Status Orchestrator::Admit(const std::string& candidate) {
  CAKE_ASSIGN_OR_RETURN(evidence::Candidate cand, ledger_->GetCandidate(candidate));
  CAKE_ASSIGN_OR_RETURN(contract::Contract c, ledger_->GetContract(cand.contract_id()));
  const evidence::Eligibility e =
      DeriveEligibility(c, {cand.evidence().begin(), cand.evidence().end()});
  if (!e.eligible()) {
    CAKE_RETURN_IF_ERROR(ledger_->AddEvent("ineligible", candidate, 0, e.summary()));
    if (!e.failed().empty())
      return ledger_->SetCandidateState(candidate, evidence::REJECTED, evidence::VALIDATED,
                                        e.summary());
    // Missing evidence is not success: the candidate stays where it is and says why.
    return ledger_->SetCandidateState(candidate, cand.state(),
                                      evidence::CANDIDATE_STATE_UNSPECIFIED, e.summary());
  }
  CAKE_RETURN_IF_ERROR(ledger_->SetCandidateState(
      candidate, evidence::VALIDATED, evidence::CANDIDATE_STATE_UNSPECIFIED, e.summary()));
  CAKE_ASSIGN_OR_RETURN(std::string incumbent, ledger_->Incumbent(cand.contract_id()));
  if (!incumbent.empty()) {
    if (incumbent == candidate) return absl::OkStatus();
    return EnqueueMeasure(candidate, incumbent, 0).status();
  }
  if (cand.schedule_hash() != BaselineHash(c))
    // Only the contract's baseline becomes the first incumbent; others wait for it.
    return ledger_->SetCandidateState(
        candidate, evidence::VALIDATED, evidence::CANDIDATE_STATE_UNSPECIFIED,
        "eligible; waiting for the contract baseline to be validated");
  CAKE_RETURN_IF_ERROR(
      ledger_->SetIncumbent(cand.contract_id(), candidate, "baseline of the contract, eligible"));
  CAKE_RETURN_IF_ERROR(ledger_->SetCandidateState(candidate, evidence::CONFIRMED_WINNER,
                                                  evidence::CANDIDATE_STATE_UNSPECIFIED,
                                                  "incumbent (baseline)"));
  // Candidates that became eligible before the baseline are measured against it now.
  CAKE_ASSIGN_OR_RETURN(std::vector<std::string> waiting,
                        ledger_->CandidatesInState(cand.contract_id(), evidence::VALIDATED));
  for (const std::string& id : waiting) {
    if (id == candidate) continue;
    CAKE_ASSIGN_OR_RETURN(evidence::Candidate other, ledger_->GetCandidate(id));
    if (DeriveEligibility(c, {other.evidence().begin(), other.evidence().end()}).eligible())
      CAKE_RETURN_IF_ERROR(EnqueueMeasure(id, candidate, 0).status());
  }
  return absl::OkStatus();
}

absl::Status Orchestrator::OnMeasured(const ledger::Job& job, const worker::Reply& reply) {
  CAKE_ASSIGN_OR_RETURN(evidence::Candidate cand, ledger_->GetCandidate(job.candidate_id));
  CAKE_ASSIGN_OR_RETURN(contract::Contract c, ledger_->GetContract(cand.contract_id()));
  // The daemon judges the raw samples itself: the worker's verdict is not taken on trust.
  evidence::Measurement m = reply.measurement();
  protocol::JudgeMeasurement(&m, c);
  const bool inputs_mutable = workloads::EffectivePolicy(c).inputs_mutable();
  return ledger_->Atomically([&]() -> absl::Status {
    CAKE_RETURN_IF_ERROR(ledger_->FinishJob(job.id, true, ""));
    CAKE_RETURN_IF_ERROR(ledger_->PutMeasurement(job.candidate_id, m));
    // What was timed was checked: the challenger's outputs and inputs on every timed launch.
    bool challenger_failed = false;
    for (const evidence::TimedOutputCheck& chk : m.output_checks()) {
      const bool failed = chk.mismatches() > 0 || (!inputs_mutable && chk.inputs_modified() > 0);
      if (chk.arm() == "incumbent") {
        if (failed)
          CAKE_RETURN_IF_ERROR(ledger_->AddEvent(
              "incumbent_output_check_failed", m.incumbent(), job.id,
              absl::StrCat("incumbent ", m.incumbent(),
                           " failed the timed-output check: ", chk.first_failure())));
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
      CAKE_RETURN_IF_ERROR(ledger_->PutEvidence(job.candidate_id, job.id, r));
      challenger_failed = failed;
    }
    if (challenger_failed)
      return ledger_->SetCandidateState(
          job.candidate_id, evidence::REJECTED, evidence::MEASURED,
          absl::StrCat("failed evidence: timed_output: ", m.invalid_reason()));
    if (m.invalid()) {
      CAKE_RETURN_IF_ERROR(
          ledger_->AddEvent("measurement_invalid", job.candidate_id, job.id, m.invalid_reason()));
      return ledger_->SetCandidateState(
          job.candidate_id, cand.state(), cand.rejected_at(),
          absl::StrCat("measurement run ", m.run(),
                       " invalid (never ranked): ", m.invalid_reason()));
    }
    const std::string verdict = evidence::TimingVerdict_Name(m.verdict());
    const std::string summary = absl::StrCat(
        "run ", m.run(), " vs ", m.incumbent(), ": ", verdict, ", weighted geomean ratio ",
        absl::StrFormat("%.4f", m.weighted_geomean_ratio()), ", worst row ", m.worst_row(),
        m.required_regression().empty() ? "" : "; " + m.required_regression());
    CAKE_ASSIGN_OR_RETURN(std::string incumbent, ledger_->Incumbent(cand.contract_id()));
    if (m.verdict() != evidence::FASTER)
      return ledger_->SetCandidateState(job.candidate_id, evidence::MEASURED,
                                        evidence::CANDIDATE_STATE_UNSPECIFIED,
                                        absl::StrCat(summary, "; incumbent kept"));
    if (incumbent != m.incumbent())  // the incumbent changed meanwhile: measure again
      return EnqueueMeasure(job.candidate_id, incumbent, 0).status();
    const int confirmations =
        c.protocol().confirmation_runs() > 0 ? c.protocol().confirmation_runs() : 1;
    if (m.run() < confirmations) {
      CAKE_RETURN_IF_ERROR(ledger_->SetCandidateState(
          job.candidate_id, evidence::CHALLENGER, evidence::CANDIDATE_STATE_UNSPECIFIED,
          absl::StrCat(summary, "; confirmation run queued")));
      return EnqueueMeasure(job.candidate_id, incumbent, m.run() + 1).status();
    }
    CAKE_RETURN_IF_ERROR(
        ledger_->SetIncumbent(cand.contract_id(), job.candidate_id,
                              absl::StrCat("faster in ", m.run() + 1, " paired runs; ", summary)));
    return ledger_->SetCandidateState(job.candidate_id, evidence::CONFIRMED_WINNER,
                                      evidence::CANDIDATE_STATE_UNSPECIFIED,
                                      absl::StrCat("promoted: ", summary));
  });
}

absl::Status Orchestrator::OnRegressed(const ledger::Job& job, const worker::Reply& reply) {
  return ledger_->Atomically([&]() -> absl::Status {
    const bool passed = reply.validation().passed();
    CAKE_RETURN_IF_ERROR(ledger_->FinishJob(
        job.id, passed, passed ? "" : "regression: " + reply.validation().failure()));
    CAKE_RETURN_IF_ERROR(ledger_->PutValidation(job.candidate_id, job.id, reply.validation()));
    return ledger_->AddEvent(passed ? "regress_ok" : "regress_failed", job.candidate_id, job.id,
                             passed ? "incumbent still passes every validation record on every case"
                                    : reply.validation().failure());
  });
}

}  // namespace cake::server
