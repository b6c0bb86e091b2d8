// caked: the Consumer CAKE optimisation orchestrator daemon.
//   caked --state-dir DIR --listen unix:PATH|host:port [--config FILE]
// Logs to stderr, or to the journal with priorities when stderr is the journal's stream. With
// systemd (Type=notify) it reports READY=1 once the ledger is open and the server listens,
// STATUS= with the queue depth, and WATCHDOG=1.
#include <pwd.h>
#include <signal.h>
#include <sys/stat.h>
#include <systemd/sd-daemon.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <thread>

#include "CLI/CLI.hpp"
#include "absl/cleanup/cleanup.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "artifact_ownership.h"
#include "auth_audit.h"
#include "base/cli_layers.h"
#include "base/digest.h"
#include "base/files.h"
#include "config.h"
#include "gpuqueue/nvml.h"
#include "gpuqueue/worker_sandbox.h"
#include "grpcpp/ext/proto_server_reflection_plugin.h"
#include "grpcpp/grpcpp.h"
#include "grpcpp/health_check_service_interface.h"
#include "ledger/ledger.h"
#include "listener.h"
#include "orchestrator.h"
#include "reflection_v1.h"
#include "search_runner.h"
#include "service.h"
#include "spdlog/sinks/stdout_color_sinks.h"
#include "spdlog/sinks/systemd_sink.h"
#include "spdlog/spdlog.h"
#include "state_lock.h"
#include "wire_errors.h"
#include "worker_paths.h"

namespace fs = std::filesystem;
using cake::server::DaemonConfig;

namespace {

// The secret of the keyed contract ids: 32 random bytes, created once, written atomically.
absl::StatusOr<std::string> LoadOrCreateKey(const fs::path& path) {
  std::error_code ec;
  fs::create_directories(path.parent_path(), ec);
  ::chmod(path.parent_path().c_str(), 0700);
  std::string key = cake::base::ReadFileBytes(path);
  if (key.size() == 32) return key;
  if (!key.empty() || (fs::exists(path, ec) && fs::file_size(path, ec) != 0))
    return absl::FailedPreconditionError(absl::StrCat(
        path.string(), " holds ", key.size(),
        " bytes, not a 32-byte key; contract ids depend on "
        "it, so it is not replaced: restore it, or remove it to start a new id space"));
  auto fresh = cake::base::RandomBytes(32);
  if (!fresh.ok()) return fresh.status();
  if (absl::Status s = cake::base::WriteFileAtomically(path, *fresh, 0600); !s.ok()) return s;
  return *fresh;
}

std::string SelfDir() {
  std::error_code ec;
  fs::path p = fs::read_symlink("/proc/self/exe", ec);
  return ec ? "." : p.parent_path().string();
}

// $JOURNAL_STREAM names the journal's stream as "device:inode"; it is inherited, so it counts
// only while stderr is still that stream (not a file a parent redirected it to).
bool StderrIsTheJournal() {
  const char* js = getenv("JOURNAL_STREAM");
  struct stat st;
  if (js == nullptr || fstat(2, &st) != 0) return false;
  unsigned long long dev = 0, ino = 0;
  if (std::sscanf(js, "%llu:%llu", &dev, &ino) != 2) return false;
  return dev == static_cast<unsigned long long>(st.st_dev) &&
         ino == static_cast<unsigned long long>(st.st_ino);
}

// Rewrites the Prometheus textfile; a failure is logged once per kind of error, never fatal.
void WriteMetrics(cake::server::Orchestrator& orch, const cake::gpuqueue::Nvml* nvml,
                  const cake::server::AuthAudit& audit, const std::string& path) {
  static std::string last_error;
  absl::StatusOr<cake::server::MetricsInput> m = orch.MetricsSnapshot();
  absl::Status s = m.status();
  if (s.ok()) {
    m->auth_failures = audit.Counts();
    for (unsigned i = 0; nvml != nullptr && i < 64; ++i) {
      const cake::gpuqueue::Nvml::Reading r = nvml->Read(i);
      if (std::isnan(r.sm_mhz) && std::isnan(r.temperature_c) && std::isnan(r.power_w)) break;
      m->sm_mhz.push_back(r.sm_mhz);
    }
    s = cake::server::WriteFileAtomically(path, cake::server::MetricsText(*m));
  }
  if (!s.ok() && std::string(s.message()) != last_error) {
    last_error = std::string(s.message());
    spdlog::warn("metrics file: {}", last_error);
  }
}

}  // namespace

