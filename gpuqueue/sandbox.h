// Runs one job in a fresh cake-worker process: framed request on stdin, framed reply on stdout.
// A crash, a hang, a flood of output or a missing reply becomes a failure with a readable
// reason; the next job always gets a fresh process, so a sticky CUDA error never outlives its
// job. With a Containment the worker runs in its own cgroup (or process group) and, with a
// SandboxSpec, confined as worker_sandbox.h describes, in a scrubbed environment; its whole tree
// is killed when the job ends, however it ends. Thread-safe (no shared state but Containment).
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "cake/worker.pb.h"
#include "containment.h"
#include "framing.h"
#include "worker_sandbox.h"

namespace cake::gpuqueue {

// A worker reply larger than this is not buffered: the worker's tree is killed.
inline constexpr size_t kMaxWorkerReplyBytes = kMaxFrameBytes + 4;

struct SandboxOptions {
  std::string worker_path;  // cake-worker executable
  std::chrono::milliseconds timeout{600000};
  // Without `confine`: added to the inherited environment. With it: the whole environment
  // (plus HOME and TMPDIR in the job directory).
  std::map<std::string, std::string> env;
  std::function<void(int pid)> on_start;
  Containment* containment = nullptr;  // null: the worker's process group only
  std::string job_name;                // names the job's cgroup, e.g. "job-12-a1"
  std::optional<SandboxSpec> confine;  // the worker sandbox; job_dir is created and removed
  size_t max_reply_bytes = kMaxWorkerReplyBytes;
  // Processes the job's tree may hold where no pids.max bounds it (the daemon counts them every
  // 50 ms and kills the tree beyond); 0 = unbounded. RLIMIT_NPROC does not bind a root daemon.
  int max_processes = 0;
};

// Ok(reply) when the worker answered (the reply may itself report a failed job); Aborted with
// the reason when the worker crashed, hung, flooded or answered garbage; FailedPrecondition when
// it could not be started.
absl::StatusOr<worker::Reply> RunInWorker(const worker::Request& request,
                                          const SandboxOptions& options);

}  // namespace cake::gpuqueue
