#include "containment.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <thread>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "base/files.h"

namespace cake::gpuqueue {
namespace {

namespace fs = std::filesystem;

bool WriteSmall(const std::string& path, const std::string& value) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0) return false;
  const bool ok = ::write(fd, value.data(), value.size()) == static_cast<ssize_t>(value.size());
  ::close(fd);
  return ok;
}

std::vector<pid_t> PidsOf(const std::string& cgroup) {
  std::vector<pid_t> pids;
  for (absl::string_view line :
       absl::StrSplit(base::ReadFileBytes(cgroup + "/cgroup.procs"), '\n')) {
    int pid = 0;
    if (absl::SimpleAtoi(line, &pid) && pid > 0) pids.push_back(pid);
  }
  return pids;
}

void KillCgroup(const std::string& path) {
  if (WriteSmall(path + "/cgroup.kill", "1")) return;
  // Kernels before 5.14 have no cgroup.kill: freeze, kill each member, thaw.
  WriteSmall(path + "/cgroup.freeze", "1");
  for (int round = 0; round < 16; ++round) {
    const std::vector<pid_t> pids = PidsOf(path);
    if (pids.empty()) break;
    for (pid_t p : pids) ::kill(p, SIGKILL);
  }
  WriteSmall(path + "/cgroup.freeze", "0");
}

bool Populated(const std::string& path) {
  for (absl::string_view line : absl::StrSplit(base::ReadFileBytes(path + "/cgroup.events"), '\n'))
    if (absl::ConsumePrefix(&line, "populated ")) return line != "0";
  return !PidsOf(path).empty();
}

