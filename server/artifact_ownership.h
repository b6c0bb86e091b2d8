// Who owns the artifact store when a root caked runs its workers as another user. The store is
// the daemon's: mode 01770 with the worker's group, so a worker adds entries but cannot rename or
// remove another's, and no other local user lists it. What a compile job publishes is handed
// over to the daemon as soon as the job ends (owner the daemon, group the worker's; folders
// 0750, files 0640): later workers read a cubin and cannot change it. Not thread-safe per path.
#pragma once

#include <sys/types.h>

#include <string>

#include "absl/status/status.h"
#include "cake/worker.pb.h"

namespace cake::server {

// Creates `store_root` (and its scratch folder `tmp`, the worker's) and sets their owners and
// modes. FailedPrecondition naming the path when that is not possible.
absl::Status PrepareArtifactStore(const std::string& store_root, uid_t daemon_uid, gid_t worker_gid,
                                  uid_t worker_uid);

// Hands `artifact_dir` (a published entry below `store_root`) and its shard folder over to the
// daemon. InvalidArgument for a path outside the store; a symlink is never followed.
absl::Status HandOverArtifacts(const std::string& store_root, const std::string& artifact_dir,
                               uid_t daemon_uid, gid_t worker_gid);

// Hands over every entry a compile job's reply names (receipts, portfolio members); a failure
// is logged at warning (the entry stays readable to the worker's uid; no verdict changes).
void HandOverCompileOutputs(const worker::Reply& reply, const std::string& store_root,
                            uid_t daemon_uid, gid_t worker_gid);

}  // namespace cake::server
