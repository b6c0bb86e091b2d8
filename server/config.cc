#include "config.h"

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"

namespace cake::server {

void AddDaemonOptions(CLI::App& app, DaemonConfig* c) {
  app.set_config("--config", "", "Config file (key = value; see deploy/caked.conf)");
  // A non-negative number with its default shown in --help.
  const auto count = [&app](const char* name, auto& field, const char* help) {
    app.add_option(name, field, help)->check(CLI::NonNegativeNumber)->capture_default_str();
  };
  app.add_option("--state-dir", c->state_dir, "State directory (ledger, artifacts, tokens)")
      ->capture_default_str();
  app.add_option("--listen", c->listen,
                 "unix:PATH or host:port (default unix:STATE_DIR/caked.sock)");
  app.add_option("--worker-path,--worker", c->worker_path,
                 "cake-worker executable (default: beside caked)");
  app.add_option("--log-level", c->log_level, "trace, debug, info, warn, error or critical")
      ->check(CLI::IsMember({"trace", "debug", "info", "warn", "error", "critical"}))
      ->capture_default_str();
  count("--cpu-workers", c->cpu_workers,
        "Parallel compile workers (0: one per two cores, at least 2)");
  count("--max-queue", c->max_queue, "Queued jobs before Propose is refused");
  count("--max-attempts", c->max_attempts,
        "Re-queues of a job interrupted by a restart before it fails");
  count("--max-message-bytes", c->max_message_bytes, "gRPC receive limit");
  count("--max-reply-bytes", c->max_reply_bytes,
        "gRPC send limit (a bigger reply is RESOURCE_EXHAUSTED)");
  count("--keepalive-time-ms", c->keepalive_time_ms,
        "Ping idle connections this often; one that does not answer is closed");
  count("--compile-timeout-ms", c->compile_timeout_ms, "Per compile job");
  count("--gpu-timeout-ms", c->gpu_timeout_ms, "Per GPU job");
  app.add_option("--use-gpu", c->use_gpu, "Use a GPU when one is found (true or false)")
      ->capture_default_str();
  app.add_option("--confine-workers", c->confine_workers,
                 "The worker sandbox: landlock, seccomp, rlimits (true or false)")
      ->capture_default_str();
  app.add_option("--job-containment", c->job_containment, "auto or process_group")
      ->check(CLI::IsMember({"auto", "process_group"}))
      ->capture_default_str();
  count("--job-memory-max-bytes", c->job_memory_max_bytes, "memory.max of a job's cgroup");
  count("--job-pids-max", c->job_pids_max, "pids.max of a job's cgroup");
  count("--compile-address-space-bytes", c->compile_address_space_bytes,
        "RLIMIT_AS of compile workers");
  app.add_option("--worker-user", c->worker_user, "User a root caked runs its workers as")
      ->capture_default_str();
  app.add_option("--runtime-dir", c->runtime_dir,
                 "Folder for copies of executables the worker uid cannot reach (default "
                 "$RUNTIME_DIRECTORY, else /run/cake/SCOPE)");
  app.add_option("--metrics-file", c->metrics_file,
                 "Prometheus textfile (node_exporter's textfile collector) to keep current");
  app.add_option("--tls-cert", c->tls_cert,
                 "PEM certificate (chain) of a TCP listen address; needs --tls-key");
  app.add_option("--tls-key", c->tls_key, "PEM private key of --tls-cert");
  app.add_option("--tls-client-ca", c->tls_client_ca,
                 "PEM CA of client certificates: mutual TLS, every client presents one");
  app.add_option("--insecure-listen", c->insecure_listen,
                 "Serve a TCP address other hosts can reach without TLS, tokens in clear "
                 "(true or false; refused otherwise)")
      ->capture_default_str();
}

std::vector<std::pair<std::string, std::string>> DaemonEnvironment(const CLI::App& app) {
  std::vector<std::pair<std::string, std::string>> out;
  for (const CLI::Option* o : app.get_options()) {
    if (o->get_lnames().empty()) continue;
    const std::string& name = o->get_lnames().front();
    if (name == "help" || name == "version") continue;
    out.emplace_back("--" + name,
                     "CAKED_" + absl::AsciiStrToUpper(absl::StrReplaceAll(name, {{"-", "_"}})));
  }
  return out;
}

}  // namespace cake::server