int main(int argc, char** argv) {
  // Signals are taken synchronously by the main loop. Blocked before anything starts a thread
  // (gRPC starts its own as soon as it is first used): a thread that had them unblocked would
  // take a SIGTERM whenever the main loop is not in sigtimedwait, and its default action would
  // end the daemon without draining.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  // Under systemd with stderr on the journal, records go to the journal with
  // their priority (journalctl -p warning shows warnings and worse); elsewhere to stderr.
  std::shared_ptr<spdlog::logger> logger;
  if (StderrIsTheJournal()) {
    logger = spdlog::systemd_logger_mt("caked", "caked");
  } else {
    logger = spdlog::stderr_color_mt("caked");
    logger->set_pattern("%Y-%m-%dT%H:%M:%S.%e %l %v");
  }
  spdlog::set_default_logger(logger);

  CLI::App app{"caked: Consumer CAKE optimisation orchestrator"};
  app.set_version_flag("--version", "caked " CAKE_VERSION);
  app.footer(
      "Every option is also a config-file key (--max-message-bytes is max_message_bytes; see "
      "deploy/caked.conf) and an environment variable (CAKED_MAX_MESSAGE_BYTES). Flags win over "
      "the environment, which wins over the config file.\n"
      "Example: caked --config /etc/caked/caked.conf --log-level debug");
  cake::base::UseLayeredOptions(app);
  DaemonConfig cfg;
  cake::server::AddDaemonOptions(app, &cfg);
  bool no_gpu = false, print_config = false;
  app.add_flag("--no-gpu", no_gpu,
               "Never use a GPU (candidates stop at Compiled); --use-gpu=false");
  app.add_flag("--print-config", print_config,
               "Print the effective configuration (every key, after flags, environment and "
               "config file) and exit");
  try {
    std::vector<std::string> args =
        cake::base::ArgsWithEnvironment(argc, argv, cake::server::DaemonEnvironment(app));
    app.parse(args);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;  // usage or configuration error
  }
  if (no_gpu) cfg.use_gpu = false;
  if (print_config) {
    std::cout << app.config_to_str(/*default_also=*/true, /*write_description=*/false);
    return 0;
  }
  spdlog::set_level(spdlog::level::from_str(cfg.log_level));
  if (cfg.listen.empty()) cfg.listen = "unix:" + (fs::path(cfg.state_dir) / "caked.sock").string();
  if (cfg.worker_path.empty()) cfg.worker_path = (fs::path(SelfDir()) / "cake-worker").string();
  if (cfg.cpu_workers <= 0)
    cfg.cpu_workers = std::max(2, static_cast<int>(std::thread::hardware_concurrency() / 2));

  // Nothing caked creates is readable by others: the ledger holds held-out rows and cases.
  ::umask(027);
  std::error_code ec;
  fs::create_directories(cfg.state_dir, ec);
  if (ec) {
    spdlog::critical("cannot create state directory {}: {}", cfg.state_dir, ec.message());
    return 1;
  }
  cfg.state_dir = fs::absolute(cfg.state_dir).lexically_normal().string();
  // The address and its credentials are checked before anything is opened or bound.
  absl::StatusOr<cake::server::ListenerPlan> planned = cake::server::PlanListener(cfg);
  if (!planned.ok()) {
    spdlog::critical("{}", std::string(planned.status().message()));
    return 1;
  }
  cake::server::ListenerPlan& listener = *planned;
  // Nothing in the state directory is touched before this daemon owns it.
  auto state_lock = cake::server::StateLock::Acquire(cfg.state_dir, cfg.listen);
  if (!state_lock.ok()) {
    spdlog::critical("{}", std::string(state_lock.status().message()));
    return 1;
  }
  // A root caked runs its workers as an unprivileged user: they may traverse the state
  // directory to reach their job directories and the artifact store (0751), nothing more.
  int64_t worker_uid = -1, worker_gid = -1;
  if (::geteuid() == 0 && !cfg.worker_user.empty()) {
    const struct passwd* pw = ::getpwnam(cfg.worker_user.c_str());
    if (pw == nullptr) {
      spdlog::critical("worker_user '{}' does not exist (set worker_user = \"\" to keep root)",
                       cfg.worker_user);
      return 1;
    }
    if (cake::gpuqueue::CanRunWorkersAsAnotherUser()) {
      worker_uid = pw->pw_uid;
      worker_gid = pw->pw_gid;
    } else {
      spdlog::warn(
          "worker_user '{}' not applied: caked runs as root without CAP_SETUID, CAP_SETGID and "
          "CAP_CHOWN, so its workers keep uid 0 (without capabilities)",
          cfg.worker_user);
    }
  }
  ::chmod(cfg.state_dir.c_str(), worker_uid >= 0 ? 0751 : 0750);
  if (access(cfg.worker_path.c_str(), X_OK) != 0) {
    spdlog::critical("cake-worker not found or not executable at {} (use --worker)",
                     cfg.worker_path);
    return 1;
  }
  const std::string ledger_path = (fs::path(cfg.state_dir) / "ledger.db").string();
  auto ledger = cake::ledger::Ledger::Open(ledger_path);
  if (!ledger.ok()) {
    spdlog::critical("ledger: {}", std::string(ledger.status().message()));
    return 1;
  }
  // A ledger from before the umask may be world-readable: it is tightened, with its WAL files.
  for (const char* suffix : {"", "-wal", "-shm"}) {
    const std::string f = ledger_path + suffix;
    struct stat st;
    if (::stat(f.c_str(), &st) == 0 && (st.st_mode & 0027) != 0)
      ::chmod(f.c_str(), st.st_mode & 0750);
  }
  auto contract_key = LoadOrCreateKey(fs::path(cfg.state_dir) / "keys" / "contract-id");
  if (!contract_key.ok()) {
    spdlog::critical("keys: {}", std::string(contract_key.status().message()));
    return 1;
  }
  auto tokens =
      cake::server::TokenTable::LoadOrCreate((fs::path(cfg.state_dir) / "tokens").string());
  if (!tokens.ok()) {
    spdlog::critical("tokens: {}", std::string(tokens.status().message()));
    return 1;
  }

  cake::server::OrchestratorConfig ocfg;
  ocfg.worker_path = cfg.worker_path;
  ocfg.store_root = (fs::path(cfg.state_dir) / "artifacts").string();
  ocfg.cpu_workers = cfg.cpu_workers;
  ocfg.max_queue = cfg.max_queue;
  ocfg.max_attempts = cfg.max_attempts;
  ocfg.compile_timeout = std::chrono::milliseconds(cfg.compile_timeout_ms);
  ocfg.gpu_timeout = std::chrono::milliseconds(cfg.gpu_timeout_ms);
  ocfg.probe_devices = cfg.use_gpu;
  // Workers get an allow-listed environment, never the daemon's own.
  ocfg.worker_env["PATH"] = getenv("PATH") ? getenv("PATH") : "/usr/local/bin:/usr/bin:/bin";
  ocfg.worker_env["LANG"] = "C.UTF-8";
  for (const char* pass :
       {"CAKE_NVCC", "CAKE_CUOBJDUMP", "CAKE_COMPUTE_SANITIZER", "CAKE_WORKER_FAULT_DIR",
        "CAKE_WORKER_TEST_HOOKS", "CAKE_LIBCUDA", "CAKE_LIBNVML", "LD_LIBRARY_PATH",
        "CUDA_VISIBLE_DEVICES", "NVIDIA_VISIBLE_DEVICES", "CUDA_HOME"})
    if (const char* v = getenv(pass)) ocfg.worker_env[pass] = v;
  if (const char* faults = getenv("CAKE_WORKER_FAULT_DIR")) ocfg.worker_writable.push_back(faults);
  ocfg.state_dir = cfg.state_dir;
  ocfg.containment_scope = cake::base::Sha256Hex(cfg.state_dir).substr(0, 12);
  ocfg.confine_workers = cfg.confine_workers;
  ocfg.job_cgroups = cfg.job_containment == "auto";
  ocfg.job_limits.memory_max_bytes = cfg.job_memory_max_bytes;
  ocfg.job_limits.pids_max = cfg.job_pids_max;
  ocfg.job_max_processes = cfg.job_pids_max;
  ocfg.compile_address_space_bytes = cfg.compile_address_space_bytes;
  ocfg.contract_id_key = *contract_key;
  ocfg.worker_uid = worker_uid;
  ocfg.worker_gid = worker_gid;
  if (worker_uid >= 0) {
    // Workers reach their job folders and the artifact store through their group; no other
    // local user lists either (work/ 0710, the store 01770: server/artifact_ownership.h).
    const fs::path work = fs::path(cfg.state_dir) / "work";
    fs::create_directories(work, ec);
    if (::chown(work.c_str(), ::geteuid(), static_cast<gid_t>(worker_gid)) != 0 ||
        ::chmod(work.c_str(), 0710) != 0) {
      spdlog::critical("cannot prepare {} for the worker group: {}", work.string(),
                       std::strerror(errno));
      return 1;
    }
    if (absl::Status s = cake::server::PrepareArtifactStore(ocfg.store_root, ::geteuid(),
                                                            static_cast<gid_t>(worker_gid),
                                                            static_cast<uid_t>(worker_uid));
        !s.ok()) {
      spdlog::critical("{}", std::string(s.message()));
      return 1;
    }
  }
  cake::server::WorkerCopies worker_copies;
  // Every return from here on removes the copies (the scope guard), the clean stop included.
  absl::Cleanup remove_copies = [&worker_copies] {
    cake::server::RemoveWorkerCopies(worker_copies);
  };
  if (absl::Status s = cake::server::PrepareWorkerPaths(cfg, &ocfg, &worker_copies); !s.ok()) {
    spdlog::critical("{}", std::string(s.message()));
    return 1;
  }
  cake::server::Orchestrator orch(ledger->get(), ocfg);
  auto boot_bytes = cake::base::RandomBytes(8);
  if (!boot_bytes.ok()) {
    spdlog::critical("boot id: {}", boot_bytes.status().ToString());
    return 1;
  }
  const std::string boot_id = cake::base::HexOf(*boot_bytes);
  absl::Status started = orch.Start(boot_id);
  if (!started.ok()) {
    spdlog::critical("orchestrator: {}", std::string(started.message()));
    return 1;
  }

  if (listener.address.kind == cake::server::ListenAddress::Kind::kUnix) {
    const fs::path sock = listener.address.path;
    struct stat st;
    if (lstat(sock.c_str(), &st) == 0) {
      if (!S_ISSOCK(st.st_mode)) {
        spdlog::critical("{} exists and is not a socket; refusing to replace it", sock.string());
        return 1;
      }
      fs::remove(sock, ec);  // stale socket of an earlier run (the state lock says it is ours)
    }
  }
  cake::server::AuthAudit audit;
  // Searches a previous run left running go on (or end, past their deadline).
  cake::server::SearchRunner searches(&orch, ledger->get());
  if (absl::Status s = searches.Resume(); !s.ok()) {
    spdlog::critical("searches: {}", std::string(s.message()));
    orch.Stop();
    return 1;
  }
  cake::server::CakeServiceImpl service(&orch, &*tokens, &audit, listener.client_certs.get(),
                                        &searches);
  grpc::EnableDefaultHealthCheckService(true);
  grpc::reflection::InitProtoReflectionServerBuilderPlugin();
  grpc::ServerBuilder builder;
  int bound_port = 0;
  builder.AddListeningPort(cfg.listen, listener.credentials, &bound_port);
  // One owner per address: without SO_REUSEPORT a second daemon's bind fails instead of
  // sharing the port (and half of every client's calls).
  builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
  builder.SetMaxReceiveMessageSize(static_cast<int>(cfg.max_message_bytes));
  // A reply over the limit fails as RESOURCE_EXHAUSTED instead of growing without bound.
  builder.SetMaxSendMessageSize(static_cast<int>(cfg.max_reply_bytes));
  // Idle connections (a Watch with no events) are pinged; one whose peer vanished is closed and
  // its watch slot freed. Clients may ping as often as every 10 s without being cut off.
  if (cfg.keepalive_time_ms > 0) {
    builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_TIME_MS, static_cast<int>(cfg.keepalive_time_ms));
    builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_TIMEOUT_MS, 20000);
    builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_PERMIT_WITHOUT_CALLS, 1);
    builder.AddChannelArgument(GRPC_ARG_HTTP2_MIN_RECV_PING_INTERVAL_WITHOUT_DATA_MS, 10000);
    builder.AddChannelArgument(GRPC_ARG_HTTP2_MAX_PING_STRIKES, 0);
  }
  builder.RegisterService(&service);
  // Reflection v1 beside the plugin's v1alpha: newer clients ask for v1 first.
  cake::server::ReflectionV1 reflection_v1(
      {cake::v1::CakeService::service_full_name(), "grpc.health.v1.Health",
       "grpc.reflection.v1.ServerReflection", "grpc.reflection.v1alpha.ServerReflection"});
  builder.RegisterService(&reflection_v1);
  {
    std::vector<std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface>> hooks;
    hooks.push_back(cake::server::WireErrorInterceptors());
    builder.experimental().SetInterceptorCreators(std::move(hooks));
  }
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  if (!server ||
      (listener.address.kind == cake::server::ListenAddress::Kind::kTcp && bound_port == 0)) {
    spdlog::critical("{}", cake::server::BindFailure(listener.address));
    searches.Stop();
    orch.Stop();
    return 1;
  }
  if (listener.address.kind == cake::server::ListenAddress::Kind::kUnix)
    chmod(listener.address.path.c_str(), 0660);
  // Overall and per service, as health clients ask for either ("" or "cake.v1.CakeService").
  server->GetHealthCheckService()->SetServingStatus(true);
  server->GetHealthCheckService()->SetServingStatus(cake::v1::CakeService::service_full_name(),
                                                    true);
  for (const std::string& w : listener.warnings) spdlog::warn("{}", w);
  spdlog::info("caked listening on {} ({}; boot {}, ledger {})",
               listener.address.WithPort(bound_port), listener.transport, boot_id, ledger_path);
  sd_notify(0, "READY=1");

  // The metrics' SM clocks come from NVML, which needs no CUDA context in this process.
  std::unique_ptr<cake::gpuqueue::Nvml> nvml;
  if (!cfg.metrics_file.empty() && cfg.use_gpu) {
    if (auto loaded = cake::gpuqueue::Nvml::Load(); loaded.ok()) nvml = *std::move(loaded);
  }
  int64_t ticks = 0;
  timespec tick{1, 0};
  for (;;) {
    siginfo_t info;
    const int sig = sigtimedwait(&signals, &info, &tick);
    if (sig == SIGTERM || sig == SIGINT) {
      spdlog::info("signal {}: draining", sig);
      break;
    }
    orch.Tick();
    if (!cfg.metrics_file.empty() && ++ticks % 5 == 1)
      WriteMetrics(orch, nvml.get(), audit, cfg.metrics_file);
    auto st = orch.Status();
    if (st.ok())
      sd_notify(
          0, absl::StrCat("WATCHDOG=1\nSTATUS=", st->queued_jobs(), " queued, ", st->running_jobs(),
                          " running; ", st->execution_device() ? "device ready" : st->device_note())
                 .c_str());
  }
  sd_notify(0, "STOPPING=1");
  server->GetHealthCheckService()->SetServingStatus(false);
  server->GetHealthCheckService()->SetServingStatus(cake::v1::CakeService::service_full_name(),
                                                    false);
  // Running jobs are killed and re-queued first (seconds, whatever the GPU is doing); then calls
  // in flight get 2 s to finish. The whole stop stays far inside the unit's TimeoutStopSec.
  service.BeginShutdown();  // open watches end within 250 ms
  searches.Stop();          // within one of their 2 s waits; they resume at the next start
  orch.Stop();
  server->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(2));
  spdlog::info("caked stopped");
  return 0;
}
