// Faults of the machine, against a real caked and real workers, are never verdicts on a
// schedule: a worker that cannot be executed, a disk full while nvcc's input is written, a disk
// full while the result is saved. Each candidate waits (not REJECTED), says why, and runs to its
// true verdict (Compiled, without a GPU) once the fault clears; the daemon keeps serving, no job
// is left RUNNING without a worker, and status names the machine's failure.
#include <gtest/gtest.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include "absl/strings/str_cat.h"
#include "daemon_fixture.h"
#include "tests/compiler/test_util.h"
#include "workloads/gemm_bf16/space.h"

namespace cake {
namespace {

namespace fs = std::filesystem;
using testing::Daemon;

bool IsState(const evidence::Candidate& c, evidence::CandidateState s) { return c.state() == s; }

std::string Schedule(int variant) {
  const auto space = workloads::gemm_bf16::WarpGemmCandidates();
  std::string text;
  google::protobuf::TextFormat::PrintToString(
      workloads::gemm_bf16::MakeWarpGemm(space.at(static_cast<size_t>(variant))), &text);
  return text;
}

std::string ProposeOne(Daemon& d, const std::string& contract, int variant) {
  v1::ProposeRequest req;
  req.set_contract_id(contract);
  req.set_schedule_text(Schedule(variant));
  *req.mutable_hypothesis() = testing::AgentHypothesis(d, contract);
  v1::ProposeReply reply;
  grpc::Status s = d.stub()->Propose(d.Ctx("agent").get(), req, &reply);
  EXPECT_TRUE(s.ok()) << s.error_message();
  return reply.candidate_id();
}

// The bundled contract, once its baseline has compiled (the machine still sound).
std::string ContractWithItsBaselineCompiled(Daemon& d) {
  const std::string contract = testing::CreateContract(d);
  v1::ListCandidatesRequest lr;
  lr.set_contract_id(contract);
  v1::ListCandidatesReply page;
  EXPECT_TRUE(d.stub()->ListCandidates(d.Ctx().get(), lr, &page).ok());
  EXPECT_EQ(page.candidates_size(), 1);
  if (page.candidates_size() == 1) {
    EXPECT_TRUE(d.WaitFor(page.candidates(0).id(), [](const evidence::Candidate& c) {
      return IsState(c, evidence::COMPILED);
    })) << d.Log();
  }
  return contract;
}

// The candidate's note names the machine's failure while it waits, and it is never rejected.
void ExpectWaitingOnTheMachine(Daemon& d, const std::string& id, const std::string& why) {
  EXPECT_TRUE(d.WaitFor(
      id,
      [&](const evidence::Candidate& c) {
        return c.status_note().find("waiting on the machine") != std::string::npos &&
               c.status_note().find(why) != std::string::npos;
      },
      std::chrono::seconds(60)))
      << d.Log();
  v1::GetCandidateRequest g;
  g.set_candidate_id(id);
  evidence::Candidate c;
  ASSERT_TRUE(d.stub()->GetCandidate(d.Ctx().get(), g, &c).ok());
  EXPECT_NE(c.state(), evidence::REJECTED) << c.status_note();
}

class MachineFailureTest : public testing::StateDirTest {
 protected:
  MachineFailureTest() : StateDirTest("caked_machine") {}
  // A private mount namespace for the disk-full tests' small file systems (root only).
  static void SetUpTestSuite() {
    private_mounts_ = ::geteuid() == 0 && ::unshare(CLONE_NEWNS) == 0 &&
                      ::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) == 0;
  }
  // A `megabytes` tmpfs at `dir`, or a skip.
  bool SmallDisk(const fs::path& dir, int megabytes) {
    fs::create_directories(dir);
    if (!private_mounts_) return false;
    const std::string opts = absl::StrCat("size=", megabytes, "m,mode=0755");
    if (::mount("tmpfs", dir.c_str(), "tmpfs", 0, opts.c_str()) != 0) return false;
    mounts_.push_back(dir);
    return true;
  }
  void TearDown() override {
    for (auto it = mounts_.rbegin(); it != mounts_.rend(); ++it) ::umount2(it->c_str(), MNT_DETACH);
    StateDirTest::TearDown();
  }
  static bool private_mounts_;
  std::vector<fs::path> mounts_;
};
bool MachineFailureTest::private_mounts_ = false;

TEST_F(MachineFailureTest, AWorkerThatCannotBeExecutedIsRetriedNotRejected) {
  const fs::path bin = testing::FreshDir("cake_worker_copy");
  ::chmod(bin.c_str(), 0755);
  const fs::path worker = bin / "cake-worker";
  fs::copy_file(fs::path(CAKED_PATH).parent_path() / "cake-worker", worker);
  ::chmod(worker.c_str(), 0755);
  Daemon d(state_);
  ASSERT_TRUE(d.Start({"--worker-path", worker.string()})) << d.Log();
  const std::string contract = ContractWithItsBaselineCompiled(d);
  ::chmod(worker.c_str(), 0);  // now no job's worker can be executed
  const std::string id = ProposeOne(d, contract, 1);
  ExpectWaitingOnTheMachine(d, id, "Permission denied");
  v1::StatusReply st;
  ASSERT_TRUE(d.stub()->Status(d.Ctx().get(), {}, &st).ok());
  EXPECT_NE(st.machine_failure().find("cannot start worker"), std::string::npos)
      << st.machine_failure();
  ::chmod(worker.c_str(), 0755);  // fixed: the next retry runs it to its verdict
  EXPECT_TRUE(d.WaitFor(id, [](const evidence::Candidate& c) {
    return IsState(c, evidence::COMPILED);
  })) << d.Log();
  fs::remove_all(bin);
}

TEST_F(MachineFailureTest, ADiskFullWhileCompilingIsRetriedOnceSpaceReturns) {
  // The artifact store (where nvcc's input and output are written) on a small disk.
  if (!SmallDisk(state_ / "artifacts", 64)) GTEST_SKIP() << "no private tmpfs here (needs root)";
  Daemon d(state_);
  ASSERT_TRUE(d.Start()) << d.Log();
  const std::string contract = ContractWithItsBaselineCompiled(d);
  // Fill it to the last byte.
  {
    std::ofstream fill(state_ / "artifacts" / "fill", std::ios::binary);
    const std::string block(1 << 16, 'x');
    while (fill.write(block.data(), block.size())) {
    }
  }
  {
    std::ofstream tail(state_ / "artifacts" / "fill.tail", std::ios::binary);
    while (tail.put('x') && tail.flush()) {
    }
  }
  const std::string id = ProposeOne(d, contract, 1);
  ExpectWaitingOnTheMachine(d, id, "No space left on device");
  v1::StatusReply st;
  ASSERT_TRUE(d.stub()->Status(d.Ctx().get(), {}, &st).ok());
  EXPECT_NE(st.machine_failure().find("No space left on device"), std::string::npos)
      << st.machine_failure();
  fs::remove(state_ / "artifacts" / "fill");
  fs::remove(state_ / "artifacts" / "fill.tail");
  EXPECT_TRUE(d.WaitFor(id, [](const evidence::Candidate& c) {
    return IsState(c, evidence::COMPILED);
  })) << d.Log();
}

TEST_F(MachineFailureTest, ADiskFullWhileSavingTheResultIsRetriedOnceSpaceReturns) {
  // The whole state directory (ledger included) on a small disk; the worker fills it after its
  // compile, before its reply, so the daemon saves the result on a full disk.
  if (!SmallDisk(state_, 96)) GTEST_SKIP() << "no private tmpfs here (needs root)";
  const fs::path faults = state_ / "faults";
  fs::create_directories(faults);
  ::chmod(faults.c_str(), 0777);
  Daemon d(state_);
  ASSERT_TRUE(d.Start({}, {"CAKE_WORKER_FAULT_DIR=" + faults.string()})) << d.Log();
  const std::string contract = ContractWithItsBaselineCompiled(d);
  std::ofstream(faults / "compile.fill_disk") << "";
  const std::string id = ProposeOne(d, contract, 1);
  // The daemon says so while the disk is full (its log, on that disk too, cannot), and keeps
  // serving reads.
  v1::StatusReply st;
  bool said = false;
  for (int i = 0; i < 300 && !said; ++i) {
    said = d.stub()->Status(d.Ctx().get(), {}, &st).ok() &&
           st.machine_failure().find("recording the result failed") != std::string::npos;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  EXPECT_TRUE(said) << st.machine_failure() << "\n" << d.Log();
  // Space returns: the job's end is recorded, it runs again and its result is saved.
  for (const auto& e : fs::directory_iterator(faults))
    if (e.path().filename().string().rfind("fill", 0) == 0) fs::remove(e.path());
  EXPECT_TRUE(d.WaitFor(id, [](const evidence::Candidate& c) {
    return IsState(c, evidence::COMPILED);
  })) << d.Log();
  ASSERT_TRUE(d.stub()->Status(d.Ctx().get(), {}, &st).ok());
  EXPECT_EQ(st.running_jobs(), 0) << "a job left RUNNING without a worker";
  EXPECT_NE(d.Log().find("its failure is recorded now"), std::string::npos) << d.Log();
}

}  // namespace
}  // namespace cake
