// The worker sandbox with the real cake-worker: framed request/reply, and crash, hang and
// garbage each turned into a readable failure.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "absl/strings/str_cat.h"
#include "gpuqueue/framing.h"
#include "gpuqueue/sandbox.h"
#include "gpuqueue/worker_sandbox.h"
#include "tests/compiler/test_util.h"

namespace cake {
namespace {

namespace fs = std::filesystem;

gpuqueue::SandboxOptions Options(const fs::path& faults) {
  gpuqueue::SandboxOptions o;
  o.worker_path = CAKE_WORKER_PATH;
  o.timeout = std::chrono::milliseconds(1500);
  o.env["CAKE_WORKER_FAULT_DIR"] = faults.string();
  o.env["CAKE_LIBCUDA"] = "/nonexistent/libcuda.so.1";  // a GPU-less worker, even on a GPU host
  return o;
}

// A confined shell (a GPU job's sandbox): what it may write under /proc, what stays closed.
base::SubprocessResult RunConfinedShell(const fs::path& state, const std::string& script,
                                        std::vector<std::string> readable = {}) {
  gpuqueue::SandboxSpec spec;
  spec.job_dir = (state / "work" / "job").string();
  spec.protected_dirs = {state.string()};
  spec.readable = std::move(readable);
  spec.gpu = true;
  fs::create_directories(spec.job_dir);
  auto sb = gpuqueue::PrepareSandbox(spec);
  EXPECT_TRUE(sb.ok()) << sb.status();
  base::SubprocessOptions o;
  o.child_setup = (*sb)->steps();
  o.working_dir = spec.job_dir;
  o.env["TMPDIR"] = spec.job_dir;
  o.timeout = std::chrono::seconds(60);
  auto r = base::RunSubprocess({"/bin/sh", "-c", script}, o);
  EXPECT_TRUE(r.ok()) << r.status();
  return *r;
}

TEST(WorkerSandbox, OwnThreadNamesWritableOthersNot) {
  if (gpuqueue::LandlockAbi() == 0) GTEST_SKIP() << "no Landlock in this kernel";
  const fs::path state = testing::FreshDir("sandbox-proc");
  std::ofstream(state / "secret") << "s3cret";
  // The CUDA driver names its threads through /proc/self/task/TID/comm and fails cuInit when
  // it cannot (so does a grandchild under compute-sanitizer); the shell's own task is its pid.
  auto own = RunConfinedShell(state, "echo worker > /proc/self/task/$$/comm && cat /proc/$$/comm");
  EXPECT_EQ(own.exit_code, 0) << own.stderr_bytes;
  EXPECT_EQ(own.stdout_bytes.rfind("worker", 0), 0u) << own.stdout_bytes;
  auto other = RunConfinedShell(state, "echo x > /proc/$PPID/comm");
  EXPECT_NE(other.exit_code, 0) << "the daemon's thread name was writable";
  auto secret = RunConfinedShell(state, "cat " + (state / "secret").string());
  EXPECT_NE(secret.exit_code, 0);
  EXPECT_EQ(secret.stdout_bytes.find("s3cret"), std::string::npos);
}

// caked's workers read the system's trees, their toolkit, their own folder and their job
// directory: a file elsewhere (planted where the worker uid could read it) and /etc beyond the
// loader's and the C library's files are closed, and nvcc still compiles.
TEST(WorkerSandbox, TheReadSetHoldsWhatACompileNeedsAndNothingElse) {
  if (gpuqueue::LandlockAbi() == 0) GTEST_SKIP() << "no Landlock in this kernel";
  const fs::path state = testing::FreshDir("sandbox-readset");
  const fs::path elsewhere = testing::FreshDir("sandbox-planted");
  std::ofstream(elsewhere / "planted") << "PLANTED";
  const char* nvcc = "/usr/local/cuda/bin/nvcc";
  const std::vector<std::string> readable = gpuqueue::WorkerReadSet(
      CAKE_WORKER_PATH, {{"PATH", "/usr/bin:/bin"}, {"LD_LIBRARY_PATH", "/nonexistent"}}, {nvcc});
  EXPECT_NE(std::find(readable.begin(), readable.end(),
                      fs::canonical(fs::path(CAKE_WORKER_PATH).parent_path()).string()),
            readable.end());
  for (const std::string& r : readable)
    EXPECT_NE(r, fs::canonical(elsewhere).string()) << "the planted folder is in the read set";

  auto planted = RunConfinedShell(state, "cat " + (elsewhere / "planted").string(), readable);
  EXPECT_NE(planted.exit_code, 0);
  EXPECT_EQ(planted.stdout_bytes.find("PLANTED"), std::string::npos);
  if (fs::exists("/etc/hostname")) {
    auto hostname = RunConfinedShell(state, "cat /etc/hostname", readable);
    EXPECT_NE(hostname.exit_code, 0) << hostname.stdout_bytes;
  }
  auto allowed = RunConfinedShell(
      state, "cat /etc/passwd >/dev/null && ls /usr/bin >/dev/null && echo ok > own && cat own",
      readable);
  EXPECT_EQ(allowed.exit_code, 0) << allowed.stderr_bytes;
  EXPECT_EQ(allowed.stdout_bytes, "ok\n");
  // The same shell with the old, wide rule reads the planted file: the read set is what closes it.
  auto wide = RunConfinedShell(state, "cat " + (elsewhere / "planted").string());
  EXPECT_EQ(wide.stdout_bytes, "PLANTED");

  if (!fs::exists(nvcc)) GTEST_SKIP() << "no toolkit at " << nvcc;
  auto compiled = RunConfinedShell(
      state,
      absl::StrCat("printf '__global__ void k(float* x) { x[0] = 1; }\\n' > k.cu && ", nvcc,
                   " -arch=sm_90 -cubin -o k.cubin k.cu && test -s k.cubin && echo compiled"),
      readable);
  EXPECT_EQ(compiled.exit_code, 0) << compiled.stderr_bytes;
  EXPECT_EQ(compiled.stdout_bytes, "compiled\n");
  fs::remove_all(elsewhere);
  fs::remove_all(state);
}

// The start-up probe and a confined child agree: where the probe says seccomp filters load, a
// shell under the workers' filter runs; where it says they do not (qemu-user), the same child
// fails at its seccomp step, so a daemon that started would have lost every job.
TEST(WorkerSandbox, SeccompProbeAgreesWithAConfinedChild) {
  const fs::path state = testing::FreshDir("sandbox-seccomp");
  gpuqueue::SandboxSpec spec;
  spec.job_dir = (state / "work" / "job").string();
  fs::create_directories(spec.job_dir);
  spec.seccomp = true;
  spec.landlock = false;
  auto sb = gpuqueue::PrepareSandbox(spec);
  ASSERT_TRUE(sb.ok()) << sb.status();
  base::SubprocessOptions o;
  o.child_setup = (*sb)->steps();
  o.timeout = std::chrono::seconds(10);
  auto r = base::RunSubprocess({"/bin/sh", "-c", "echo confined"}, o);
  const absl::Status probe = gpuqueue::SeccompFiltersLoad();
  if (probe.ok()) {
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_EQ(r->exit_code, 0) << r->stderr_bytes;
    EXPECT_EQ(r->stdout_bytes, "confined\n");
  } else {
    EXPECT_EQ(probe.code(), absl::StatusCode::kFailedPrecondition) << probe;
    EXPECT_NE(probe.message().find("refuses seccomp filters"), std::string::npos) << probe;
    const bool child_failed = !r.ok() || r->exit_code != 0;
    EXPECT_TRUE(child_failed) << "the probe refused seccomp but a confined child ran";
  }
}

TEST(Framing, RoundTripAndTruncation) {
  worker::Request r;
  r.set_job_id("j");
  r.mutable_probe();
  const std::string f = gpuqueue::Frame(r);
  worker::Request back;
  ASSERT_TRUE(gpuqueue::Unframe(f, &back).ok());
  EXPECT_EQ(back.job_id(), "j");
  EXPECT_FALSE(gpuqueue::Unframe(f.substr(0, f.size() - 1), &back).ok());
  EXPECT_FALSE(gpuqueue::Unframe("\xff\xff\xff\x7f", &back).ok());
  EXPECT_FALSE(gpuqueue::Unframe("", &back).ok());
  // One frame per stream: anything after it is refused, never ignored.
  const absl::Status trailing = gpuqueue::Unframe(f + "x", &back);
  EXPECT_EQ(trailing.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(trailing.message().find("1 bytes follow"), std::string::npos) << trailing;
  EXPECT_FALSE(gpuqueue::Unframe(f + f, &back).ok());
}

TEST(Sandbox, ProbeWithoutDriverSaysNoDevice) {
  const fs::path faults = testing::FreshDir("sandbox");
  worker::Request r;
  r.mutable_probe();
  auto reply = gpuqueue::RunInWorker(r, Options(faults));
  ASSERT_TRUE(reply.ok()) << reply.status();
  EXPECT_TRUE(reply->ok());
  EXPECT_EQ(reply->probe().device_count(), 0);
  EXPECT_NE(reply->probe().reason().find("no CUDA driver"), std::string::npos);
}

TEST(Sandbox, ValidateWithoutDeviceFailsPlainly) {
  const fs::path faults = testing::FreshDir("sandbox");
  worker::Request r;
  r.mutable_validate();
  auto reply = gpuqueue::RunInWorker(r, Options(faults));
  ASSERT_TRUE(reply.ok());
  EXPECT_FALSE(reply->ok());
  EXPECT_NE(reply->error().find("no execution device"), std::string::npos) << reply->error();
}

TEST(Sandbox, CrashHangAndBadRequestBecomeFailures) {
  const fs::path faults = testing::FreshDir("sandbox");
  worker::Request r;
  r.mutable_probe();
  std::ofstream(faults / "probe.crash") << "";
  auto crashed = gpuqueue::RunInWorker(r, Options(faults));
  ASSERT_FALSE(crashed.ok());
  EXPECT_EQ(crashed.status().code(), absl::StatusCode::kAborted);
  EXPECT_NE(crashed.status().message().find("killed by signal 9"), absl::string_view::npos);

  std::ofstream(faults / "probe.hang") << "";
  const auto start = std::chrono::steady_clock::now();
  auto hung = gpuqueue::RunInWorker(r, Options(faults));
  ASSERT_FALSE(hung.ok());
  EXPECT_NE(hung.status().message().find("timed out after 1500 ms"), absl::string_view::npos);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(10));

  // The next job runs in a fresh process and succeeds.
  auto fine = gpuqueue::RunInWorker(r, Options(faults));
  EXPECT_TRUE(fine.ok());

  auto o = Options(faults);
  o.worker_path = "/nonexistent/cake-worker";
  EXPECT_EQ(gpuqueue::RunInWorker(r, o).status().code(), absl::StatusCode::kFailedPrecondition);
}

}  // namespace
}  // namespace cake
