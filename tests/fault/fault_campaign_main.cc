// cake-fault-campaign: SIGKILLs and restarts of a real caked during proposals and jobs, and a
// hostile worker suite under the daemon's own containment (tests/fault/campaign.h). Prints one
// JSON report (also written to --out) and exits 1 if any invariant broke.
//   cake-fault-campaign --kills 1000 --restarts 200 --hostile-rounds 20 --out report.json
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <iostream>

#include "CLI/CLI.hpp"
#include "campaign.h"

int main(int argc, char** argv) {
  cake::fault::CampaignOptions o;
  o.caked = CAKED_PATH;
  o.worker = CAKE_WORKER_PATH;
  o.hostile_worker = CAKE_HOSTILE_WORKER_PATH;
  std::string out, work = "/tmp/cake-fault-campaign", parts = "kills,restarts,hostile";
  CLI::App app{"cake-fault-campaign: kill, restart and attack a real caked; report what held"};
  app.add_option("--kills", o.kills, "SIGKILLs of caked during proposals and jobs (default 30)");
  app.add_option("--restarts", o.restarts, "restarts while a job runs (default 10)");
  app.add_option("--hostile-rounds", o.hostile_rounds, "rounds of the hostile suite (default 1)");
  app.add_option("--parts", parts, "which parts to run (default kills,restarts,hostile)");
  app.add_flag("--process-group", o.process_group,
               "contain jobs by process group only (the fallback without cgroups)");
  app.add_option("--work", work, "scratch directory (default /tmp/cake-fault-campaign)");
  app.add_option("--seed", o.seed, "random seed of the kill times (default 1)");
  app.add_option("--caked", o.caked, "caked executable");
  app.add_option("--worker", o.worker, "cake-worker executable");
  app.add_option("--hostile-worker", o.hostile_worker, "cake-hostile-worker executable");
  app.add_option("--out", out, "also write the JSON report here");
  app.add_flag("-v,--verbose", o.verbose, "progress on stderr");
  CLI11_PARSE(app, argc, argv);
  if (!getenv("CAKE_SOURCE_DIR")) setenv("CAKE_SOURCE_DIR", CAKE_SOURCE_DIR_DEFAULT, 0);
  o.work = work;
  std::filesystem::create_directories(o.work);

  nlohmann::json report;
  report["containment"] = o.process_group ? "process_group" : "auto";
  report["seed"] = o.seed;
  bool ok = true;
  auto run = [&](const char* name,
                 cake::fault::CampaignResult (*fn)(const cake::fault::CampaignOptions&)) {
    if (parts.find(name) == std::string::npos) return;
    const auto t0 = std::chrono::steady_clock::now();
    std::fprintf(stderr, "cake-fault-campaign: %s ...\n", name);
    cake::fault::CampaignResult r = fn(o);
    r.report["seconds"] =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    r.report["failures"] = r.failures;
    report[name] = r.report;
    ok &= r.ok();
    std::fprintf(stderr, "cake-fault-campaign: %s: %s\n", name,
                 r.ok() ? "every invariant held" : "FAILED");
  };
  run("kills", cake::fault::RunKillCampaign);
  run("restarts", cake::fault::RunRestartCampaign);
  run("hostile", cake::fault::RunHostileSuite);
  report["ok"] = ok;
  std::cout << report.dump(2) << "\n";
  if (!out.empty()) std::ofstream(out) << report.dump(2) << "\n";
  return ok ? 0 : 1;
}
