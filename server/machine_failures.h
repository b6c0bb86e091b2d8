// The failure of the machine is not the failure of the schedule (Temporal's and Slurm's rule for
// tasks and hosts). A job the machine failed (the worker could not start or be confined, a tool
// or the device was missing, a disk was full, an I/O error, the daemon crashed during it, its
// result could not be saved) is retried after a growing delay, a bounded number of times, then
// BLOCKED: its candidate keeps its state and says why, until `cakectl retry` (or a new proposal
// of the same schedule) re-queues it. Nothing the machine did ever becomes a rejection.
// Everything else a job can fail on (a compile error, the verifier, wrong output, a sanitizer
// finding, the kernel's own timeout, a worker that misbehaved and was killed) is the schedule's.
// Pure functions; thread-safe.
#pragma once

#include <chrono>
#include <cstdint>

#include "absl/status/status.h"
#include "cake/worker.pb.h"

namespace cake::server {

struct MachineRetryPolicy {
  int max_failures = 4;                         // machine failures of a job before it blocks
  std::chrono::milliseconds first_delay{2000};  // then x4 each time: 2 s, 8 s, 32 s
  std::chrono::milliseconds max_delay{300000};
};

struct MachineRetry {
  bool block = false;    // out of retries: BLOCKED until an operator retries it
  int64_t delay_ms = 0;  // otherwise, wait this long
};

// What to do after the machine failed a job that it had failed `failures_before` times already.
MachineRetry NextMachineRetry(const MachineRetryPolicy& policy, int failures_before);

// Whose fault a worker that could not run a job is: gpuqueue::RunInWorker answers
// FailedPrecondition when the worker could not be started, contained or confined (the machine),
// Aborted when it ran and misbehaved (killed for time, output, processes or a signal: the job's).
worker::FailureClass ClassifyWorkerRun(const absl::Status& run);

}  // namespace cake::server
