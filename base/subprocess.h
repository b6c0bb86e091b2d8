// Runs a child process with captured stdout/stderr, optional stdin bytes, a wall-clock timeout and
// its own process group (so a timeout kills everything it started). Used for nvcc/ptxas/cuobjdump
// and for worker processes. A small POSIX wrapper rather than a library because the process-group
// and timeout semantics are the point. Thread-compatible; each call owns its child.
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace cake::base {

struct SubprocessOptions {
  std::string stdin_bytes;
  std::chrono::milliseconds timeout{std::chrono::minutes(10)};
  std::string working_dir;                 // empty = inherit
  std::map<std::string, std::string> env;  // added to (or replacing in) the inherited env
  std::function<void(int pid)> on_start;   // called with the child's pid once it runs
};

struct SubprocessResult {
  int exit_code = -1;      // valid when !signaled
  int term_signal = 0;     // signal that ended the child, 0 if it exited
  bool timed_out = false;  // the group was killed because the timeout passed
  std::string stdout_bytes;
  std::string stderr_bytes;
  double wall_seconds = 0;

  bool ok() const { return !timed_out && term_signal == 0 && exit_code == 0; }
  std::string Describe() const;  // "exit 1", "killed by signal 9", "timed out after 2.0 s"
};

// NotFound if argv[0] cannot be executed; otherwise the child's outcome (a failing child is a
// successful call).
absl::StatusOr<SubprocessResult> RunSubprocess(const std::vector<std::string>& argv,
                                               const SubprocessOptions& options = {});

// The first executable named `name` on PATH, or nullopt.
std::optional<std::string> FindOnPath(const std::string& name);

}  // namespace cake::base
