// Orchestrator::Inspect: gathers what the agent may see from the ledger; server/inspect_view.h
// decides what the reply holds.
#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "base/text.h"
#include "candidate_view.h"
#include "inspect_view.h"
#include "orchestrator.h"

namespace cake::server {

absl::StatusOr<v1::InspectReply> Orchestrator::Inspect(const v1::InspectRequest& req, Role role) {
  if (req.max_bytes() < 0 || req.max_bytes() > kMaxInspectBytes)
    return absl::InvalidArgumentError(absl::StrCat("max_bytes ", req.max_bytes(),
                                                   " is out of range (0 = 64 KiB, at most ",
                                                   kMaxInspectBytes, ")"));
  std::vector<v1::EvidenceSection> sections;
  for (int i = 0; i < req.sections_size(); ++i) {
    const auto s = static_cast<v1::EvidenceSection>(req.sections(i));
    if (s == v1::EVIDENCE_SECTION_UNSPECIFIED || !v1::EvidenceSection_IsValid(s))
      return absl::InvalidArgumentError(
          absl::StrCat("sections[", i, "] (", req.sections(i), ") is not an evidence section"));
    sections.push_back(s);
  }
  InspectInputs in;
  if (req.has_candidate_id()) {
    CAKE_ASSIGN_OR_RETURN(in.candidate, GetCandidate(req.candidate_id(), role));
    in.contract_id = in.candidate.contract_id();
  } else if (req.has_contract_id()) {
    in.contract_id = req.contract_id();
  } else {
    return absl::InvalidArgumentError("inspect names neither a candidate_id nor a contract_id");
  }
  CAKE_ASSIGN_OR_RETURN(contract::Contract c, ledger_->contracts().Get(in.contract_id));
  in.contract = role == Role::kAgent ? AgentContractView(c) : c;
  CAKE_ASSIGN_OR_RETURN(in.incumbent, ledger_->contracts().Incumbent(in.contract_id));
  if (!req.has_candidate_id()) {
    // A contract's subject is its incumbent, else its oldest candidate (the baseline).
    std::string subject = in.incumbent;
    if (subject.empty()) {
      CAKE_ASSIGN_OR_RETURN(subject, ledger_->candidates().Oldest(in.contract_id));
    }
    if (!subject.empty()) {
      CAKE_ASSIGN_OR_RETURN(in.candidate, GetCandidate(subject, role));
    }
  }
  CAKE_ASSIGN_OR_RETURN(std::vector<ledger::CandidateStore::Branch> branches,
                        ledger_->candidates().Branches(in.contract_id));
  for (const ledger::CandidateStore::Branch& b : branches) {
    v1::BranchSummary& s = in.branches.emplace_back();
    s.set_name(b.name);
    s.set_candidates(b.candidates);
    s.set_rejected(b.rejected);
    s.set_first(b.first);
    s.set_head(b.head);
    s.set_forked_from(b.forked_from);
  }
  CAKE_ASSIGN_OR_RETURN(std::vector<ledger::CandidateStore::Head> failures,
                        ledger_->candidates().Failures(in.contract_id, kInspectFailures));
  for (const ledger::CandidateStore::Head& h : failures) {
    v1::FailureSummary& f = in.failures.emplace_back();
    f.set_candidate_id(h.id);
    f.set_branch(h.branch);
    f.set_state(h.state);
    f.set_note(base::Utf8Prefix(h.status_note, 300));
    CAKE_ASSIGN_OR_RETURN(evidence::Hypothesis hyp, ledger_->candidates().HypothesisOf(h.id));
    *f.mutable_changed_decisions() = hyp.changed_decisions();
  }
  if (!in.candidate.id().empty()) {
    CAKE_ASSIGN_OR_RETURN(std::vector<ledger::Event> events,
                          ledger_->events().ForCandidate(in.candidate.id(), kInspectEvents));
    for (const ledger::Event& e : events) in.events.push_back(EventView(e));
  }
  return InspectView(in, sections, req.max_bytes() > 0 ? req.max_bytes() : kDefaultInspectBytes);
}

}  // namespace cake::server
