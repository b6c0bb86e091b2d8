#include "sandbox.h"

#include <signal.h>
#include <unistd.h>

#include <unistd.h>
#include <cerrno>
#include <cstring>

#include <filesystem>

#include "absl/strings/str_cat.h"
#include "base/subprocess.h"
#include "base/text.h"
#include "framing.h"

namespace cake::gpuqueue {
namespace {

namespace fs = std::filesystem;

// The end of a worker's stderr as text: any bytes, repaired to UTF-8 and cut at a character.
std::string Tail(const std::string& s, size_t n = 400) { return base::Utf8Suffix(s, n); }

// Removes the job directory however the worker left it.
struct JobDir {
  std::string path;
  ~JobDir() {
    if (path.empty()) return;
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

// Processes whose group is the worker's (the process-group fallback's count).
int ProcessesInGroup(int pgid) {
  if (pgid <= 0) return 0;
  int n = 0;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator("/proc", ec)) {
    const std::string name = e.path().filename().string();
    if (name.empty() || name[0] < '1' || name[0] > '9') continue;
    if (::getpgid(std::stoi(name)) == pgid) ++n;
  }
  return n;
}

}  // namespace

absl::StatusOr<worker::Reply> RunInWorker(const worker::Request& request,
                                          const SandboxOptions& options) {
  base::SubprocessOptions sp;
  sp.stdin_bytes = Frame(request);
  sp.timeout = options.timeout;
  sp.env = options.env;
  sp.max_stdout_bytes = options.max_reply_bytes;
  sp.max_stderr_bytes = 64 << 10;

  std::unique_ptr<JobCgroup> cgroup;
  if (options.containment != nullptr) {
    auto g = options.containment->CreateJobGroup(options.job_name);
    if (!g.ok())
      return absl::FailedPreconditionError(
          absl::StrCat("cannot contain worker: ", g.status().message()));
    cgroup = *std::move(g);
  }
  JobDir job_dir;
  std::unique_ptr<PreparedSandbox> sandbox;
  if (options.confine) {
    SandboxSpec spec = *options.confine;
    std::error_code ec;
    fs::remove_all(spec.job_dir, ec);
    fs::create_directories(fs::path(spec.job_dir) / "tmp", ec);
    if (ec)
      return absl::FailedPreconditionError(
          absl::StrCat("cannot create job directory ", spec.job_dir, ": ", ec.message()));
    fs::permissions(spec.job_dir, fs::perms::owner_all, ec);
    job_dir.path = spec.job_dir;
    if (spec.run_as_uid >= 0) {
      // The worker's own uid owns what it may write: its job directory and the writable trees
      // (their top directories; what is already inside stays the daemon's, read-only to it).
      const uid_t uid = static_cast<uid_t>(spec.run_as_uid);
      const gid_t gid = static_cast<gid_t>(spec.run_as_gid >= 0 ? spec.run_as_gid : uid);
      std::vector<std::string> owned = {spec.job_dir, (fs::path(spec.job_dir) / "tmp").string()};
      for (const std::string& w : spec.writable) {
        fs::create_directories(w, ec);
        owned.push_back(w);
      }
      for (const std::string& d : owned)
        if (::chown(d.c_str(), uid, gid) != 0)
          return absl::FailedPreconditionError(absl::StrCat(
              "cannot give ", d, " to the worker uid ", uid, ": ", std::strerror(errno)));
    }
    spec.cgroup_procs_fd = cgroup ? cgroup->procs_fd() : -1;
    auto prepared = PrepareSandbox(spec);
    if (!prepared.ok())
      return absl::FailedPreconditionError(
          absl::StrCat("cannot prepare the worker sandbox: ", prepared.status().message()));
    sandbox = *std::move(prepared);
    sp.child_setup = sandbox->steps();
    sp.inherit_environment = false;
    sp.env["HOME"] = spec.job_dir;
    sp.env["TMPDIR"] = (fs::path(spec.job_dir) / "tmp").string();
    sp.working_dir = spec.job_dir;
  } else if (cgroup) {
    sp.child_setup.push_back({"join job cgroup", [fd = cgroup->procs_fd()] {
                                return ::write(fd, "0", 1) == 1 ? 0 : errno;
                              }});
  }
  const std::string cgroup_path = cgroup ? cgroup->path() : "";
  int worker_pid = 0;
  if (options.containment != nullptr) sp.spawn_lock = options.containment->spawn_lock();
  sp.on_start = [&](int pid) {
    worker_pid = pid;
    if (options.containment != nullptr) options.containment->WorkerStarted(pid, cgroup_path);
    if (options.on_start) options.on_start(pid);
  };
  sp.kill_tree = [&](int pid) {
    if (cgroup) cgroup->Kill();
    ::kill(-pid, SIGKILL);
  };
  if (options.max_processes > 0 &&
      !(options.containment != nullptr && options.containment->bounds_processes())) {
    const int limit = options.max_processes;
    JobCgroup* group = cgroup.get();
    sp.watchdog = [group, limit, &worker_pid]() -> std::string {
      const int n = group != nullptr ? group->ProcessCount() : ProcessesInGroup(worker_pid);
      if (n <= limit) return "";
      return absl::StrCat("the job held ", n, " processes (limit ", limit, ")");
    };
  }
  auto run = base::RunSubprocess({options.worker_path}, sp);
  if (options.containment != nullptr) {
    if (worker_pid > 0) options.containment->WorkerEnded(worker_pid);
    cgroup.reset();  // kills and removes what is left in the job's cgroup
    options.containment->SweepOrphans();
  }
  if (!run.ok())
    return absl::FailedPreconditionError(
        absl::StrCat("cannot start worker ", options.worker_path, ": ", run.status().message()));
  if (!run->watchdog_reason.empty())
    return absl::AbortedError(
        absl::StrCat("worker ", run->watchdog_reason, "; its process tree was killed"));
  if (run->output_limit_exceeded)
    return absl::AbortedError(absl::StrCat("worker reply exceeded ", options.max_reply_bytes,
                                           " bytes; its process tree was killed"));
  if (run->timed_out)
    return absl::AbortedError(absl::StrCat("worker timed out after ", options.timeout.count(),
                                           " ms; its process tree was killed"));
  if (run->term_signal != 0)
    return absl::AbortedError(absl::StrCat("worker killed by signal ", run->term_signal,
                                           run->stderr_bytes.empty() ? "" : ": ",
                                           Tail(run->stderr_bytes)));
  worker::Reply reply;
  absl::Status s = Unframe(run->stdout_bytes, &reply);
  if (!s.ok())
    return absl::AbortedError(absl::StrCat("worker ", run->Describe(), " without a valid reply (",
                                           s.message(), ")", run->stderr_bytes.empty() ? "" : ": ",
                                           Tail(run->stderr_bytes)));
  return reply;
}

}  // namespace cake::gpuqueue