bool WaitUnpopulated(const std::string& path, std::chrono::milliseconds timeout) {
  const auto end = std::chrono::steady_clock::now() + timeout;
  while (Populated(path)) {
    if (std::chrono::steady_clock::now() >= end) return false;
    // Orphans of the job reparent to the daemon (a subreaper) and stay in the cgroup as zombies
    // until reaped: reap those that are ours. Members of this cgroup are never another job's.
    for (pid_t p : PidsOf(path)) {
      int status = 0;
      (void)::waitpid(p, &status, WNOHANG);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return true;
}

std::set<std::string> Controllers(const std::string& file) {
  std::set<std::string> out;
  for (absl::string_view c :
       absl::StrSplit(base::ReadFileBytes(file), absl::ByAnyChar(" \n"), absl::SkipEmpty()))
    out.insert(std::string(c));
  return out;
}

// Children of this process (all threads), from /proc/self/task/*/children.
std::vector<pid_t> OwnChildren() {
  std::vector<pid_t> out;
  std::error_code ec;
  for (const auto& task : fs::directory_iterator("/proc/self/task", ec)) {
    for (absl::string_view tok : absl::StrSplit(
             base::ReadFileBytes((task.path() / "children").string()), ' ', absl::SkipEmpty())) {
      int pid = 0;
      if (absl::SimpleAtoi(tok, &pid) && pid > 0) out.push_back(pid);
    }
  }
  return out;
}

}  // namespace

absl::StatusOr<std::string> OwnCgroupPath() {
  std::string own;
  for (absl::string_view line : absl::StrSplit(base::ReadFileBytes("/proc/self/cgroup"), '\n'))
    if (absl::ConsumePrefix(&line, "0::")) own = std::string(line);
  if (own.empty()) return absl::NotFoundError("this process is in no cgroup v2 hierarchy");
  // The cgroup2 mount: "ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTS - cgroup2 SOURCE SUPEROPTS".
  for (absl::string_view line : absl::StrSplit(base::ReadFileBytes("/proc/self/mountinfo"), '\n')) {
    std::vector<std::string> f = absl::StrSplit(line, ' ', absl::SkipEmpty());
    size_t dash = 0;
    while (dash < f.size() && f[dash] != "-") ++dash;
    if (dash + 1 >= f.size() || f[dash + 1] != "cgroup2" || f.size() < 5) continue;
    const std::string root = f[3], mount = f[4];
    absl::string_view rel = own;
    if (root != "/" && !absl::ConsumePrefix(&rel, root)) continue;
    return (fs::path(mount) / fs::path(std::string(rel)).relative_path())
        .lexically_normal()
        .string();
  }
  return absl::NotFoundError("no cgroup2 filesystem is mounted");
}

JobCgroup::~JobCgroup() {
  Kill();
  WaitEmpty(std::chrono::seconds(5));
  if (procs_fd_ >= 0) ::close(procs_fd_);
  ::rmdir(path_.c_str());
}

void JobCgroup::Kill() const { KillCgroup(path_); }

int JobCgroup::ProcessCount() const { return static_cast<int>(PidsOf(path_).size()); }

bool JobCgroup::WaitEmpty(std::chrono::milliseconds timeout) const {
  return WaitUnpopulated(path_, timeout);
}

std::unique_ptr<Containment> Containment::Create(const std::string& scope, const JobLimits& limits,
                                                 bool allow_cgroups) {
  std::unique_ptr<Containment> c(new Containment());
  c->limits_ = limits;
  // Orphans of any job reparent to the daemon, not to init, so they can be swept.
  prctl(PR_SET_CHILD_SUBREAPER, 1);
  const std::string fallback =
      "process group + PR_SET_PDEATHSIG + subreaper sweep (a process that leaves its session "
      "can outlive a killed daemon)";
  if (!allow_cgroups) {
    c->description_ = absl::StrCat(fallback, ": cgroups disabled by configuration");
    return c;
  }
  auto own = OwnCgroupPath();
  if (!own.ok()) {
    c->description_ = absl::StrCat(fallback, ": ", own.status().message());
    return c;
  }
  std::string base = *own;
  while (base.size() > 1 && base.back() == '/') base.pop_back();
  // Controllers can be enabled for children only while this cgroup holds no process (the
  // "no internal processes" rule): when the daemon is alone in a delegated cgroup (a systemd
  // service), it moves itself into a leaf first.
  const std::set<std::string> available = Controllers(base + "/cgroup.controllers");
  const bool want_memory = available.count("memory") > 0, want_pids = available.count("pids") > 0;
  if (want_memory || want_pids) {
    std::string enable = absl::StrCat(want_memory ? "+memory " : "", want_pids ? "+pids" : "");
    if (!WriteSmall(base + "/cgroup.subtree_control", enable) && errno == EBUSY &&
        PidsOf(base).size() == 1 && PidsOf(base)[0] == getpid()) {
      const std::string leaf = base + "/caked";
      ::mkdir(leaf.c_str(), 0755);
      if (WriteSmall(leaf + "/cgroup.procs", "0"))
        (void)WriteSmall(base + "/cgroup.subtree_control", enable);
    }
  }
  const std::string scope_path = absl::StrCat(base, "/cake-", scope);
  if (::mkdir(scope_path.c_str(), 0755) != 0 && errno != EEXIST) {
    c->description_ =
        absl::StrCat(fallback, ": cannot create ", scope_path, ": ", std::strerror(errno));
    return c;
  }
  // Probe: a job cgroup can be created and joined (write access to cgroup.procs).
  const std::string probe = scope_path + "/probe";
  ::mkdir(probe.c_str(), 0755);
  const int fd = ::open((probe + "/cgroup.procs").c_str(), O_WRONLY | O_CLOEXEC);
  const int open_errno = errno;
  if (fd >= 0) ::close(fd);
  ::rmdir(probe.c_str());
  if (fd < 0) {
    c->description_ = absl::StrCat(fallback, ": cannot write ", probe,
                                   "/cgroup.procs: ", std::strerror(open_errno));
    return c;
  }
  const std::set<std::string> delegated = Controllers(base + "/cgroup.subtree_control");
  std::string enable;
  if (delegated.count("memory")) enable += "+memory ";
  if (delegated.count("pids")) enable += "+pids";
  if (!enable.empty()) (void)WriteSmall(scope_path + "/cgroup.subtree_control", enable);
  const std::set<std::string> in_scope = Controllers(scope_path + "/cgroup.subtree_control");
  c->memory_controller_ = in_scope.count("memory") > 0;
  c->pids_controller_ = in_scope.count("pids") > 0;
  c->mode_ = ContainmentMode::kCgroup;
  c->scope_path_ = scope_path;
  c->description_ =
      absl::StrCat("cgroup v2 per job (", scope_path, "; cgroup.kill",
                   c->memory_controller_ ? "; memory.max" : "; no memory controller delegated",
                   c->pids_controller_ ? "; pids.max" : "; no pids controller delegated", ")");
  return c;
}

absl::StatusOr<std::unique_ptr<JobCgroup>> Containment::CreateJobGroup(const std::string& name) {
  if (mode_ != ContainmentMode::kCgroup) return std::unique_ptr<JobCgroup>();
  const std::string path = absl::StrCat(scope_path_, "/", name);
  if (::mkdir(path.c_str(), 0755) != 0) {
    if (errno != EEXIST)
      return absl::InternalError(absl::StrCat("cannot create ", path, ": ", std::strerror(errno)));
    // A previous attempt's group that was not removed: empty it first.
    KillCgroup(path);
    WaitUnpopulated(path, std::chrono::seconds(5));
  }
  if (memory_controller_ && limits_.memory_max_bytes > 0) {
    WriteSmall(path + "/memory.max", absl::StrCat(limits_.memory_max_bytes));
    WriteSmall(path + "/memory.swap.max", "0");
  }
  if (pids_controller_ && limits_.pids_max > 0)
    WriteSmall(path + "/pids.max", absl::StrCat(limits_.pids_max));
  const int fd = ::open((path + "/cgroup.procs").c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0) {
    const int err = errno;
    ::rmdir(path.c_str());
    return absl::InternalError(
        absl::StrCat("cannot open ", path, "/cgroup.procs: ", std::strerror(err)));
  }
  return std::make_unique<JobCgroup>(path, fd);
}

int Containment::KillLeftovers() {
  if (mode_ != ContainmentMode::kCgroup) return 0;
  int killed = 0;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(scope_path_, ec)) {
    if (!entry.is_directory()) continue;
    const std::string path = entry.path().string();
    killed += static_cast<int>(PidsOf(path).size());
    KillCgroup(path);
    WaitUnpopulated(path, std::chrono::seconds(5));
    ::rmdir(path.c_str());
  }
  SweepOrphans();
  return killed;
}

