// The orchestrator: the daemon's authority. It stores contracts (server/contract_checks.h),
// takes proposals and measurement requests, builds each job's worker request
// (server/job_requests.h), runs jobs through the lanes of the exclusive queue
// (gpuqueue/lanes.h: CPU lanes for compiles, one lane per execution device, each job in a fresh
// cake-worker process; this process never creates a CUDA context), records their results in the
// ledger, and moves candidates through their state machine (server/candidate_lifecycle.h):
//   Proposed -> Analyzed -> Compiled -> Validated -> Measured <-> Challenger -> ConfirmedWinner
//   (or Rejected at any stage, with the stage and its evidence kept),
// where Validated means eligible: the validate job (numerical, mutation/lifecycle, determinism
// records) and the sanitize job (one record per tool the contract lists) have produced every
// record the contract requires, and none failed (server/eligibility.h). A candidate with missing
// evidence stays Compiled and says what is missing; Measure refuses it (FAILED_PRECONDITION).
// Promotion is the orchestrator's alone (server/promotion_policy.h): validated, no required-row
// regression, faster than the incumbent beyond the practical floor in a confirmation run; ties
// keep the incumbent.
//
// Thread-safety: all public methods are thread-safe.
#pragma once

#include <chrono>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "cake/service.pb.h"
#include "cake/worker.pb.h"
#include "candidate_lifecycle.h"
#include "compiler/targets.h"
#include "gpuqueue/containment.h"
#include "gpuqueue/lanes.h"
#include "gpuqueue/sandbox.h"
#include "ledger/ledger.h"
#include "machine_failures.h"
#include "metrics.h"

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
  // What confined workers may read beyond the system's trees (gpuqueue::WorkerReadSet): the
  // toolkit, the worker's folder, library folders. Empty: everything but the state directory.
  std::vector<std::string> worker_readable;
  int64_t worker_uid = -1, worker_gid = -1;  // a root daemon's workers run as these; -1 = same
  std::string contract_id_key;  // secret of the keyed contract ids (STATE_DIR/keys/contract-id)
};

enum class Role { kOperator, kAgent, kCi };
std::string RoleName(Role r);

class Orchestrator : private gpuqueue::LaneWork {
 public:
  Orchestrator(ledger::Ledger* ledger, OrchestratorConfig config);
  ~Orchestrator() override;

  // Kills what a dead boot left running (its job cgroups), recovers the ledger (interrupted jobs
  // re-queued, jobs out of attempts failed with their candidates settled, in one transaction),
  // probes devices in a worker, starts the lanes (one per device found).
  absl::Status Start(const std::string& boot_id);
  // Stops taking jobs and kills the running ones' trees; their jobs go back to the queue
  // (SHUTDOWN attempts, not counted against max_attempts). Returns within seconds.
  void Stop();

  absl::StatusOr<v1::CreateContractReply> CreateContract(const contract::Contract& c);
  absl::StatusOr<v1::GetContractReply> GetContract(const std::string& id, Role role);
  // `proposer` names who proposed in the record ("" = the role's name; "search" for the daemon's
  // search, which proposes with an agent's rights).
  absl::StatusOr<v1::ProposeReply> Propose(const v1::ProposeRequest& req, Role role,
                                           const std::string& proposer = "");
  absl::StatusOr<evidence::Candidate> GetCandidate(const std::string& id, Role role);
  // What the Prometheus textfile shows (server/metrics.h), SM clocks left to the caller.
  absl::StatusOr<MetricsInput> MetricsSnapshot();
  // server/orchestrator_inspect.cc.
  absl::StatusOr<v1::InspectReply> Inspect(const v1::InspectRequest& req, Role role);
  absl::StatusOr<v1::ListCandidatesReply> ListCandidates(const v1::ListCandidatesRequest& req,
                                                         Role role);
  absl::StatusOr<int64_t> Measure(const std::string& candidate, const std::string& key);
  absl::StatusOr<v1::RegressReply> Regress(const std::string& contract_id);
  absl::StatusOr<v1::StatusReply> Status();
  // The incumbent as an export folder's files (server/orchestrator_export.cc): FailedPrecondition
  // naming the contract when it has none.
  absl::StatusOr<v1::ExportReply> Export(const v1::ExportRequest& req);
  absl::StatusOr<std::vector<ledger::Event>> Events(int64_t after, int limit);
  // Returns once an event after `after` may exist, or after `timeout`.
  void WaitForEvent(int64_t after, std::chrono::milliseconds timeout);
  // No job is queued or running.
  absl::StatusOr<bool> Idle();
  // Re-queues the candidate's jobs the machine had failed too often (BLOCKED); how many
  // (server/orchestrator_machine.cc).
  absl::StatusOr<v1::RetryReply> Retry(const std::string& candidate);
  // Called about once a second by the main loop: jobs whose end the ledger could not record
  // (a full disk) are recorded again, as the machine's failures, once it can.
  void Tick();

  bool has_execution_device() const { return execution_device_; }
  // The execution devices Start found (one lane each); read-only after Start.
  const std::vector<gpuqueue::Device>& devices() const { return devices_; }
  // The first device that runs objects of the contract's execution target and answers its probes
  // (else the first that runs them; its profile times the contract: server/lane_admission.h), or
  // FailedPrecondition saying why none does (no device at all, or only others: "no device for
  // target sm_120f on this host: GPU-… is sm_90 (NVIDIA H100 (9.0)); compiled and receipted only:
  // no SM120 execution witness"). Nothing is validated, timed or searched for such a contract.
  // In server/orchestrator_devices.cc, with the lanes' admission and the probes.
  absl::StatusOr<gpuqueue::Device> ExecutionDeviceFor(const contract::Contract& c) const;

