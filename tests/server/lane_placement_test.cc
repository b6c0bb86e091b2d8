// Placement on a host with several devices, against a real caked and real workers: the CUDA
// driver is a stand-in (tests/fakes/fake_cuda_driver.cc) that lists an sm_90 + sm_120 host and
// runs nothing, so every GPU job fails as the machine's failure, on the lane that took it, and
// the ledger records which lane that was.
//   - each lane takes only jobs whose contract target its device executes;
//   - a device the boot's probe listed but that a worker seeing only it cannot open takes no job,
//     and the job runs on the other admitting lane;
//   - a device that dies under a job takes its lane out, and the job's retry runs on the other
//     admitting lane;
//   - no candidate gets a verdict from any of this;
//   - a CUDA_VISIBLE_DEVICES that hides every admissible device (and names one twice) is a status
//     line and a note, no job and no verdict.
#include <sqlite3.h>

#include <gtest/gtest.h>

#include <set>

#include "absl/strings/str_cat.h"
#include "daemon_fixture.h"
#include "tests/compiler/test_util.h"

namespace cake {
namespace {

namespace fs = std::filesystem;
using testing::Daemon;

constexpr const char* kHopperA = "GPU-a0000000-0000-0000-0000-000000000001";
constexpr const char* kBlackwell = "GPU-b0000000-0000-0000-0000-000000000002";
constexpr const char* kHopperC = "GPU-c0000000-0000-0000-0000-000000000003";

struct Attempt {
  std::string kind, device, error;
};

// Every recorded attempt of the candidate's jobs, read from the ledger.
std::vector<Attempt> Attempts(const fs::path& state, const std::string& candidate) {
  std::vector<Attempt> out;
  sqlite3* db = nullptr;
  if (sqlite3_open_v2((state / "ledger.db").c_str(), &db, SQLITE_OPEN_READONLY, nullptr) !=
      SQLITE_OK) {
    sqlite3_close(db);
    return out;
  }
  sqlite3_busy_timeout(db, 2000);
  sqlite3_stmt* s = nullptr;
  sqlite3_prepare_v2(
      db,
      "SELECT j.kind, a.device, a.error FROM job_attempts a JOIN jobs j ON j.id = a.job_id "
      "WHERE j.candidate_id = ? ORDER BY a.finished_ms",
      -1, &s, nullptr);
  sqlite3_bind_text(s, 1, candidate.c_str(), -1, SQLITE_TRANSIENT);
  while (sqlite3_step(s) == SQLITE_ROW)
    out.push_back({reinterpret_cast<const char*>(sqlite3_column_text(s, 0)),
                   reinterpret_cast<const char*>(sqlite3_column_text(s, 1)),
                   reinterpret_cast<const char*>(sqlite3_column_text(s, 2))});
  sqlite3_finalize(s);
  sqlite3_close(db);
  return out;
}

size_t GpuAttempts(const std::vector<Attempt>& attempts) {
  size_t n = 0;
  for (const Attempt& a : attempts) n += a.kind != "compile";
  return n;
}

v1::StatusReply Status(Daemon& d) {
  v1::StatusReply s;
  EXPECT_TRUE(d.stub()->Status(d.Ctx().get(), v1::StatusRequest(), &s).ok());
  return s;
}

// The bundled GEMM contract, executed on `target`; its baseline's candidate id.
std::string CreateFor(Daemon& d, const std::string& target, std::string* contract_id) {
  v1::CreateContractRequest req;
  *req.mutable_contract() = testing::BundledContract();
  req.mutable_contract()->set_execution_target(target);
  req.mutable_contract()->set_compile_target("sm_120f");
  v1::CreateContractReply reply;
  grpc::Status s = d.stub()->CreateContract(d.Ctx("operator").get(), req, &reply);
  EXPECT_TRUE(s.ok()) << s.error_message();
  *contract_id = reply.contract_id();
  v1::ListCandidatesRequest lr;
  lr.set_contract_id(reply.contract_id());
  v1::ListCandidatesReply page;
  EXPECT_TRUE(d.stub()->ListCandidates(d.Ctx().get(), lr, &page).ok());
  return page.candidates_size() == 1 ? page.candidates(0).id() : "";
}

bool Eventually(const std::function<bool()>& pred, std::chrono::seconds limit) {
  const auto end = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < end) {
    if (pred()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(250));
  }
  return pred();
}

class LanePlacementTest : public testing::StateDirTest {
 protected:
  LanePlacementTest() : StateDirTest("caked_lanes") {}
  void TearDown() override {
    std::error_code ec;
    for (const fs::path& dir : scratch_) fs::remove_all(dir, ec);
    StateDirTest::TearDown();
  }

