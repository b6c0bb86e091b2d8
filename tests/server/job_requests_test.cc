// Job requests: each builder's request is of the kind it is queued as, GPU kinds are the ones
// that need a device, and the sanitize timeout follows the contract.
#include <gtest/gtest.h>

#include "server/job_requests.h"

namespace cake::server {
namespace {

using ledger::JobKind;

contract::Contract Contract(const std::string& compile, const std::string& execution) {
  contract::Contract c;
  c.set_name("t");
  c.set_compile_target(compile);
  c.set_execution_target(execution);
  return c;
}

TEST(JobRequests, EachBuilderMakesTheKindItIsQueuedAs) {
  const auto c = Contract("sm_120f", "sm_90");
  worker::KernelRef k;
  k.set_candidate("c1");
  EXPECT_EQ(KindOf(CompileRequest("c1", "kernels {}", c, "/store")), JobKind::kCompile);
  EXPECT_EQ(KindOf(ValidateRequest(JobKind::kValidate, "c1", c, k, 7)), JobKind::kValidate);
  EXPECT_EQ(KindOf(ValidateRequest(JobKind::kRegress, "c1", c, k, 7)), JobKind::kRegress);
  EXPECT_EQ(KindOf(SanitizeRequest("c1", c, k, {"memcheck"}, 7)), JobKind::kSanitize);
  EXPECT_EQ(KindOf(MeasureRequest("c2", c, k, k, 1, 7)), JobKind::kMeasure);
  worker::Request probe;
  probe.mutable_probe();
  EXPECT_EQ(KindOf(probe), JobKind::kUnknown);  // never queued
  EXPECT_EQ(KindOf(worker::Request()), JobKind::kUnknown);
}

TEST(JobRequests, KindNamesRoundTripAndUnknownNamesStayUnknown) {
  for (JobKind k : {JobKind::kCompile, JobKind::kValidate, JobKind::kSanitize, JobKind::kMeasure,
                    JobKind::kRegress})
    EXPECT_EQ(ledger::ParseJobKind(ledger::JobKindName(k)), k);
  EXPECT_EQ(ledger::ParseJobKind("format_disk"), JobKind::kUnknown);
}

TEST(JobRequests, OnlyCompilesRunOnCpuLanes) {
  EXPECT_FALSE(RunsOnGpu(JobKind::kCompile));
  EXPECT_FALSE(RunsOnGpu(JobKind::kUnknown));
  for (JobKind k : {JobKind::kValidate, JobKind::kSanitize, JobKind::kMeasure, JobKind::kRegress})
    EXPECT_TRUE(RunsOnGpu(k));
}

TEST(JobRequests, CompileNamesEachTargetOnce) {
  EXPECT_EQ(CompileRequest("c1", "", Contract("sm_120f", "sm_90"), "/s").compile().targets_size(),
            2);
  EXPECT_EQ(CompileRequest("c1", "", Contract("sm_90", "sm_90"), "/s").compile().targets_size(), 1);
}

TEST(JobRequests, SanitizeTimeoutCoversEveryTool) {
  using std::chrono::milliseconds;
  using std::chrono::seconds;
  auto c = Contract("sm_90", "sm_90");
  c.mutable_validation()->set_sanitizer_timeout_s(100);
  worker::KernelRef k;
  const auto r = SanitizeRequest("c1", c, k, {"memcheck", "racecheck", "synccheck"}, 1);
  EXPECT_EQ(JobTimeout(r, seconds(30), seconds(60)), seconds(3 * 100 + 60));
  // A lane limit longer than the tools' total wins.
  EXPECT_EQ(JobTimeout(r, seconds(30), seconds(3600)), seconds(3600));
  EXPECT_EQ(JobTimeout(CompileRequest("c1", "", c, "/s"), seconds(30), seconds(60)), seconds(30));
  EXPECT_EQ(JobTimeout(MeasureRequest("c1", c, k, k, 0, 1), seconds(30), seconds(60)), seconds(60));
}

}  // namespace
}  // namespace cake::server
