// caked configuration: defaults, then the config file (`key = value`, `#` comments), then flags.
// Every key and its default is listed in deploy/caked.conf.
#pragma once

#include <string>

#include "absl/status/statusor.h"

namespace cake::server {

struct DaemonConfig {
  std::string state_dir = "/var/lib/caked";  // ledger.db, artifacts/, tokens/
  std::string listen;                        // Default: unix:STATE_DIR/caked.sock
  std::string worker_path;                   // Default: cake-worker beside caked
  int cpu_workers = 2;
  int max_queue = 256;
  int max_attempts = 3;
  int64_t max_message_bytes = 4 << 20;
  int64_t compile_timeout_ms = 300000;
  int64_t gpu_timeout_ms = 600000;
  bool use_gpu = true;
  bool confine_workers = true;                       // the worker sandbox (landlock, seccomp, ...)
  std::string job_containment = "auto";              // auto (cgroup v2 if possible) | process_group
  int64_t job_memory_max_bytes = int64_t{16} << 30;  // memory.max per job, where delegated
  int64_t job_pids_max = 512;                        // pids.max per job (or RLIMIT_NPROC headroom)
  int64_t compile_address_space_bytes = int64_t{8} << 30;  // RLIMIT_AS of compile workers
  std::string log_level = "info";      // trace | debug | info | warn | error | critical
  std::string worker_user = "nobody";  // a root caked's workers run as this user ("" = root)
};

// Applies `key = value` lines of `path` to `config`. InvalidArgument names the line.
absl::Status ApplyConfigFile(const std::string& path, DaemonConfig* config);

}  // namespace cake::server
