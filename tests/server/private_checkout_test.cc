// A checkout in a private (0700) folder, as a root user's clone into $HOME or `mktemp -d` is: a
// root caked runs its workers as uid 65534, which cannot reach anything in there. The daemon
// either runs its jobs anyway (it copies the worker and cuobjdump where that uid can run them)
// or refuses to start with one line naming the uid, the path and the mode of the folder that
// blocks it, and the fix; never a daemon that starts and then rejects every schedule.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include "absl/strings/str_cat.h"
#include "base/digest.h"
#include "compiler/toolchain.h"
#include "daemon_fixture.h"
#include "server/worker_paths.h"
#include "tests/compiler/test_util.h"

namespace cake {
namespace {

namespace fs = std::filesystem;
using testing::Daemon;

class PrivateCheckoutTest : public testing::StateDirTest {
 protected:
  PrivateCheckoutTest() : StateDirTest("caked_private") {}
  void SetUp() override {
    StateDirTest::SetUp();
    if (::geteuid() != 0) GTEST_SKIP() << "only a root caked changes its workers' uid";
    checkout_ = testing::FreshDir("cake_private_checkout");
    ::chmod(checkout_.c_str(), 0700);
    fs::create_directories(checkout_ / "build" / "bin");
    for (const char* exe : {"caked", "cake-worker"})
      fs::copy_file(fs::path(CAKED_PATH).parent_path() / exe, checkout_ / "build" / "bin" / exe);
    runtime_ = testing::FreshDir("cake_runtime");
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(checkout_, ec);
    fs::remove_all(runtime_, ec);
    StateDirTest::TearDown();
  }
  std::string Caked() const { return (checkout_ / "build" / "bin" / "caked").string(); }
  fs::path checkout_, runtime_;
};

TEST_F(PrivateCheckoutTest, JobsRunFromCopiesTheWorkerUidCanReach) {
  auto tc = compiler::DetectToolchain();
  if (!tc.ok()) GTEST_SKIP() << tc.status();
  // The project's own cuobjdump, as bootstrap installs it into the checkout.
  fs::create_directories(checkout_ / ".toolchain" / "bin");
  const fs::path cuobjdump = checkout_ / ".toolchain" / "bin" / "cuobjdump";
  fs::copy_file(tc->cuobjdump, cuobjdump);
  const fs::path nvdisasm = fs::canonical(tc->cuobjdump).parent_path() / "nvdisasm";
  if (fs::exists(nvdisasm)) fs::copy_file(nvdisasm, cuobjdump.parent_path() / "nvdisasm");
  Daemon d(state_, Caked());
  ASSERT_TRUE(
      d.Start({"--runtime-dir", runtime_.string()}, {"CAKE_CUOBJDUMP=" + cuobjdump.string()}))
      << d.Log();
  const std::string log = d.Log();
  EXPECT_NE(
      log.find(absl::StrCat("cannot reach the worker at ", Caked().substr(0, Caked().size() - 5),
                            "cake-worker (", checkout_.string(), " is mode 0700)")),
      std::string::npos)
      << log;
  EXPECT_NE(log.find("cannot reach cuobjdump"), std::string::npos) << log;
  struct stat st;
  ASSERT_EQ(::stat((runtime_ / "bin" / "cake-worker").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0755u);
  EXPECT_EQ(st.st_uid, 0u);
  const std::string contract = testing::CreateContract(d);
  v1::ListCandidatesRequest lr;
  lr.set_contract_id(contract);
  v1::ListCandidatesReply page;
  ASSERT_TRUE(d.stub()->ListCandidates(d.Ctx().get(), lr, &page).ok());
  ASSERT_EQ(page.candidates_size(), 1);
  EXPECT_TRUE(d.WaitFor(page.candidates(0).id(), [](const evidence::Candidate& c) {
    return c.state() == evidence::COMPILED;
  })) << d.Log();
  // The copies are the daemon's: a clean stop removes them, not the folder it was given.
  EXPECT_EQ(d.Stop(), 0) << d.Log();
  EXPECT_FALSE(fs::exists(runtime_ / "bin"));
  EXPECT_TRUE(fs::exists(runtime_));
}

TEST_F(PrivateCheckoutTest, DefaultRuntimeFoldersGoWithTheirDaemonOrTheirStateFolder) {
  // Each daemon copies ~60 MB under /run/cake/SCOPE; left behind by every stop, they filled disks.
  const auto scope_of = [](const fs::path& state) {
    return fs::path(server::kDefaultRuntimeParent) /
           base::Sha256Hex(fs::absolute(state).lexically_normal().string()).substr(0, 12);
  };
  const fs::path scope = scope_of(state_);
  Daemon d(state_, Caked());
  ASSERT_TRUE(d.Start({}, {"RUNTIME_DIRECTORY="})) << d.Log();
  EXPECT_TRUE(fs::exists(scope / "bin" / "cake-worker")) << d.Log();
  EXPECT_EQ(testing::ReadText(scope / "state_dir"),
            fs::absolute(state_).lexically_normal().string());
  EXPECT_EQ(d.Stop(), 0) << d.Log();
  EXPECT_FALSE(fs::exists(scope)) << "a clean stop removes its runtime folder";

  // A daemon killed before it could clean up leaves its copies; the next start (of any state
  // folder) removes them once their state folder is gone, and keeps those of live ones.
  ASSERT_TRUE(d.Start({}, {"RUNTIME_DIRECTORY="})) << d.Log();
  d.Kill();
  ASSERT_TRUE(fs::exists(scope / "bin" / "cake-worker"));
  const fs::path unrelated = fs::path(server::kDefaultRuntimeParent) / "not-made-by-caked";
  fs::create_directories(unrelated);
  const fs::path other_state = testing::FreshDir("caked_private_other");
  const fs::path other_scope = scope_of(other_state);
  {
    Daemon other(other_state, Caked());
    ASSERT_TRUE(other.Start({}, {"RUNTIME_DIRECTORY="})) << other.Log();
    EXPECT_TRUE(fs::exists(scope)) << "its state folder still exists: " << other.Log();
    EXPECT_EQ(other.Stop(), 0);
    std::error_code ec;
    fs::remove_all(state_, ec);
    ASSERT_TRUE(other.Start({}, {"RUNTIME_DIRECTORY="})) << other.Log();
    EXPECT_FALSE(fs::exists(scope)) << other.Log();
    EXPECT_NE(other.Log().find("removed 1 runtime folder(s) under /run/cake"), std::string::npos)
        << other.Log();
    EXPECT_TRUE(fs::exists(unrelated)) << "a folder without a state_dir file is not touched";
    other.Kill();
  }
  std::error_code ec;
  fs::remove_all(unrelated, ec);
  fs::remove_all(other_scope, ec);
  fs::remove_all(other_state, ec);
}

TEST_F(PrivateCheckoutTest, WhatCannotBeCopiedStopsTheStartNamingUidPathAndMode) {
  // A toolchain inside the private folder: nvcc needs its whole toolkit, so it is not copied.
  const fs::path nvcc = checkout_ / "toolkit" / "bin" / "nvcc";
  fs::create_directories(nvcc.parent_path());
  std::ofstream(nvcc) << "#!/bin/sh\necho 'Cuda compilation tools, release 13.0, V13.0.88'\n";
  ::chmod(nvcc.c_str(), 0755);
  Daemon d(state_, Caked());
  EXPECT_FALSE(d.Start({"--runtime-dir", runtime_.string()}, {"CAKE_NVCC=" + nvcc.string()}));
  EXPECT_NE(d.exit_status(), 0);
  const std::string log = d.Log();
  EXPECT_NE(log.find(absl::StrCat("workers run as uid 65534, which cannot execute nvcc at ",
                                  nvcc.string(), ": folder ", checkout_.string(),
                                  " is mode 0700, owner uid 0 (Permission denied); fix: chmod o+x ",
                                  checkout_.string())),
            std::string::npos)
      << log;

  // A state directory inside a private folder: its job folders cannot be reached.
  const fs::path private_state = checkout_ / "state";
  Daemon s(private_state, Caked());
  EXPECT_FALSE(s.Start({"--runtime-dir", runtime_.string()}));
  EXPECT_NE(s.Log().find(absl::StrCat("cannot execute the job folders at ",
                                      (private_state / "work").string(), ": folder ",
                                      checkout_.string(), " is mode 0700")),
            std::string::npos)
      << s.Log();
}

}  // namespace
}  // namespace cake
