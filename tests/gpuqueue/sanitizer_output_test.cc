// Parsing compute-sanitizer's summaries (text as the 2025.x tools print it), the sanitize job
// without compute-sanitizer (every record NOT_RUN with the reason, never PASSED), and the poison
// count that decides "unwritten".
#include <gtest/gtest.h>

#include <limits>

#include "gpuqueue/worker/validate_runner.h"
#include "gpuqueue/worker/worker_jobs.h"
#include "workloads/workload.h"

namespace cake {
namespace {

TEST(SanitizerOutput, SummariesAreCountedPerTool) {
  EXPECT_EQ(gpuqueue::SanitizerErrors("memcheck", "========= ERROR SUMMARY: 0 errors\n"), 0);
  EXPECT_EQ(gpuqueue::SanitizerErrors(
                "memcheck",
                "========= Invalid __global__ write of size 2 bytes\n=========     at "
                "cake_corpus_gemm+0x5c0\n========= ERROR SUMMARY: 1 error\n"),
            1);
  EXPECT_EQ(
      gpuqueue::SanitizerErrors(
          "racecheck", "========= RACECHECK SUMMARY: 3 hazards displayed (2 errors, 1 warning)\n"),
      2);
  EXPECT_EQ(gpuqueue::SanitizerErrors("racecheck",
                                      "========= RACECHECK SUMMARY: 0 hazards displayed (0 "
                                      "errors, 0 warnings)\n"),
            0);
  EXPECT_EQ(gpuqueue::SanitizerErrors("initcheck", "the target crashed before any summary\n"), -1)
      << "no summary is no verdict";
  // A count past an int is still that many errors, never an exception out of the worker.
  EXPECT_EQ(gpuqueue::SanitizerErrors("memcheck",
                                      "========= ERROR SUMMARY: 99999999999999999999 "
                                      "errors\n"),
            std::numeric_limits<int>::max());
  EXPECT_EQ(gpuqueue::SanitizerErrors("racecheck",
                                      "RACECHECK SUMMARY: 5 hazards displayed (4294967296 errors"),
            std::numeric_limits<int>::max());
}

TEST(SanitizeJob, WithoutTheToolEveryRecordIsNotRunNeverPassed) {
  setenv("CAKE_COMPUTE_SANITIZER", "/nonexistent/compute-sanitizer", 1);
  worker::Request r;
  worker::SanitizeJob* job = r.mutable_sanitize();
  job->mutable_contract()->set_operation("gemm_bf16_tn");
  *job->mutable_contract()->mutable_validation() =
      workloads::FindWorkload("gemm_bf16_tn")->DefaultPolicy();
  for (const char* t : {"memcheck", "racecheck"}) job->add_tools(t);
  const worker::Reply reply = gpuqueue::RunWorkerRequest(r);
  ASSERT_TRUE(reply.ok());
  ASSERT_EQ(reply.validation().records_size(), 2);
  for (const auto& rec : reply.validation().records()) {
    EXPECT_EQ(rec.kind(), evidence::SANITIZER);
    EXPECT_NE(rec.status(), evidence::PASSED);
    EXPECT_FALSE(rec.failure().empty());
  }
  EXPECT_FALSE(reply.validation().passed());
}

}  // namespace
}  // namespace cake

namespace cake {
namespace {

// Unwritten outputs are recognized by the poison's exact bits, not by NaN: a propagated NaN
// (0x7FC0 in BF16) is a written value.
TEST(Poison, CountsOnlyTheExactPoisonPattern) {
  const std::string bf16("\xFF\xFF\xC0\x7F\xFF\xFF\x80\x3F", 8);  // poison, NaN, poison, 1.0
  EXPECT_EQ(gpuqueue::CountPoison(bf16, 2), 2);
  const std::string f32("\xFF\xFF\xFF\xFF\x00\x00\xC0\x7F", 8);  // poison, NaN
  EXPECT_EQ(gpuqueue::CountPoison(f32, 4), 1);
}

}  // namespace
}  // namespace cake