 private:
  // A proposal whose hypothesis failed before, citing nothing recorded since, is answered with
  // the failed candidate's record; nullopt when it is not such a repeat.
  absl::StatusOr<std::optional<v1::ProposeReply>> AnswerRepeatedFailure(
      const v1::ProposeRequest& req, const std::string& schedule_hash);

  // gpuqueue::LaneWork: what the lanes run.
  std::vector<int64_t> Queued(const gpuqueue::Device* device) override;
  // The jobs of `queued` the lane of `device` (null: a CPU lane) may take, in queue order.
  std::vector<int64_t> Admitted(const std::vector<ledger::JobQueue::QueuedJob>& queued,
                                const gpuqueue::Device* device,
                                const std::set<std::string>& not_answering);
  // The execution target of a contract (cached: contracts are immutable); null when it cannot be
  // read or names no known target.
  const compiler::TargetInfo* ExecutionTargetOf(const std::string& contract_id);
  // DeviceLabels of the devices whose latest probe failed (a copy).
  std::set<std::string> NotAnswering() const;
  bool Run(int64_t job, const gpuqueue::Device* device) override;
  std::string Probe(const gpuqueue::Device& device, int64_t after_job) override;
  void OnForeignWait(const gpuqueue::Device& device, size_t processes) override;

  // One attempt of a job; true when its device must be probed before its next job.
  bool RunJob(const ledger::Job& job, const gpuqueue::Device* device);
  absl::Status Record(const ledger::Job& job, const worker::Reply& reply);
  absl::Status OnCompiled(const ledger::Job& job, const worker::Reply& reply);
  absl::Status OnValidated(const ledger::Job& job, const worker::Reply& reply);
  absl::Status OnSanitized(const ledger::Job& job, const worker::Reply& reply);
  // After validation evidence: derive eligibility; an eligible candidate becomes Validated and,
  // unless it is or becomes the incumbent, is measured against the incumbent.
  absl::Status Admit(const std::string& candidate);
  absl::Status OnMeasured(const ledger::Job& job, const worker::Reply& reply);
  absl::Status OnRegressed(const ledger::Job& job, const worker::Reply& reply);
  // A job that failed: the schedule's fault settles its candidate as the job kind says; the
  // machine's is retried later or blocked (OnMachineFailure), never a verdict.
  absl::Status OnJobFailed(const ledger::Job& job, const std::string& reason,
                           worker::FailureClass failure_class = worker::SCHEDULE);
  absl::Status OnMachineFailure(const ledger::Job& job, const std::string& reason);
  // Moves a candidate by one step of its state machine. A step its state does not allow is
  // recorded as an illegal_transition event (the job's result is kept), never applied.
  absl::Status Advance(const std::string& candidate, Step step, const std::string& note);

  absl::StatusOr<int64_t> Enqueue(const std::string& candidate, const worker::Request& request);
  // A regression re-timing's end: recorded with the incumbent, judged (server/regress_policy.h)
  // into an event; no candidate's state changes.
  absl::Status OnRegressTimed(const ledger::Job& job, const evidence::Candidate& incumbent,
                              const contract::Contract& c, evidence::Measurement m);
  absl::StatusOr<int64_t> EnqueueValidate(const std::string& candidate, ledger::JobKind kind);
  absl::StatusOr<int64_t> EnqueueSanitize(const std::string& candidate,
                                          const std::vector<std::string>& tools);
  absl::StatusOr<int64_t> EnqueueMeasure(const std::string& candidate, const std::string& incumbent,
                                         int run);
  absl::StatusOr<worker::KernelRef> KernelFor(const std::string& candidate);
  // Device discovery in a fresh worker (this process never initializes CUDA); `device` confines
  // it to one device, null sees them all.
  absl::StatusOr<worker::Reply> RunProbe(const std::string& job_id, const gpuqueue::Device* device);
  // The sandbox options of one job attempt; a GPU job's worker sees only `device`.
  gpuqueue::SandboxOptions WorkerOptions(const std::string& job_name, bool gpu,
                                         const gpuqueue::Device* device,
                                         std::chrono::milliseconds timeout);

  ledger::Ledger* ledger_;
  OrchestratorConfig config_;
  // Written by Start before the lanes run; read-only after.
  bool execution_device_ = false;
  std::string device_note_;
  std::vector<gpuqueue::Device> devices_;
  std::string boot_id_;
  std::unique_ptr<gpuqueue::Containment> containment_;
  std::string sandbox_note_;
  std::unique_ptr<gpuqueue::Lanes> lanes_;
  MachineRetryPolicy machine_retry_;
  // Jobs whose end could not be written (the ledger refused: a full disk), retried by Tick; and
  // the machine's latest failure, for status.
  absl::Mutex machine_mu_;
  std::vector<std::pair<ledger::Job, std::string>> unsettled_ ABSL_GUARDED_BY(machine_mu_);
  std::string last_machine_failure_ ABSL_GUARDED_BY(machine_mu_);
  // Devices whose latest probe failed (DeviceLabel): timing jobs anchor on one that answers.
  mutable absl::Mutex not_answering_mu_;
  std::set<std::string> not_answering_ ABSL_GUARDED_BY(not_answering_mu_);
  absl::Mutex targets_mu_;
  std::map<std::string, const compiler::TargetInfo*> target_of_contract_
      ABSL_GUARDED_BY(targets_mu_);
};

}  // namespace cake::server
