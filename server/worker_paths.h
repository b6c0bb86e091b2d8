// What caked's workers need on disk, settled before the first job: the toolchain they compile
// with, what the sandbox lets them read (gpuqueue::WorkerReadSet), and, for a root caked whose
// workers run as an unprivileged uid, that this uid can reach every file and folder a job uses.
// An executable it cannot reach but can run from a copy (the worker, cuobjdump) is copied into
// the runtime folder and used from there; anything else is a start-up error naming the uid, the
// path, the folder that blocks it, its mode and the fix (gpuqueue/worker_reach.h). Called once
// from main, before the orchestrator exists.
#pragma once

#include <string>

#include "absl/status/status.h"
#include "config.h"
#include "orchestrator.h"

namespace cake::server {

// Fills ocfg's worker_path, worker_env (CAKE_CUOBJDUMP when mirrored) and worker_readable from
// `cfg`; ocfg's worker_env, state_dir, store_root, containment_scope and worker uid/gid must be
// set. FailedPrecondition with the one-line reason when the worker uid cannot reach what it
// needs.
absl::Status PrepareWorkerPaths(const DaemonConfig& cfg, OrchestratorConfig* ocfg);

}  // namespace cake::server
