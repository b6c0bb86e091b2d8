// What caked's workers need on disk, settled before the first job: the toolchain they compile
// with, what the sandbox lets them read (gpuqueue::WorkerReadSet), and, for a root caked whose
// workers run as an unprivileged uid, that this uid can reach every file and folder a job uses.
// An executable it cannot reach but can run from a copy (the worker, cuobjdump) is copied into
// the runtime folder and used from there; anything else is a start-up error naming the uid, the
// path, the folder that blocks it, its mode and the fix (gpuqueue/worker_reach.h). Called once
// from main, before the orchestrator exists. The copies are the daemon's to remove when it stops
// (RemoveWorkerCopies); those of a daemon killed first are removed by the next start once the
// state folder they served is gone (PruneAbandonedRuntimeScopes).
#pragma once

#include <string>

#include "absl/status/status.h"
#include "config.h"
#include "orchestrator.h"

namespace cake::server {

// Where runtime folders go when neither --runtime-dir nor $RUNTIME_DIRECTORY names one: one
// subfolder per state folder (its containment scope).
inline constexpr char kDefaultRuntimeParent[] = "/run/cake";

// What PrepareWorkerPaths copied, for RemoveWorkerCopies: the `bin` folder of copies, and the
// whole scope folder when it is a default one under kDefaultRuntimeParent. Empty: nothing copied.
struct WorkerCopies {
  std::string bin_dir;
  std::string scope_dir;
};

// Fills ocfg's worker_path, worker_env (CAKE_CUOBJDUMP when mirrored) and worker_readable from
// `cfg`; ocfg's worker_env, state_dir, store_root, containment_scope and worker uid/gid must be
// set. FailedPrecondition with the one-line reason when the worker uid cannot reach what it
// needs.
absl::Status PrepareWorkerPaths(const DaemonConfig& cfg, OrchestratorConfig* ocfg,
                                WorkerCopies* copies);

// Removes what PrepareWorkerPaths copied; a failure is logged, never fatal.
void RemoveWorkerCopies(const WorkerCopies& copies);

// Removes each subfolder of `parent` that names (in its `state_dir` file) a state folder that no
// longer exists; folders without that file are left alone. Returns how many were removed.
int PruneAbandonedRuntimeScopes(const std::string& parent);

}  // namespace cake::server