  // A fresh folder outside the state directory, removed after the test.
  fs::path Scratch(const std::string& name) {
    scratch_.push_back(testing::FreshDir(name));
    return scratch_.back();
  }

  // The fake driver in a folder of its own (outside the state directory, which workers may not
  // read), with its device list, the devices that cannot be opened, and those that die under the
  // first job that opens them.
  fs::path FakeDriver(const std::vector<std::string>& broken,
                      const std::vector<std::string>& dies = {}) {
    const fs::path dir = Scratch("fake_cuda");
    fs::copy_file(FAKE_CUDA_DRIVER, dir / "libcuda.so.1");
    std::ofstream(dir / "devices.txt")
        << "a0000000000000000000000000000001 9.0 132 NVIDIA H100 80GB HBM3\n"
        << "b0000000000000000000000000000002 12.0 170 NVIDIA GeForce RTX 5090\n"
        << "c0000000000000000000000000000003 9.0 132 NVIDIA H100 80GB HBM3\n";
    std::ofstream b(dir / "broken.txt");
    for (const std::string& uuid : broken) b << uuid << "\n";
    std::ofstream d(dir / "dies.txt");
    for (const std::string& uuid : dies) d << uuid << "\n";
    return dir / "libcuda.so.1";
  }

 private:
  std::vector<fs::path> scratch_;
};

TEST_F(LanePlacementTest, EachLaneTakesOnlyJobsItsDeviceExecutesAndABrokenDeviceTakesNone) {
  Daemon d(state_, CAKED_PATH, /*no_gpu=*/false);
  ASSERT_TRUE(d.Start({}, {absl::StrCat("CAKE_LIBCUDA=", FakeDriver({kHopperA}).string())}))
      << d.Log();
  // The boot's probe lists all three; H100 A does not answer its lane's own probe.
  ASSERT_TRUE(Eventually(
      [&] {
        const v1::StatusReply s = Status(d);
        return s.devices_size() == 3 && s.devices(0).state().rfind("not answering", 0) == 0 &&
               s.devices(1).state() == "idle" && s.devices(2).state() == "idle";
      },
      std::chrono::seconds(30)))
      << Status(d).DebugString() << d.Log();
  {
    const v1::StatusReply s = Status(d);
    EXPECT_EQ(s.devices(0).uuid(), kHopperA);
    EXPECT_EQ(s.devices(1).uuid(), kBlackwell);
    EXPECT_EQ(s.devices(2).uuid(), kHopperC);
    EXPECT_EQ(s.devices(0).profile(), s.devices(2).profile()) << "identical cards, one profile";
    EXPECT_NE(s.devices(0).profile(), s.devices(1).profile());
    EXPECT_NE(d.Log().find("does not answer as its lane starts"), std::string::npos);
  }

  std::string hopper_contract, blackwell_contract;
  const std::string on_hopper = CreateFor(d, "sm_90", &hopper_contract);
  const std::string on_blackwell = CreateFor(d, "sm_120f", &blackwell_contract);
  ASSERT_FALSE(on_hopper.empty());
  ASSERT_FALSE(on_blackwell.empty());
  // Each baseline compiles, is admitted to validation, and fails to open its device more than
  // once (the machine's failure, retried after 2 s).
  ASSERT_TRUE(Eventually(
      [&] {
        return GpuAttempts(Attempts(state_, on_hopper)) >= 2 &&
               GpuAttempts(Attempts(state_, on_blackwell)) >= 2;
      },
      std::chrono::seconds(300)))
      << d.Log();
  for (const Attempt& a : Attempts(state_, on_hopper))
    if (a.kind != "compile") {
      EXPECT_EQ(a.device, kHopperC) << a.kind << ": only the H100 that answers runs sm_90 jobs";
      EXPECT_NE(a.error.find("CUDA_ERROR_NOT_SUPPORTED"), std::string::npos) << a.error;
    } else {
      EXPECT_EQ(a.device, "") << "a compile runs on a CPU lane";
    }
  for (const Attempt& a : Attempts(state_, on_blackwell))
    if (a.kind != "compile") {
      EXPECT_EQ(a.device, kBlackwell) << a.kind << ": only the RTX 5090 runs sm_120f jobs";
    }
  // No verdict: each waits on the machine, saying why.
  for (const std::string& id : {on_hopper, on_blackwell}) {
    v1::GetCandidateRequest g;
    g.set_candidate_id(id);
    evidence::Candidate c;
    ASSERT_TRUE(d.stub()->GetCandidate(d.Ctx().get(), g, &c).ok());
    EXPECT_NE(c.state(), evidence::REJECTED) << c.status_note();
    EXPECT_NE(c.state(), evidence::VALIDATED) << c.status_note();
  }
  const v1::StatusReply s = Status(d);
  EXPECT_EQ(s.devices(0).jobs_run(), 0) << "the broken H100 took a job";
  EXPECT_GE(s.devices(1).jobs_run(), 2);
  EXPECT_GE(s.devices(2).jobs_run(), 2);
  EXPECT_GT(s.devices(1).busy_seconds(), 0);
  EXPECT_GT(s.devices(2).busy_seconds(), 0);
  EXPECT_EQ(d.Stop(), 0);
}

TEST_F(LanePlacementTest, ACardThatDiesUnderAJobTakesItsLaneOutAndTheRetryRunsOnTheOther) {
  Daemon d(state_, CAKED_PATH, /*no_gpu=*/false);
  // Both H100s die under the first job that opens them (the fault folder is where the stand-in
  // driver remembers it).
  const fs::path faults = Scratch("fake_cuda_faults");
  ASSERT_TRUE(
      d.Start({}, {absl::StrCat("CAKE_LIBCUDA=", FakeDriver({}, {kHopperA, kHopperC}).string()),
                   absl::StrCat("CAKE_WORKER_FAULT_DIR=", faults.string())}))
      << d.Log();
  std::string contract;
  const std::string baseline = CreateFor(d, "sm_90", &contract);
  ASSERT_FALSE(baseline.empty());
  ASSERT_TRUE(Eventually([&] { return GpuAttempts(Attempts(state_, baseline)) >= 2; },
                         std::chrono::seconds(180)))
      << d.Log();
  std::vector<Attempt> gpu;
  for (const Attempt& a : Attempts(state_, baseline))
    if (a.kind != "compile") gpu.push_back(a);
  ASSERT_GE(gpu.size(), 2u);
  const std::set<std::string> hoppers = {kHopperA, kHopperC};
  EXPECT_TRUE(hoppers.count(gpu[0].device)) << gpu[0].device;
  EXPECT_TRUE(hoppers.count(gpu[1].device)) << gpu[1].device;
  EXPECT_NE(gpu[0].device, gpu[1].device) << "the retry ran on the card that had died";
  for (const Attempt& a : gpu)
    EXPECT_NE(a.error.find("CUDA_ERROR_ECC_UNCORRECTABLE"), std::string::npos) << a.error;
  // Both lanes out; the 5090 never took the sm_90 job; no third attempt (the retry after 10 s
  // finds no lane that admits it and answers), and no verdict.
  ASSERT_TRUE(Eventually(
      [&] {
        const v1::StatusReply s = Status(d);
        return s.devices_size() == 3 && s.devices(0).state().rfind("not answering", 0) == 0 &&
               s.devices(2).state().rfind("not answering", 0) == 0;
      },
      std::chrono::seconds(30)))
      << Status(d).DebugString();
  std::this_thread::sleep_for(std::chrono::seconds(12));
  EXPECT_EQ(GpuAttempts(Attempts(state_, baseline)), 2u);
  const v1::StatusReply s = Status(d);
  EXPECT_EQ(s.devices(1).jobs_run(), 0);
  EXPECT_EQ(s.devices(1).state(), "idle");
  EXPECT_EQ(s.devices(0).jobs_run() + s.devices(2).jobs_run(), 2);
  v1::GetCandidateRequest g;
  g.set_candidate_id(baseline);
  evidence::Candidate c;
  ASSERT_TRUE(d.stub()->GetCandidate(d.Ctx().get(), g, &c).ok());
  EXPECT_NE(c.state(), evidence::REJECTED) << c.status_note();
  EXPECT_EQ(d.Stop(), 0);
}

TEST_F(LanePlacementTest, HidingEveryAdmissibleDeviceIsAStatusLineNotAVerdict) {
  Daemon d(state_, CAKED_PATH, /*no_gpu=*/false);
  // Only the RTX 5090, named twice.
  ASSERT_TRUE(d.Start({}, {absl::StrCat("CAKE_LIBCUDA=", FakeDriver({}).string()),
                           absl::StrCat("CUDA_VISIBLE_DEVICES=", kBlackwell, ",", kBlackwell)}))
      << d.Log();
  v1::StatusReply s = Status(d);
  ASSERT_EQ(s.devices_size(), 1) << s.DebugString();
  EXPECT_EQ(s.devices(0).uuid(), kBlackwell);
  EXPECT_NE(d.Log().find("is listed twice"), std::string::npos) << d.Log();
  std::string contract;
  const std::string baseline = CreateFor(d, "sm_90", &contract);
  ASSERT_FALSE(baseline.empty());
  const std::string why = absl::StrCat("no device for target sm_90 on this host: ", kBlackwell,
                                       " is sm_120 (NVIDIA GeForce RTX 5090 (12.0))");
  s = Status(d);
  ASSERT_EQ(s.contracts_size(), 1);
  EXPECT_EQ(s.contracts(0).execution().rfind(why, 0), 0u) << s.contracts(0).execution();
  ASSERT_TRUE(d.WaitFor(baseline, [](const evidence::Candidate& c) {
    return c.state() == evidence::COMPILED;
  })) << d.Log();
  v1::GetCandidateRequest g;
  g.set_candidate_id(baseline);
  evidence::Candidate c;
  ASSERT_TRUE(d.stub()->GetCandidate(d.Ctx().get(), g, &c).ok());
  EXPECT_NE(c.status_note().find(why), std::string::npos) << c.status_note();
  std::this_thread::sleep_for(std::chrono::seconds(1));
  EXPECT_EQ(GpuAttempts(Attempts(state_, baseline)), 0u);
  EXPECT_EQ(Status(d).devices(0).jobs_run(), 0);
  EXPECT_EQ(d.Stop(), 0);
}

// Jobs queued while an H100 was visible, after a restart that hides both H100s: no lane admits
// them, status counts them as unplaced, and the RTX 5090 never takes one.
TEST_F(LanePlacementTest, JobsNoLaneAdmitsAfterARestartWaitAndAreCounted) {
  const fs::path driver = FakeDriver({});
  std::string contract, baseline;
  {
    Daemon d(state_, CAKED_PATH, /*no_gpu=*/false);
    ASSERT_TRUE(d.Start({}, {absl::StrCat("CAKE_LIBCUDA=", driver.string())})) << d.Log();
    baseline = CreateFor(d, "sm_90", &contract);
    ASSERT_FALSE(baseline.empty());
    ASSERT_TRUE(Eventually([&] { return GpuAttempts(Attempts(state_, baseline)) >= 1; },
                           std::chrono::seconds(180)))
        << d.Log();
    EXPECT_EQ(Status(d).unplaced_jobs(), 0);
    EXPECT_EQ(d.Stop(), 0);
  }
  const size_t attempts = GpuAttempts(Attempts(state_, baseline));
  Daemon d(state_, CAKED_PATH, /*no_gpu=*/false);
  ASSERT_TRUE(d.Start({}, {absl::StrCat("CAKE_LIBCUDA=", driver.string()),
                           absl::StrCat("CUDA_VISIBLE_DEVICES=", kBlackwell)}))
      << d.Log();
  // Once its retry is due, the validate job is queued and placed nowhere.
  ASSERT_TRUE(Eventually([&] { return Status(d).unplaced_jobs() == 1; }, std::chrono::seconds(40)))
      << Status(d).DebugString();
  const v1::StatusReply s = Status(d);
  ASSERT_EQ(s.devices_size(), 1);
  EXPECT_EQ(s.devices(0).admitted_queued_jobs(), 0);
  EXPECT_EQ(s.devices(0).jobs_run(), 0);
  EXPECT_EQ(GpuAttempts(Attempts(state_, baseline)), attempts);
  EXPECT_EQ(d.Stop(), 0);
}

}  // namespace
}  // namespace cake
