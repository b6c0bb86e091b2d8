// Runs a child process with captured stdout/stderr, optional stdin bytes, a wall-clock timeout,
// bounded output and its own process group. Used for nvcc/ptxas/cuobjdump and for worker
// processes. A small POSIX wrapper rather than a library because the process-tree semantics are
// the point: the child gets PR_SET_PDEATHSIG (it dies with the thread that started it), only the
// descriptors 0-2, and whatever `child_setup` steps the caller prepared (joining a cgroup,
// rlimits, a Landlock ruleset, a seccomp filter) just before exec. Thread-compatible; each call
// owns its child.
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace cake::base {

// One step run in the child between fork and exec, in order. It must be async-signal-safe (no
// allocation, no locks: build everything it needs before the call). Returns 0, or an errno value
// that aborts the exec: RunSubprocess then fails with FailedPrecondition naming the step (`what`),
// the uid the child had and the errno, as it does when execve itself fails.
struct ChildStep {
  const char* what = "";
  std::function<int()> run;
};

struct SubprocessOptions {
  std::string stdin_bytes;
  std::chrono::milliseconds timeout{std::chrono::minutes(10)};
  std::string working_dir;                 // empty = inherit
  std::map<std::string, std::string> env;  // added to (or replacing in) the inherited env
  bool inherit_environment = true;         // false: the child's environment is exactly `env`
  // stdout beyond this kills the child's tree (output_limit_exceeded); 0 = unbounded.
  size_t max_stdout_bytes = 0;
  // Only the last this-many bytes of stderr are kept (the rest is read and dropped).
  size_t max_stderr_bytes = 1 << 20;
  std::vector<ChildStep> child_setup;
  std::function<void(int pid)> on_start;  // called with the child's pid once it runs
  // Held from before fork until on_start returns, so whoever sweeps the parent's children under
  // the same lock always finds this child registered.
  std::mutex* spawn_lock = nullptr;
  // Polled about every 50 ms while the child runs: a non-empty answer kills the tree and becomes
  // SubprocessResult::watchdog_reason (e.g. too many processes where no pids.max bounds them).
  std::function<std::string()> watchdog;
  // Kills everything the child started; called on timeout and output overflow. Default: SIGKILL
  // to the child's process group. A cgroup-contained caller kills its cgroup instead.
  std::function<void(int pid)> kill_tree;
};

struct SubprocessResult {
  int exit_code = -1;                  // valid when !signaled
  int term_signal = 0;                 // signal that ended the child, 0 if it exited
  bool timed_out = false;              // the tree was killed because the timeout passed
  bool output_limit_exceeded = false;  // the tree was killed for writing too much to stdout
  std::string watchdog_reason;         // the tree was killed by the watchdog, and why
  std::string stdout_bytes;
  std::string stderr_bytes;  // the tail, at most max_stderr_bytes
  double wall_seconds = 0;

  bool ok() const {
    return !timed_out && !output_limit_exceeded && watchdog_reason.empty() && term_signal == 0 &&
           exit_code == 0;
  }
  std::string Describe() const;  // "exit 1", "killed by signal 9", "timed out after 2.0 s"
};

// NotFound if argv[0] is not found; FailedPrecondition when the child never became argv[0] (a
// setup step or execve failed: "ARGV0: cannot start it (execve as uid 65534): Permission denied
// (errno 13)"); otherwise the child's outcome (a failing child is a successful call).
absl::StatusOr<SubprocessResult> RunSubprocess(const std::vector<std::string>& argv,
                                               const SubprocessOptions& options = {});

// The first executable named `name` on PATH, or nullopt.
std::optional<std::string> FindOnPath(const std::string& name);

}  // namespace cake::base
