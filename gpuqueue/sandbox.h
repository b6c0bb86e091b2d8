// Runs one job in a fresh cake-worker process: framed request on stdin, framed reply on stdout,
// its own process group, killed (the whole group) when the timeout passes. A crash, a hang or a
// missing reply becomes a WorkerFailure with a readable reason; the next job always gets a fresh
// process, so a sticky CUDA error never outlives its job. Thread-safe (no shared state).
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <string>

#include "absl/status/statusor.h"
#include "cake/worker.pb.h"

namespace cake::gpuqueue {

struct SandboxOptions {
  std::string worker_path;  // cake-worker executable
  std::chrono::milliseconds timeout{600000};
  std::map<std::string, std::string> env;  // extra environment for the worker
  std::function<void(int pid)> on_start;
};

// Ok(reply) when the worker answered (the reply may itself report a failed job); Aborted with
// the reason when the worker crashed, hung or answered garbage.
absl::StatusOr<worker::Reply> RunInWorker(const worker::Request& request,
                                          const SandboxOptions& options);

}  // namespace cake::gpuqueue
