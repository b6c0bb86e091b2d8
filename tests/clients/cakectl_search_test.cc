// `cakectl search`: the durations --budget reads, what it refuses before asking the
// daemon (zero, a sign, a unit it does not know, a number with nothing to scale, an overflow), and
// the summary it prints of a report recorded on a GPU machine; `cakectl space --search`, the
// search's points written for offline compilation and benches.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "clients/cakectl_commands.h"
#include "clients/cakectl_search.h"
#include "google/protobuf/util/json_util.h"
#include "workloads/workload.h"

namespace cake::clients {
namespace {

TEST(SearchBudget, ReadsSecondsMinutesAndHours) {
  EXPECT_EQ(ParseBudget("90"), 90);
  EXPECT_EQ(ParseBudget("90s"), 90);
  EXPECT_EQ(ParseBudget("20m"), 1200);
  EXPECT_EQ(ParseBudget("1h"), 3600);
  EXPECT_EQ(ParseBudget("1h30m"), 5400);
  EXPECT_EQ(ParseBudget("1h0m5"), 3605);
  EXPECT_EQ(ParseBudget("24h"), 86400);
}

TEST(SearchBudget, RefusesWhatIsNotADuration) {
  for (const char* bad : {"", "0", "0m", "-5m", "5x", "m", "h1", "1.5h", " 5m", "5m ",
                          "99999999999999999999h", "20 m"})
    EXPECT_FALSE(ParseBudget(bad).has_value()) << "'" << bad << "'";
}

// The summary of a report recorded on a GPU machine (evidence/search/): what was tried,
// predicted and measured, the rate, the model and the incumbent's schedule.
TEST(SearchSummary, PrintsARecordedReport) {
  std::ifstream in(std::string(std::getenv("CAKE_SOURCE_DIR")) +
                   "/evidence/search/2026-12-07_334d144_h100/search.json");
  std::stringstream json;
  json << in.rdbuf();
  v1::SearchReport r;
  ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(json.str(), &r).ok());
  ::testing::internal::CaptureStdout();
  PrintSearchSummary(r);
  const std::string out = ::testing::internal::GetCapturedStdout();
  EXPECT_NE(out.find("finished (budget)"), std::string::npos) << out;
  EXPECT_NE(out.find("12 proposed, 6 measured in 5.0 min (72 measured per hour)"),
            std::string::npos)
      << out;
  EXPECT_NE(out.find("= 128x128x64 w2x2 s3 swz128 x4 bf16 tma g16 st"), std::string::npos) << out;
  EXPECT_NE(out.find("fitted on 18 row medians of 6 schedules"), std::string::npos) << out;
  // Measured first, fastest first: the promoted point leads the table.
  EXPECT_LT(out.find("c2-27266009"), out.find("c1-1b15bcce")) << out;
}

// Every point of the search space, in its order, under names that sort in that order.
TEST(SpaceCommand, WritesTheSearchSpace) {
  const std::filesystem::path dir =
      std::filesystem::path(::testing::TempDir()) / "cakectl_space_search";
  std::filesystem::remove_all(dir);
  // A workload whose search enumerates more than its proposer's list (any will do).
  std::string op;
  for (const std::string& name : workloads::RegisteredOperations()) {
    const workloads::Workload* w = workloads::FindWorkload(name);
    if (w->SearchSpace().size() > w->ScheduleSpace().size()) op = name;
  }
  ASSERT_FALSE(op.empty());
  const workloads::Workload* w = workloads::FindWorkload(op);
  const std::vector<workloads::Proposal> space = w->SearchSpace();
  ::testing::internal::CaptureStdout();
  ASSERT_EQ(WriteSpace(op, dir.string(), /*search_space=*/true), 0);
  ::testing::internal::GetCapturedStdout();
  std::ifstream labels(dir / "labels.txt");
  std::string line;
  size_t i = 0;
  for (; std::getline(labels, line); ++i) {
    ASSERT_LT(i, space.size());
    const std::string file = line.substr(0, line.find('\t'));
    EXPECT_EQ(line.substr(line.find('\t') + 1), space[i].label);
    std::stringstream text;
    text << std::ifstream(dir / file).rdbuf();
    EXPECT_EQ(text.str(), space[i].schedule_text) << file;
  }
  EXPECT_EQ(i, space.size());
  ::testing::internal::CaptureStderr();
  EXPECT_EQ(WriteSpace("no_such_operation", dir.string(), true), 2);
  EXPECT_NE(::testing::internal::GetCapturedStderr().find("no_such_operation"), std::string::npos);
}

}  // namespace
}  // namespace cake::clients
