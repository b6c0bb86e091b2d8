// The orchestrator: contracts, candidates and their state machine
//   Proposed -> Analyzed -> Compiled -> Validated -> Measured -> Challenger -> ConfirmedWinner
//   (or Rejected at any stage, with the stage and its evidence kept),
// where Validated means eligible: the validate job (numerical, mutation/lifecycle, determinism
// records) and the sanitize job (one record per tool the contract lists) have produced every
// record the contract requires, and none failed (server/eligibility.h). A candidate with missing
// evidence stays Compiled and says what is missing; Measure refuses it (FAILED_PRECONDITION).
// the durable job queue (the ledger's jobs table) drained by lanes of worker processes, and
// promotion — which is the orchestrator's alone: validated, no required-row regression, faster
// than the incumbent beyond the practical floor in a confirmation run; ties keep the incumbent.
//
// Lanes: `cpu_workers` threads run compile jobs in parallel; one GPU lane per device runs
// validate/measure/regress jobs one at a time, after waiting out foreign processes. Every job
// runs in a fresh cake-worker process; this process never creates a CUDA context.
//
// Thread-safety: all public methods are thread-safe.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "cake/service.pb.h"
#include "cake/worker.pb.h"
#include "gpuqueue/containment.h"
#include "gpuqueue/sandbox.h"
#include "ledger/ledger.h"

namespace cake::server {

struct OrchestratorConfig {
  std::string worker_path;  // cake-worker executable
  std::string store_root;   // artifact store
  int cpu_workers = 2;      // Default: 2
  int max_queue = 256;      // queued jobs beyond which Propose is RESOURCE_EXHAUSTED
  int max_attempts = 3;     // re-queues of a job interrupted by a daemon restart
  std::chrono::milliseconds compile_timeout{std::chrono::minutes(5)};
  std::chrono::milliseconds gpu_timeout{std::chrono::minutes(10)};
  std::map<std::string, std::string> worker_env;  // the workers' whole environment
  bool probe_devices = true;                      // false: never use a GPU (no execution device)
  // Job containment and the worker sandbox (gpuqueue/containment.h, worker_sandbox.h).
  std::string state_dir;           // protected from workers; holds work/ (job directories)
  std::string containment_scope;   // names this daemon's job cgroups
  bool confine_workers = true;     // Default: true (the worker sandbox)
  bool job_cgroups = true;         // false: process-group containment only
  gpuqueue::JobLimits job_limits;  // memory.max / pids.max where delegated
  int64_t compile_address_space_bytes = int64_t{8} << 30;  // RLIMIT_AS of CPU jobs. Default: 8 GiB
  int64_t job_file_size_bytes = int64_t{4} << 30;          // RLIMIT_FSIZE. Default: 4 GiB
  int64_t job_max_processes = 512;           // RLIMIT_NPROC headroom without a pids controller
  std::vector<std::string> worker_writable;  // extra read-write trees for workers (test hooks)
  int64_t worker_uid = -1, worker_gid = -1;  // a root daemon's workers run as these; -1 = same
  std::string contract_id_key;  // secret of the keyed contract ids (STATE_DIR/keys/contract-id)
};

enum class Role { kOperator, kAgent, kCi };
std::string RoleName(Role r);

class Orchestrator {
 public:
  Orchestrator(ledger::Ledger* ledger, OrchestratorConfig config);
  ~Orchestrator();

  // Kills what a dead boot left running (its job cgroups), recovers the ledger (interrupted jobs
  // re-queued, jobs out of attempts failed with their candidates settled, in one transaction),
  // probes devices in a worker, starts lanes.
  absl::Status Start(const std::string& boot_id);
  // Stops taking jobs and kills the running ones' trees; their jobs go back to the queue
  // (SHUTDOWN attempts, not counted against max_attempts). Returns within seconds.
  void Stop();

  absl::StatusOr<service::CreateContractReply> CreateContract(const contract::Contract& c);
  absl::StatusOr<service::GetContractReply> GetContract(const std::string& id, Role role);
  absl::StatusOr<service::ProposeReply> Propose(const service::ProposeRequest& req, Role role);
  absl::StatusOr<evidence::Candidate> GetCandidate(const std::string& id, Role role);
  absl::StatusOr<service::ListCandidatesReply> ListCandidates(
      const service::ListCandidatesRequest& req, Role role);
  absl::StatusOr<int64_t> Measure(const std::string& candidate, const std::string& key);
  absl::StatusOr<service::RegressReply> Regress(const std::string& contract_id);
  absl::StatusOr<service::StatusReply> Status();
  absl::StatusOr<std::vector<ledger::Event>> Events(int64_t after, int limit);

  bool has_execution_device() const { return execution_device_; }

 private:
  void LaneLoop(bool gpu);
  void RunJob(const ledger::Job& job, bool gpu);
  absl::Status OnCompiled(const ledger::Job& job, const worker::Reply& reply);
  absl::Status OnValidated(const ledger::Job& job, const worker::Reply& reply);
  absl::Status OnSanitized(const ledger::Job& job, const worker::Reply& reply);
  // After validation evidence: derive eligibility; an eligible candidate becomes Validated and,
  // unless it is or becomes the incumbent, is measured against the incumbent.
  absl::Status Admit(const std::string& candidate);
  absl::Status OnMeasured(const ledger::Job& job, const worker::Reply& reply);
  absl::Status OnRegressed(const ledger::Job& job, const worker::Reply& reply);
  absl::Status OnJobFailed(const ledger::Job& job, const std::string& reason);
  absl::StatusOr<int64_t> EnqueueValidate(const std::string& candidate, const std::string& kind);
  absl::StatusOr<int64_t> EnqueueSanitize(const std::string& candidate,
                                          const std::vector<std::string>& tools);
  absl::StatusOr<int64_t> EnqueueMeasure(const std::string& candidate, const std::string& incumbent,
                                         int run);
  absl::StatusOr<worker::KernelRef> KernelFor(const std::string& candidate);
  void WaitForForeignProcesses();
  // Device discovery in a fresh worker (this process never initializes CUDA).
  absl::StatusOr<worker::Reply> RunProbe(const std::string& job_id);
  void ProbeDevice(const ledger::Job& after);
  void Wake();
  // The sandbox options of one job attempt.
  gpuqueue::SandboxOptions WorkerOptions(const std::string& job_name, bool gpu,
                                         std::chrono::milliseconds timeout);
  std::string ContractId(const contract::Contract& c) const;

  ledger::Ledger* ledger_;
  OrchestratorConfig config_;
  bool execution_device_ = false;
  std::string device_note_;
  std::vector<std::string> devices_;
  std::string boot_id_;

  std::unique_ptr<gpuqueue::Containment> containment_;
  std::string sandbox_note_;

  std::mutex mu_;
  std::condition_variable cv_;
  std::set<int64_t> claimed_ ABSL_GUARDED_BY(mu_);  // jobs a lane has taken
  std::string gpu_state_ ABSL_GUARDED_BY(mu_) = "idle";
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::vector<std::thread> lanes_;
};

}  // namespace cake::server
