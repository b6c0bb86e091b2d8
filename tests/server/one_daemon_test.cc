// One daemon per state directory. A second caked on a state directory in use is refused before
// it touches anything (naming the first's pid and address), and the first keeps serving on its
// socket; once the first is gone (even killed), a new one starts there. A SIGTERM always drains:
// no thread of the daemon takes it but the main loop.
#include <gtest/gtest.h>

#include "absl/strings/str_cat.h"
#include "base/subprocess.h"
#include "daemon_fixture.h"

namespace cake {
namespace {

namespace fs = std::filesystem;
using testing::Daemon;

class OneDaemonTest : public testing::StateDirTest {
 protected:
  OneDaemonTest() : StateDirTest("caked_one") {}
};

TEST_F(OneDaemonTest, ASecondDaemonOnOneStateDirIsRefusedAndTheFirstKeepsServing) {
  Daemon first(state_);
  ASSERT_TRUE(first.Start()) << first.Log();
  const std::string contract = testing::CreateContract(first);
  ASSERT_FALSE(contract.empty());

  // Started by hand: the fixture would clear a socket it takes for a killed daemon's.
  base::SubprocessOptions o;
  o.timeout = std::chrono::seconds(30);
  auto second = base::RunSubprocess({CAKED_PATH, "--state-dir", state_.string(), "--no-gpu"}, o);
  ASSERT_TRUE(second.ok()) << second.status();
  EXPECT_EQ(second->exit_code, 1);
  EXPECT_NE(second->stderr_bytes.find(
                absl::StrCat("another caked owns ", state_.string(), " (pid ", first.pid(),
                             ", listening on unix:", (state_ / "caked.sock").string(), ")")),
            std::string::npos)
      << second->stderr_bytes;

  // The first still owns its socket and its ledger.
  EXPECT_TRUE(fs::exists(state_ / "caked.sock"));
  v1::StatusReply st;
  ASSERT_TRUE(first.stub()->Status(first.Ctx().get(), {}, &st).ok());
  ASSERT_EQ(st.contracts_size(), 1);
  EXPECT_EQ(st.contracts(0).contract_id(), contract);

  // Killed, the first leaves its lock to the kernel: the next start succeeds.
  first.Kill();
  Daemon third(state_);
  ASSERT_TRUE(third.Start()) << third.Log();
  v1::StatusReply again;
  ASSERT_TRUE(third.stub()->Status(third.Ctx().get(), {}, &again).ok());
  EXPECT_EQ(again.contracts_size(), 1);
}

// Every thread but the main one blocks SIGTERM and SIGINT (the main loop takes them with
// sigtimedwait, which unblocks them only while it waits). A thread that did not would take a
// SIGTERM whenever the loop is busy, and end the daemon undrained.
TEST_F(OneDaemonTest, OnlyTheMainLoopTakesSigterm) {
  Daemon d(state_);
  ASSERT_TRUE(d.Start()) << d.Log();
  const fs::path tasks = fs::path("/proc") / std::to_string(d.pid()) / "task";
  int threads = 0;
  for (const fs::directory_entry& task : fs::directory_iterator(tasks)) {
    if (task.path().filename() == std::to_string(d.pid())) continue;
    ++threads;
    const std::string status = Daemon::Read(task.path() / "status");
    const size_t at = status.find("SigBlk:");
    ASSERT_NE(at, std::string::npos);
    const uint64_t blocked = std::stoull(status.substr(at + 7), nullptr, 16);
    const std::string comm = Daemon::Read(task.path() / "comm");
    EXPECT_TRUE(blocked & (uint64_t{1} << (SIGTERM - 1))) << "thread " << comm;
    EXPECT_TRUE(blocked & (uint64_t{1} << (SIGINT - 1))) << "thread " << comm;
  }
  EXPECT_GT(threads, 3) << "gRPC's threads were not found";
  EXPECT_EQ(d.Stop(), 0);
  EXPECT_NE(d.Log().find("draining"), std::string::npos);
}

}  // namespace
}  // namespace cake
