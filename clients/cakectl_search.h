// `cakectl search`: starts the daemon's search on a contract (or follows one already running),
// prints a line whenever it proposes or measures, and a summary of what it tried, predicted and
// measured when it ends. Interrupting the command leaves the search running in the daemon.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "cake/service.grpc.pb.h"
#include "grpcpp/grpcpp.h"

namespace cake::clients {

struct SearchOptions {
  std::string contract_id;
  std::string follow;  // a running search's id: follow it instead of starting one
  std::string budget = "20m";
  int max_candidates = 0, batch = 0;
  bool detach = false;  // print the new search's id and return
  bool json = false;    // the final report as JSON instead of the summary table
  std::chrono::seconds poll{5};
};

// Seconds of "90", "90s", "20m", "1h", "1h30m"; nullopt for anything else (zero included).
std::optional<int64_t> ParseBudget(const std::string& text);

// Runs the command; `ctx` makes an authorized call context, `fail` prints a failed call and
// returns its exit code. Returns 0 when the search finished, 1 when it failed, 2 for a bad
// --budget.
int RunSearchCommand(v1::CakeService::Stub* stub,
                     const std::function<std::unique_ptr<grpc::ClientContext>()>& ctx,
                     const std::function<int(const grpc::Status&)>& fail,
                     const SearchOptions& options);

// The summary table of a report (stdout).
void PrintSearchSummary(const v1::SearchReport& r);

}  // namespace cake::clients
