// caked configuration: defaults, then the config file (`--config FILE`: `key = value`, `#`
// comments, keys as in deploy/caked.conf), then the environment (CAKED_<KEY>), then flags
// (base/cli_layers.h). Every key is also a flag: `max_message_bytes` is `--max-message-bytes`.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "CLI/CLI.hpp"

namespace cake::server {

struct DaemonConfig {
  std::string state_dir = "/var/lib/caked";  // ledger.db, artifacts/, tokens/
  std::string listen;                        // Default: unix:STATE_DIR/caked.sock
  std::string worker_path;                   // Default: cake-worker beside caked
  int cpu_workers = 0;  // 0: one per two cores, at least 2 (a search compiles many at once)
  int max_queue = 256;
  int max_attempts = 3;
  int64_t max_message_bytes = 4 << 20;  // gRPC receive limit
  int64_t max_reply_bytes = 64 << 20;   // gRPC send limit (RESOURCE_EXHAUSTED beyond)
  int64_t keepalive_time_ms = 60000;    // HTTP/2 pings on idle connections (watch streams)
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
  // Where a root caked keeps copies of executables its workers' uid cannot reach where they
  // lie (a checkout in a 0700 folder). Default: $RUNTIME_DIRECTORY (systemd), else
  // /run/cake/SCOPE.
  std::string runtime_dir;
  std::string metrics_file;  // Prometheus textfile, rewritten every few seconds
  // TLS on a TCP listen address (server/tls_credentials.h): certificate chain and key (PEM),
  // and the CA of client certificates for mutual TLS ("" = no client certificates).
  std::string tls_cert, tls_key, tls_client_ca;
  // Serve a TCP address other hosts can reach without TLS (tokens in clear): refused unless set.
  bool insecure_listen = false;
};

// Registers `--config` and one option per DaemonConfig field on `app`, bound to `config`.
void AddDaemonOptions(CLI::App& app, DaemonConfig* config);

// (flag, environment variable) of every option: CAKED_STATE_DIR for --state-dir, ...
std::vector<std::pair<std::string, std::string>> DaemonEnvironment(const CLI::App& app);

}  // namespace cake::server
