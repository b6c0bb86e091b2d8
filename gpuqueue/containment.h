// Job containment: every worker's process tree can be killed whole, however it forks.
//
// Preferred: cgroup v2. The daemon creates a scope `cake-<scope>` under its own cgroup (systemd's
// Delegate=yes hands that cgroup to the service) and one child cgroup per job attempt; the
// worker joins it before exec, so everything it starts (nvcc, a setsid'd grandchild) is in it.
// Timeout, shutdown and restart kill the cgroup (cgroup.kill), and on start the daemon kills
// what a dead boot left in its scope. memory.max and pids.max are set where those controllers
// are delegated.
//
// Fallback (no writable cgroup v2): each job's process group, PR_SET_PDEATHSIG on every child,
// and the daemon as child subreaper, so orphans reparent to it and are swept after each job. A
// process that leaves its session can outlive a SIGKILLed daemon in this mode; Describe() says
// so, and `cakectl status` shows it.
//
// Thread-safety: Containment is thread-safe; a JobCgroup belongs to the thread running its job.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"

namespace cake::gpuqueue {

struct JobLimits {
  int64_t memory_max_bytes = 0;  // memory.max; 0 = none
  int64_t pids_max = 0;          // pids.max; 0 = none
};

// One job attempt's cgroup. Destruction kills what is left in it and removes it.
class JobCgroup {
 public:
  JobCgroup(std::string path, int procs_fd) : path_(std::move(path)), procs_fd_(procs_fd) {}
  ~JobCgroup();
  JobCgroup(const JobCgroup&) = delete;
  JobCgroup& operator=(const JobCgroup&) = delete;

  const std::string& path() const { return path_; }
  // cgroup.procs opened for writing: the child writes "0" to it to join before exec.
  int procs_fd() const { return procs_fd_; }
  // SIGKILLs every process in the cgroup (cgroup.kill, or each pid where that file is missing).
  void Kill() const;
  // Processes in the cgroup now.
  int ProcessCount() const;
  // True once no process is left (cgroup.events populated 0), polling until `timeout`.
  bool WaitEmpty(std::chrono::milliseconds timeout) const;

 private:
  std::string path_;
  int procs_fd_ = -1;
};

enum class ContainmentMode { kCgroup, kProcessGroup };

class Containment {
 public:
  // Probes cgroup v2 under this process's own cgroup; `scope` names this daemon's jobs (one per
  // state directory, so two daemons never kill each other's jobs). Never fails: without cgroup
  // access it falls back to process groups and says why.
  // `allow_cgroups` false forces the fallback (to test it, or where cgroups must not be used).
  static std::unique_ptr<Containment> Create(const std::string& scope, const JobLimits& limits,
                                             bool allow_cgroups = true);

  ContainmentMode mode() const { return mode_; }
  // Whether each job's process count is bounded by pids.max (else RLIMIT_NPROC must do it).
  bool bounds_processes() const { return pids_controller_ && limits_.pids_max > 0; }
  // One line for status: what is in force and what it cannot do.
  const std::string& Describe() const { return description_; }

  // A fresh cgroup for one job attempt ("job-12-a1"); nullptr in process-group mode.
  absl::StatusOr<std::unique_ptr<JobCgroup>> CreateJobGroup(const std::string& name);
  // Kills every process in this scope's job cgroups (what a dead boot left) and removes them.
  // Returns how many processes were killed.
  int KillLeftovers();

  // Kills every process whose working directory is below one of `dirs` (where job directories
  // and the toolchain's scratch directories live): what a dead boot left when it ran without
  // cgroups. Call before any job starts. Returns how many were killed.
  int KillByWorkingDirectory(const std::vector<std::string>& dirs);

  // A worker started (in `cgroup`, "" in process-group mode) / ended: the orphan sweep never
  // touches a live worker, and KillAll reaches each one's tree.
  void WorkerStarted(pid_t pid, const std::string& cgroup);
  void WorkerEnded(pid_t pid);
  // Kills and reaps this process's children that are not live workers: orphans reparented to
  // the daemon (it is a child subreaper). Returns how many were found.
  int SweepOrphans();

  // Kills every live worker's tree (shutdown).
  void KillAll();

  // Held while a worker is forked and registered (SubprocessOptions::spawn_lock).
  std::mutex* spawn_lock() { return &spawn_mu_; }

 private:
  Containment() = default;
  ContainmentMode mode_ = ContainmentMode::kProcessGroup;
  std::string description_;
  std::string scope_path_;  // cgroup mode: <own cgroup>/cake-<scope>
  JobLimits limits_;
  bool memory_controller_ = false, pids_controller_ = false;
  std::mutex spawn_mu_;  // taken before mu_
  std::mutex mu_;
  std::map<pid_t, std::string> live_workers_ ABSL_GUARDED_BY(mu_);
};

// The unified (v2) hierarchy's path of this process's cgroup, e.g.
// "/sys/fs/cgroup/system.slice/caked.service", or an error saying why there is none.
absl::StatusOr<std::string> OwnCgroupPath();

}  // namespace cake::gpuqueue
