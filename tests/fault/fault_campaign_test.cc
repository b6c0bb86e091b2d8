// The short fault campaign in `make test`: a few dozen SIGKILLs, restarts mid-job and one round
// of the hostile suite, under cgroup containment (where this machine allows it) and under the
// process-group fallback. The long runs are cake-fault-campaign's (evidence/fault_campaign/).
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "campaign.h"
#include "tests/compiler/test_util.h"

namespace cake {
namespace {

fault::CampaignOptions Short(bool process_group) {
  fault::CampaignOptions o;
  o.work = testing::FreshDir(process_group ? "fault_pg" : "fault_auto");
  o.caked = CAKED_PATH;
  o.worker = CAKE_WORKER_PATH;
  o.hostile_worker = CAKE_HOSTILE_WORKER_PATH;
  o.kills = 25;
  o.restarts = 8;
  o.process_group = process_group;
  return o;
}

void Expect(const fault::CampaignResult& r) {
  EXPECT_TRUE(r.ok()) << r.report.dump(2);
  for (const std::string& f : r.failures) ADD_FAILURE() << f;
}

// A campaign's scratch folder (its daemons' states and ledgers, about 100 MB) is removed when the
// test passed and kept to be looked at when it failed.
class FaultCampaign : public ::testing::Test {
 protected:
  fault::CampaignOptions Options(bool process_group) {
    fault::CampaignOptions o = Short(process_group);
    work_.push_back(o.work);
    return o;
  }
  void TearDown() override {
    if (HasFailure()) return;
    std::error_code ec;
    for (const std::filesystem::path& dir : work_) std::filesystem::remove_all(dir, ec);
  }

 private:
  std::vector<std::filesystem::path> work_;
};

TEST_F(FaultCampaign, KillsLoseNothingAndLeaveNoOrphans) {
  const auto r = fault::RunKillCampaign(Options(false));
  Expect(r);
  EXPECT_GT(r.report["proposals_acknowledged"].get<int>(), 0);
  EXPECT_EQ(r.report["integrity_check_ok"].get<int>(), 25);
}

TEST_F(FaultCampaign, RestartsMidJobEndEveryJobOnce) {
  const auto r = fault::RunRestartCampaign(Options(false));
  Expect(r);
  EXPECT_GT(r.report["restarts_with_a_job_running"].get<int>(), 0);
}

// The hostile suite checks the workers' confinement (seccomp, Landlock, no tokens): where the
// daemons run their workers unconfined (CAKED_CONFINE_WORKERS=false, as under qemu-user, which
// refuses seccomp filters) there is nothing to check, and it says so instead of passing.
bool WorkersUnconfined() {
  const char* v = std::getenv("CAKED_CONFINE_WORKERS");
  if (v == nullptr) return false;
  const std::string s(v);
  return s == "false" || s == "0" || s == "off" || s == "no";
}

TEST_F(FaultCampaign, HostileWorkersAreContained) {
  if (WorkersUnconfined()) GTEST_SKIP() << "CAKED_CONFINE_WORKERS=false: confinement not checked";
  Expect(fault::RunHostileSuite(Options(false)));
}

TEST_F(FaultCampaign, HostileWorkersAreContainedByTheProcessGroupFallback) {
  if (WorkersUnconfined()) GTEST_SKIP() << "CAKED_CONFINE_WORKERS=false: confinement not checked";
  Expect(fault::RunHostileSuite(Options(true)));
}

}  // namespace
}  // namespace cake
