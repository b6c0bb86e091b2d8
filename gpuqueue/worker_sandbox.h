// The least a worker needs: what a job's child process may do beyond its cgroup. Prepared in the
// daemon before fork (so the child only makes async-signal-safe calls) and applied, in order,
// between fork and exec:
//   1. join the job's cgroup (containment.h), when there is one;
//   2. rlimits: CPU seconds, file size, no core files, processes (where no pids controller
//      bounds them), address space for CPU jobs (RLIMIT_AS breaks CUDA's VA reservations, so GPU
//      jobs are bounded by the cgroup's memory.max instead);
//   3. no new privileges;
//   4. Landlock (where the kernel has it): readable only what a compile and a run need (the
//      system's libraries and tools, kSystemReadable; the toolkit, the worker and the library
//      folders, SandboxSpec::readable; the job's directory) and never the protected directories
//      (the state directory: ledger, tokens, keys), writable only the job's directory and the
//      artifact store, GPU device nodes openable (and /proc writable: the driver names its
//      threads) only for GPU jobs, no TCP, no signals to or
//      abstract sockets of processes outside the sandbox (ptrace and /proc/PID/mem of the daemon
//      are out of reach as well);
//   5. all capabilities dropped (bounding, inheritable, ambient, effective, permitted), and for a
//      root daemon the worker's own unprivileged uid/gid (so RLIMIT_NPROC binds a fork bomb);
//   6. a seccomp deny-list of what a compiler or a kernel launch never needs (ptrace, mount,
//      namespaces, keyctl, bpf, module loading, ...): EPERM.
// The environment is scrubbed to an allow-list by the caller (sandbox.cc). Thread-safe.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "base/subprocess.h"

namespace cake::gpuqueue {

// Read (and execute) beneath these in every worker: the system's own trees, and from /etc only
// the files the loader, the C library and the driver read (never /etc as a whole: hostname,
// machine-id, keys). /dev is listable only; its nodes are granted one by one.
inline constexpr const char* kSystemReadable[] = {"/usr",
                                                  "/lib",
                                                  "/lib32",
                                                  "/lib64",
                                                  "/libx32",
                                                  "/bin",
                                                  "/sbin",
                                                  "/opt",
                                                  "/proc",
                                                  "/sys",
                                                  "/etc/ld.so.cache",
                                                  "/etc/ld.so.conf",
                                                  "/etc/ld.so.conf.d",
                                                  "/etc/localtime",
                                                  "/etc/nsswitch.conf",
                                                  "/etc/passwd",
                                                  "/etc/group",
                                                  "/etc/alternatives",
                                                  "/etc/nvidia"};

struct SandboxSpec {
  std::string job_dir;                // read-write: cwd, HOME, TMPDIR
  std::vector<std::string> writable;  // read-write trees, given to the worker's uid per job
  // Read-write trees the worker reaches through its group (the artifact store: the daemon owns
  // it, sticky and group-writable, so a worker adds entries but cannot touch another's).
  std::vector<std::string> group_writable;
  // Read-execute trees beyond kSystemReadable: the toolkit, the worker's folder, library
  // folders (WorkerReadSet). Empty: the wide rule, everything readable but protected_dirs (for
  // callers that cannot say; caked always says).
  std::vector<std::string> readable;
  std::vector<std::string> protected_dirs;  // nothing below is readable (but `writable`)
  bool gpu = false;                         // GPU device nodes read-write
  int cgroup_procs_fd = -1;                 // join this cgroup first (-1: none)
  std::chrono::seconds cpu_seconds{0};      // RLIMIT_CPU; 0 = none
  int64_t address_space_bytes = 0;          // RLIMIT_AS; 0 = none
  int64_t file_size_bytes = 0;              // RLIMIT_FSIZE; 0 = none
  int64_t max_processes = 0;                // RLIMIT_NPROC beyond the uid's current count; 0 = none
  // Run as this uid/gid (a root daemon's workers: RLIMIT_NPROC binds only non-root users, and
  // the state directory's modes then keep them out too); -1 = the daemon's own.
  int64_t run_as_uid = -1, run_as_gid = -1;
  // Layers that can be left out, to find which one a driver or tool trips over
  // (cake-sandbox-probe); the daemon keeps them all.
  bool landlock = true;
  bool landlock_scopes = true;  // signals and abstract sockets (ABI 6)
  bool seccomp = true;
};

// The prepared steps and the descriptors they use (closed on destruction, after the fork).
class PreparedSandbox {
 public:
  ~PreparedSandbox();
  const std::vector<base::ChildStep>& steps() const { return steps_; }
  // What is in force, e.g. "landlock ABI 7, seccomp deny-list, no capabilities, rlimits".
  const std::string& description() const { return description_; }

 private:
  friend absl::StatusOr<std::unique_ptr<PreparedSandbox>> PrepareSandbox(const SandboxSpec&);
  PreparedSandbox() = default;
  std::vector<base::ChildStep> steps_;
  std::string description_;
  int landlock_fd_ = -1;
  std::vector<unsigned char> bpf_;  // struct sock_filter[], from libseccomp
  struct Limits;
  std::unique_ptr<Limits> limits_;
};

absl::StatusOr<std::unique_ptr<PreparedSandbox>> PrepareSandbox(const SandboxSpec& spec);

// What a worker must read and execute beyond kSystemReadable: the worker's own folder, each
// tool's installation (the folder above the bin/ it lies in, found through symlinks: the
// toolkit's nvvm/, include/ and lib64/ beside nvcc), and every folder named by PATH and
// LD_LIBRARY_PATH in `env`. Canonical paths, sorted, without duplicates; missing ones dropped.
std::vector<std::string> WorkerReadSet(const std::string& worker_path,
                                       const std::map<std::string, std::string>& env,
                                       const std::vector<std::string>& tools);

// Whether the workers' seccomp filter can be loaded here: loads it in a short-lived child.
// FailedPrecondition with the reason when the system refuses it (qemu-user does, EINVAL).
absl::Status SeccompFiltersLoad();

// The Landlock ABI version of this kernel (0 = none) and why, for status.
int LandlockAbi();
std::string DescribeSandboxSupport();

// Whether this process can give its workers another uid: effective CAP_SETUID, CAP_SETGID and
// CAP_CHOWN (a root daemon started without capabilities has none of them).
bool CanRunWorkersAsAnotherUser();

}  // namespace cake::gpuqueue
