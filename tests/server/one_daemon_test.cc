// One daemon per state directory. A second caked on a state directory in use is refused before
// it touches anything (naming the first's pid and address), and the first keeps serving on its
// socket; once the first is gone (even killed), a new one starts there.
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

}  // namespace
}  // namespace cake
