// What a proposal asks the daemon to compile: one schedule (ProposeRequest.schedule_text) or a
// portfolio (ProposeRequest.portfolio, every member inline). Read and checked before anything is
// stored or queued, with refusals that name the request field. Pure.
#pragma once

#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "cake/portfolio.pb.h"
#include "cake/service.pb.h"
#include "compiler/parse.h"

namespace cake::server {

struct ProposedSchedules {
  std::string hash;         // the candidate's schedule_hash (a portfolio's PortfolioHash)
  std::string stored_text;  // the candidate's schedule_text (a portfolio in text format)
  std::optional<portfolio::Portfolio> portfolio;
  // The schedule whose operation must be the contract's: the one schedule, or the fallback.
  compiler::ParsedModule representative;
};

// INVALID_ARGUMENT naming the field (schedule_text, portfolio, portfolio.members[i]...) for an
// empty, malformed or over-limit proposal, both forms at once, or a portfolio member that names
// a file instead of carrying its schedule.
absl::StatusOr<ProposedSchedules> ReadProposal(const v1::ProposeRequest& req);

// A contract's baseline read as a proposal's schedule is, refusals naming
// contract.baseline_schedule (CreateContract checks it before it stores anything).
absl::Status CheckBaselineSchedule(const std::string& text);

}  // namespace cake::server
