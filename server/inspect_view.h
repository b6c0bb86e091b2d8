// What Inspect shows an agent: a compact summary always (the contract in one line, the
// incumbent, branches, recent failures, the candidate's list form and what limits it), detailed
// evidence sections only when asked, and the whole reply under a byte bound. Pure functions;
// thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "cake/contract.pb.h"
#include "cake/evidence.pb.h"
#include "cake/service.pb.h"
#include "ledger/events.h"

namespace cake::server {

inline constexpr int64_t kDefaultInspectBytes = 64 << 10;
inline constexpr int64_t kMaxInspectBytes = 1 << 20;
inline constexpr int kInspectFailures = 5;   // recent failures shown
inline constexpr int kInspectBranches = 32;  // newest branches shown
inline constexpr int kInspectEvents = 50;    // events of the EVENTS section

// A ledger event as the API shows it.
v1::Event EventView(const ledger::Event& e);

// One line: name, operation, targets, public rows, promotion floor.
std::string ContractSummaryLine(const contract::Contract& c);

// What limits a candidate, one recorded fact per line: rejection and first diagnostic,
// registers and spills, the latest run's verdict and worst row, missing or failed evidence.
std::vector<std::string> Bottlenecks(const evidence::Candidate& full);

struct InspectInputs {
  std::string contract_id, incumbent;
  contract::Contract contract;    // as the caller may see it
  evidence::Candidate candidate;  // complete, held-out checks already hidden
  std::vector<v1::BranchSummary> branches;
  std::vector<v1::FailureSummary> failures;
  std::vector<v1::Event> events;  // the candidate's, newest last
};

// The reply: the summary, then each requested section in order while the reply stays within
// max_bytes (a section that would pass it is named in `omitted`). RAW_SAMPLES includes
// MEASUREMENTS.
v1::InspectReply InspectView(const InspectInputs& in,
                             const std::vector<v1::EvidenceSection>& sections, int64_t max_bytes);

}  // namespace cake::server
