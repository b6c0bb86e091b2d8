// What a client is shown of contracts and candidates: agents never see held-out rows or cases
// (nor their per-case checks), and lists carry bounded summaries. Pure functions; thread-safe.
#pragma once

#include <set>
#include <string>

#include "cake/contract.pb.h"
#include "cake/evidence.pb.h"

namespace cake::server {

// The contract without its held-out rows and validation cases.
contract::Contract AgentContractView(contract::Contract c);

// Names of the rows and cases agents never see.
std::set<std::string> HiddenCaseNames(const contract::Contract& c);

// Removes every check and coverage entry of a hidden row or case from the candidate.
void HideHeldOutChecks(const std::set<std::string>& hidden, evidence::Candidate* c);

// The list form of a candidate (Candidate.summary): state, hypothesis, verdicts, medians and
// eligibility of the latest 3 measurement runs, without schedule text, diagnostics, SASS
// census, row checks or raw samples.
evidence::Candidate SummaryView(evidence::Candidate c);

// Drops a run's per-sample series (timings, clocks, order, sensors), keeping its statistics.
void ClearRawSamples(evidence::Measurement* m);

}  // namespace cake::server
