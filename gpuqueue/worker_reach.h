// Whether the worker's uid can reach what a job needs, checked the way systemd checks ExecStart=
// under User=: in a child that takes that uid and asks the kernel (access(2)), not by reading
// mode bits. A root caked drops its workers to an unprivileged uid; a checkout cloned into a
// 0700 folder (a home directory, `mktemp -d`) then holds a worker binary that uid cannot even
// reach. What can be copied (the worker, a standalone cuobjdump) is copied into a root-owned
// 0755 folder (MirrorExecutable); what cannot (the toolkit, the state directory's parents) makes
// caked refuse to start with one line naming the uid, the path, the folder that blocks it, its
// mode and owner, and the fix (DescribeUnreachable). Thread-compatible; forks.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace cake::gpuqueue {

struct PathNeed {
  std::string what;  // for people: "the worker", "nvcc", "the artifact store"
  std::string path;
  int access = 0;  // R_OK | W_OK | X_OK
};

struct Unreachable {
  PathNeed need;
  int err = 0;           // errno of access(2) as the uid
  std::string blocking;  // the first folder on the way the uid cannot search, else the path
  unsigned mode = 0;     // of `blocking` (permission bits)
  uid_t owner = 0;       // of `blocking`
};

// The needs `uid`:`gid` (no supplementary groups, as a worker) cannot meet, in the order given.
absl::StatusOr<std::vector<Unreachable>> FindUnreachable(uid_t uid, gid_t gid,
                                                         const std::vector<PathNeed>& needs);

// "workers run as uid 65534, which cannot reach nvcc at /p/nvcc: /p is mode 0700, owner uid 0
// (Permission denied); fix: ..."
std::string DescribeUnreachable(uid_t uid, const Unreachable& u);

// A copy of the executable `file` at `dir`/basename (dir created 0755 as needed), owned by the
// caller, mode 0755, written whole and renamed into place; its path.
absl::StatusOr<std::string> MirrorExecutable(const std::string& file, const std::string& dir);

}  // namespace cake::gpuqueue