int Containment::KillByWorkingDirectory(const std::vector<std::string>& dirs) {
  std::vector<std::string> prefixes;
  for (const std::string& d : dirs)
    if (!d.empty()) prefixes.push_back(fs::path(d).lexically_normal().string() + "/");
  int killed = 0;
  // A few passes: a process may fork while it is being found.
  for (int pass = 0; pass < 5; ++pass) {
    int found = 0;
    std::error_code ec;
    for (const auto& e : fs::directory_iterator("/proc", ec)) {
      const std::string name = e.path().filename().string();
      if (name.empty() || name[0] < '1' || name[0] > '9') continue;
      const pid_t pid = std::stoi(name);
      if (pid == getpid()) continue;
      std::error_code lec;
      const std::string cwd = fs::read_symlink(e.path() / "cwd", lec).string();
      bool inside = false;
      for (const std::string& prefix : prefixes)
        inside |= cwd.compare(0, prefix.size(), prefix) == 0;
      if (lec || !inside) continue;
      ::kill(pid, SIGKILL);
      ++found;
    }
    killed += found;
    if (found == 0) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  SweepOrphans();
  return killed;
}

void Containment::WorkerStarted(pid_t pid, const std::string& cgroup) {
  std::lock_guard<std::mutex> lock(mu_);
  live_workers_[pid] = cgroup;
}

void Containment::WorkerEnded(pid_t pid) {
  std::lock_guard<std::mutex> lock(mu_);
  live_workers_.erase(pid);
}

int Containment::SweepOrphans() {
  std::vector<pid_t> orphans;
  {
    std::lock_guard<std::mutex> spawning(spawn_mu_);
    std::lock_guard<std::mutex> lock(mu_);
    for (pid_t p : OwnChildren())
      if (!live_workers_.count(p)) orphans.push_back(p);
  }
  // Only reparented orphans are children of the daemon without being live workers: a worker is
  // registered (on_start) before anything it starts can be orphaned.
  for (pid_t p : orphans) {
    ::kill(p, SIGKILL);
    int status = 0;
    while (::waitpid(p, &status, 0) < 0 && errno == EINTR) {
    }
  }
  return static_cast<int>(orphans.size());
}

void Containment::KillAll() {
  std::lock_guard<std::mutex> lock(mu_);
  for (const auto& [pid, cgroup] : live_workers_) {
    if (!cgroup.empty()) KillCgroup(cgroup);
    ::kill(-pid, SIGKILL);
  }
}

}  // namespace cake::gpuqueue
