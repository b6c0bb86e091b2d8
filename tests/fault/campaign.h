// The fault campaign: real caked processes, real workers, real SQLite, killed and restarted at
// random, and hostile workers run under the daemon's own containment. Three parts:
//   kills     SIGKILL caked at a random moment while clients propose and jobs run; after each
//             kill the ledger passes integrity_check, every acknowledged proposal is there, no
//             candidate waits in PROPOSED/ANALYZED without a job; after each restart no process
//             of the dead boot is left.
//   restarts  SIGTERM or SIGKILL caked while a job runs; at the end every job ended exactly
//             once (no job lost, none recorded twice), every candidate settled.
//   hostile   a worker that spins, fork-bombs, escapes with setsid, floods, allocates without
//             end or reads the tokens: each killed within timeout + 2 s, no pid left, the token
//             never read, and the next job is clean.
// Used by the cake-fault-campaign command (long runs, a committed report) and by a CTest test
// (a short run in `make test`).
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "nlohmann/json.hpp"

namespace cake::fault {

struct CampaignOptions {
  std::filesystem::path work;  // scratch directory (state directories go below it)
  std::string caked, worker, hostile_worker;
  int kills = 30;
  int restarts = 10;
  int hostile_rounds = 1;
  bool process_group = false;  // job_containment = process_group (the fallback)
  uint32_t seed = 1;
  bool verbose = false;
};

struct CampaignResult {
  nlohmann::json report;              // every count, per part
  std::vector<std::string> failures;  // each broken invariant, said plainly
  bool ok() const { return failures.empty(); }
};

CampaignResult RunKillCampaign(const CampaignOptions& o);
CampaignResult RunRestartCampaign(const CampaignOptions& o);
CampaignResult RunHostileSuite(const CampaignOptions& o);

}  // namespace cake::fault
