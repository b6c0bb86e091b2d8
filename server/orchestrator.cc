#include "orchestrator.h"
#include "base/digest.h"

#include <signal.h>
#include <unistd.h>

#include <filesystem>
#include <random>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/strip.h"
#include "base/status_macros.h"
#include "candidate_view.h"
#include "compiler/analysis.h"
#include "compiler/canonical.h"
#include "compiler/parse.h"
#include "compiler/targets.h"
#include "eligibility.h"
#include "gpuqueue/nvml.h"
#include "gpuqueue/sandbox.h"
#include "protocol/stopping.h"
#include "request_limits.h"
#include "spdlog/spdlog.h"
#include "workloads/workload.h"

namespace cake::server {
namespace {

namespace fs = std::filesystem;

using evidence::CandidateState;

bool IsGpuKind(const std::string& kind) {
  return kind == "validate" || kind == "sanitize" || kind == "measure" || kind == "regress";
}

uint64_t FreshSeed() {
  std::random_device rd;
  return (uint64_t{rd()} << 32) ^ rd();
}

// Contract sanity: what the orchestrator needs to run it, then what its workload requires.
// INVALID_ARGUMENT otherwise.
absl::Status CheckContract(const contract::Contract& c) {
  if (c.name().empty()) return absl::InvalidArgumentError("contract has no name");
  const workloads::Workload* w = workloads::FindWorkload(c.operation());
  if (w == nullptr) return workloads::UnknownOperation(c.operation());
  if (c.rows().empty()) return absl::InvalidArgumentError("contract has no rows");
  bool required = false;
  for (const contract::Row& r : c.rows()) {
    if (r.name().empty()) return absl::InvalidArgumentError("a row has no name");
    if (absl::Status s = w->CheckShape(r.problem()); !s.ok())
      return absl::InvalidArgumentError(absl::StrCat("row '", r.name(), "': ", s.message()));
    required |= r.required() && !r.held_out();
  }
  if (!required)
    return absl::InvalidArgumentError("contract needs at least one required, non-held-out row");
  for (const std::string& t : {c.compile_target(), c.execution_target()}) {
    auto target = compiler::TargetByName(t);
    if (!target.ok()) return absl::InvalidArgumentError(target.status().message());
  }
  if (absl::Status s = w->CheckContract(c); !s.ok()) return s;
  if (auto configs = protocol::TimingConfigs(c.protocol()); !configs.ok())
    return absl::InvalidArgumentError(absl::StrCat("protocol: ", configs.status().message()));
  if (c.protocol().throttle_fraction() < 0 || c.protocol().throttle_fraction() >= 1)
    return absl::InvalidArgumentError("protocol.throttle_fraction must be in [0, 1)");
  if (c.has_validation())
    if (std::string bad = CheckValidationPolicy(c.validation(), *w); !bad.empty())
      return absl::InvalidArgumentError(bad);
  auto parsed = compiler::ParseModuleText(c.baseline_schedule(), "baseline_schedule");
  if (!parsed.ok())
    return absl::InvalidArgumentError(
        absl::StrCat("baseline schedule: ", parsed.status().message()));
  return absl::OkStatus();
}

}  // namespace

std::string RoleName(Role r) {
  switch (r) {
    case Role::kOperator:
      return "operator";
    case Role::kAgent:
      return "agent";
    case Role::kCi:
      return "ci";
  }
  return "agent";
}

Orchestrator::Orchestrator(ledger::Ledger* ledger, OrchestratorConfig config)
    : ledger_(ledger), config_(std::move(config)) {}

Orchestrator::~Orchestrator() { Stop(); }

std::string Orchestrator::ContractId(const contract::Contract& c) const {
  // Keyed: an agent that guesses a held-out row cannot confirm it against the public id.
  return "ct-" + base::HmacSha256Hex(config_.contract_id_key,
                                     "cake-contract-v2\n" + compiler::DeterministicBytes(c))
                     .substr(0, 16);
}

absl::Status Orchestrator::Start(const std::string& boot_id) {
  boot_id_ = boot_id;
  containment_ = gpuqueue::Containment::Create(
      config_.containment_scope.empty() ? "default" : config_.containment_scope, config_.job_limits,
      config_.job_cgroups);
  sandbox_note_ = config_.confine_workers ? gpuqueue::DescribeSandboxSupport()
                                          : "workers are not confined (confine_workers = false)";
  if (config_.confine_workers && config_.worker_uid >= 0)
    absl::StrAppend(&sandbox_note_, "; workers run as uid ", config_.worker_uid);
  spdlog::info("job containment: {}", containment_->Describe());
  spdlog::info("worker sandbox: {}", sandbox_note_);
  // What a dead boot left running dies before its job is re-queued beside it.
  // Without cgroups they are found by working directory: every worker runs in its job
  // directory under STATE_DIR/work, nvcc in a scratch directory of the artifact store.
  const int leftovers =
      containment_->KillLeftovers() +
      (config_.state_dir.empty() ? 0
                                 : containment_->KillByWorkingDirectory(
                                       {(fs::path(config_.state_dir) / "work").string(),
                                        (fs::path(config_.store_root) / "tmp").string()}));
  if (leftovers > 0) spdlog::warn("killed {} process(es) left by an earlier boot", leftovers);
  ledger::RecoveryReport rec;
  CAKE_RETURN_IF_ERROR(ledger_->Atomically([&]() -> absl::Status {
    CAKE_ASSIGN_OR_RETURN(rec, ledger_->BeginBoot(boot_id, config_.max_attempts));
    // A job out of attempts settles its candidate in the same transaction: none is left
    // PROPOSED with no job and no note.
    for (const ledger::Job& j : rec.gave_up) CAKE_RETURN_IF_ERROR(OnJobFailed(j, j.error));
    return absl::OkStatus();
  }));
  // Without cgroups, a worker of a dead boot is found by its recorded pid: its own group.
  for (const ledger::Job& j : rec.interrupted)
    if (j.worker_pid > 0 && getpgid(static_cast<pid_t>(j.worker_pid)) == j.worker_pid) {
      std::error_code ec;
      const auto exe = fs::read_symlink(absl::StrCat("/proc/", j.worker_pid, "/exe"), ec);
      if (!ec && fs::equivalent(exe, config_.worker_path, ec)) {
        ::kill(-static_cast<pid_t>(j.worker_pid), SIGKILL);
        spdlog::warn("killed the process group of job {}'s worker {} (an earlier boot's)", j.id,
                     j.worker_pid);
      }
    }
  spdlog::info("ledger recovered: {} job(s) re-queued, {} failed, {} queued", rec.requeued,
               rec.failed, rec.queued);
  // Device discovery runs in a worker: this process never initializes CUDA.
  if (config_.probe_devices) {
    auto reply = RunProbe("probe");
    if (!reply.ok()) {
      device_note_ = absl::StrCat("no execution device: probe failed: ", reply.status().message());
    } else if (reply->probe().device_count() == 0) {
      device_note_ = absl::StrCat("no execution device: ", reply->probe().reason());
    } else {
      execution_device_ = true;
      for (const std::string& d : reply->probe().devices()) devices_.push_back(d);
    }
  } else {
    device_note_ = "no execution device: GPU use disabled by configuration";
  }
  spdlog::info("{}",
               execution_device_ ? absl::StrCat("execution device: ", devices_[0]) : device_note_);
  std::lock_guard<std::mutex> lock(mu_);
  stopping_ = false;
  for (int i = 0; i < config_.cpu_workers; ++i) lanes_.emplace_back([this] { LaneLoop(false); });
  lanes_.emplace_back([this] { LaneLoop(true); });
  return absl::OkStatus();
}

void Orchestrator::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  // Running jobs do not get to finish: their trees are killed and their jobs re-queued, so a
  // stop takes seconds whatever the GPU is doing.
  if (containment_) containment_->KillAll();
  for (std::thread& t : lanes_)
    if (t.joinable()) t.join();
  lanes_.clear();
}

gpuqueue::SandboxOptions Orchestrator::WorkerOptions(const std::string& job_name, bool gpu,
                                                     std::chrono::milliseconds timeout) {
  gpuqueue::SandboxOptions opts;
  opts.worker_path = config_.worker_path;
  opts.timeout = timeout;
  opts.env = config_.worker_env;
  opts.containment = containment_.get();
  opts.job_name = job_name;
  if (config_.confine_workers && !config_.state_dir.empty()) {
    gpuqueue::SandboxSpec spec;
    spec.job_dir = (fs::path(config_.state_dir) / "work" / job_name).string();
    spec.writable = config_.worker_writable;
    spec.writable.push_back(config_.store_root);
    spec.writable.push_back((fs::path(config_.store_root) / "tmp").string());
    spec.run_as_uid = config_.worker_uid;
    spec.run_as_gid = config_.worker_gid;
    spec.protected_dirs = {config_.state_dir};
    spec.gpu = gpu;
    spec.cpu_seconds =
        std::chrono::duration_cast<std::chrono::seconds>(timeout) + std::chrono::seconds(10);
    spec.address_space_bytes = gpu ? 0 : config_.compile_address_space_bytes;
    spec.file_size_bytes = config_.job_file_size_bytes;
    // A fork bomb is bounded by pids.max where delegated, else by RLIMIT_NPROC.
    if (!containment_->bounds_processes()) spec.max_processes = config_.job_max_processes;
    opts.max_processes = static_cast<int>(config_.job_max_processes);
    opts.env["CUDA_CACHE_PATH"] = (fs::path(spec.job_dir) / "cuda-cache").string();
    opts.confine = spec;
  }
  return opts;
}

void Orchestrator::Wake() { cv_.notify_all(); }

void Orchestrator::LaneLoop(bool gpu) {
  for (;;) {
    std::optional<ledger::Job> next;
    {
      std::unique_lock<std::mutex> lock(mu_);
      if (stopping_) return;
      auto queued = ledger_->QueuedJobs();
      if (queued.ok())
        for (const ledger::Job& j : *queued)
          if (IsGpuKind(j.kind) == gpu && !claimed_.count(j.id)) {
            claimed_.insert(j.id);
            next = j;
            break;
          }
      if (!next) {
        cv_.wait_for(lock, std::chrono::milliseconds(500));
        continue;
      }
    }
    RunJob(*next, gpu);
    {
      std::lock_guard<std::mutex> lock(mu_);
      claimed_.erase(next->id);
    }
    Wake();
  }
}

void Orchestrator::WaitForForeignProcesses() {
  static auto nvml = gpuqueue::Nvml::Load();
  if (!nvml.ok()) return;
  bool logged = false;
  for (;;) {
    auto procs = (*nvml)->ComputeProcesses(0);
    if (!procs.ok() || procs->empty()) break;
    if (!logged) {
      spdlog::warn("device 0 is used by {} foreign process(es); waiting, never evicting",
                   procs->size());
      (void)ledger_->AddEvent(
          "device_wait", "", 0,
          absl::StrCat("device 0 busy with ", procs->size(), " foreign process(es); waiting"));
      logged = true;
    }
    {
      std::lock_guard<std::mutex> lock(mu_);
      gpu_state_ = "waiting for foreign process";
      if (stopping_) return;
    }
    std::this_thread::sleep_for(std::chrono::seconds(1));
  }
}

void Orchestrator::RunJob(const ledger::Job& job, bool gpu) {
  worker::Request request;
  if (!request.ParseFromString(job.request)) {
    if (ledger_->MarkJobRunning(job.id, 0).ok())
      (void)OnJobFailed(job, "stored request does not parse");
    return;
  }
  if (gpu) WaitForForeignProcesses();
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopping_) return;
    if (gpu) gpu_state_ = "busy";
  }
  const int attempt = job.attempt + 1;
  request.set_attempt(attempt);
  std::chrono::milliseconds timeout = gpu ? config_.gpu_timeout : config_.compile_timeout;
  if (request.has_sanitize()) {
    // Each tool runs under its own limit; the job may take all of them.
    const auto policy = workloads::EffectivePolicy(request.sanitize().contract());
    const int per_tool = policy.sanitizer_timeout_s() > 0 ? policy.sanitizer_timeout_s() : 300;
    timeout = std::max<std::chrono::milliseconds>(
        timeout, std::chrono::seconds(per_tool * request.sanitize().tools_size() + 60));
  }
  gpuqueue::SandboxOptions opts =
      WorkerOptions(absl::StrCat("job-", job.id, "-a", attempt), gpu, timeout);
  absl::Status marked = ledger_->MarkJobRunning(job.id, 0);
  if (!marked.ok()) return;  // someone else took it
  opts.on_start = [&](int pid) {
    // Recorded so a later boot can find this worker's group when cgroups are not in force.
    if (absl::Status st = ledger_->SetJobPid(job.id, pid); !st.ok())
      spdlog::warn("job {}: recording worker pid {} failed: {}", job.id, pid, st.ToString());
  };
  spdlog::info("job {} ({}, candidate {}) started", job.id, job.kind, job.candidate_id);
  auto reply = gpuqueue::RunInWorker(request, opts);
  bool stopping = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (gpu) gpu_state_ = "idle";
    stopping = stopping_;
  }
  if (stopping && !reply.ok()) {
    // Killed by the shutdown, not failed: the job runs again after the restart.
    absl::Status rq = ledger_->RequeueAfterShutdown(job.id);
    spdlog::info("job {} ({}) stopped by the shutdown; {}", job.id, job.kind,
                 rq.ok() ? "re-queued" : rq.ToString());
    return;
  }
  absl::Status s;
  if (!reply.ok()) {
    s = OnJobFailed(job, std::string(reply.status().message()));
  } else if (!reply->ok()) {
    s = OnJobFailed(job, reply->error());
  } else if (job.kind == "compile") {
    s = OnCompiled(job, *reply);
  } else if (job.kind == "validate") {
    s = OnValidated(job, *reply);
  } else if (job.kind == "sanitize") {
    s = OnSanitized(job, *reply);
  } else if (job.kind == "measure") {
    s = OnMeasured(job, *reply);
  } else if (job.kind == "regress") {
    s = OnRegressed(job, *reply);
  } else {
    s = OnJobFailed(job, absl::StrCat("unknown job kind '", job.kind, "'"));
  }
  if (!s.ok()) {
    // The result could not be recorded (too large, a ledger error): the job still ends, as a
    // failure with that reason, so its candidate is not left waiting for it.
    spdlog::error("job {}: recording its result failed: {}", job.id, s.ToString());
    if (absl::Status f =
            OnJobFailed(job, absl::StrCat("recording the result failed: ", s.message()));
        !f.ok())
      spdlog::error("job {}: recording the failure failed too: {}", job.id, f.ToString());
  }
  spdlog::info("job {} ({}) finished{}", job.id, job.kind,
               reply.ok() && reply->ok()
                   ? ""
                   : absl::StrCat(" with a failure: ",
                                  reply.ok() ? reply->error() : reply.status().message()));
  // After a hang, a sticky error or a killed worker, check the device in a fresh worker before
  // the next GPU job uses it.
  if (gpu && (!reply.ok() || reply->device_fault())) ProbeDevice(job);
}

absl::StatusOr<worker::Reply> Orchestrator::RunProbe(const std::string& job_id) {
  worker::Request probe;
  probe.set_job_id(job_id);
  probe.mutable_probe();
  return gpuqueue::RunInWorker(probe, WorkerOptions(job_id, true, std::chrono::seconds(60)));
}

void Orchestrator::ProbeDevice(const ledger::Job& after) {
  auto reply = RunProbe(absl::StrCat("probe-after-", after.id));
  const bool ok = reply.ok() && reply->probe().device_count() > 0;
  const std::string msg =
      ok ? absl::StrCat("device answers after job ", after.id, ": ", reply->probe().devices(0))
         : absl::StrCat("device probe after job ", after.id, " failed: ",
                        reply.ok() ? reply->probe().reason() : reply.status().message());
  if (ok)
    spdlog::info("{}", msg);
  else
    spdlog::error("{}", msg);
  (void)ledger_->AddEvent(ok ? "device_probe_ok" : "device_probe_failed", after.candidate_id,
                          after.id, msg);
}

absl::Status Orchestrator::OnJobFailed(const ledger::Job& job, const std::string& reason) {
  return ledger_->Atomically([&]() -> absl::Status {
    CAKE_RETURN_IF_ERROR(ledger_->FinishJob(job.id, false, reason));
    if (job.kind == "compile")
      return ledger_->SetCandidateState(job.candidate_id, evidence::REJECTED, evidence::COMPILED,
                                        absl::StrCat("compile job failed: ", reason));
    if (job.kind == "validate") {
      // The worker died or hung past its limit: that is a failed numerical record.
      evidence::EvidenceRecord r;
      r.set_kind(evidence::NUMERICAL_CONTRACT);
      r.set_status(evidence::FAILED);
      r.set_failure(absl::StrCat("validation worker failed: ", reason));
      r.set_summary(r.failure());
      CAKE_RETURN_IF_ERROR(ledger_->PutEvidence(job.candidate_id, job.id, r));
      return ledger_->SetCandidateState(job.candidate_id, evidence::REJECTED, evidence::VALIDATED,
                                        absl::StrCat("validation job failed: ", reason));
    }
    CAKE_ASSIGN_OR_RETURN(evidence::Candidate c, ledger_->GetCandidate(job.candidate_id));
    if (job.kind == "sanitize")
      // Missing evidence, not a defect: the candidate stays where it is, not eligible.
      return ledger_->SetCandidateState(
          job.candidate_id, c.state(), c.rejected_at(),
          absl::StrCat("sanitizer job failed (evidence missing, not eligible): ", reason));
    if (job.kind == "measure") {
      // The run is recorded as invalid with the reason; it never enters a ranking.
      worker::Request req;
      evidence::Measurement m;
      if (req.ParseFromString(job.request)) {
        m.set_incumbent(req.measure().incumbent().candidate());
        m.set_run(req.measure().run());
      }
      m.set_candidate(job.candidate_id);
      m.set_invalid(true);
      m.set_invalid_reason(absl::StrCat("measure worker failed: ", reason));
      m.set_verdict(evidence::INVALID);
      CAKE_RETURN_IF_ERROR(ledger_->PutMeasurement(job.candidate_id, m));
      return ledger_->SetCandidateState(
          job.candidate_id, c.state(), c.rejected_at(),
          absl::StrCat("measurement run invalid (no timing ranked): ", reason));
    }
    return absl::OkStatus();
  });
}

absl::Status Orchestrator::OnCompiled(const ledger::Job& job, const worker::Reply& reply) {
  CAKE_ASSIGN_OR_RETURN(evidence::Candidate cand, ledger_->GetCandidate(job.candidate_id));
  CAKE_ASSIGN_OR_RETURN(contract::Contract c, ledger_->GetContract(cand.contract_id()));
  return ledger_->Atomically([&]() -> absl::Status {
    CAKE_RETURN_IF_ERROR(ledger_->FinishJob(job.id, true, ""));
    const auto& results = reply.compile().results();
    if (results.empty()) return absl::InternalError("compile reply has no results");
    CAKE_RETURN_IF_ERROR(ledger_->PutAnalysis(job.candidate_id, results[0].analysis()));
    for (const worker::TargetResult& r : results)
      if (r.has_receipt()) CAKE_RETURN_IF_ERROR(ledger_->PutReceipt(job.candidate_id, r.receipt()));
    for (const worker::TargetResult& r : results) {
      if (r.analysis().verdict() != report::VERIFIED) {
        const bool unknown = r.analysis().verdict() == report::UNDETERMINED;
        std::string first;
        for (const auto& d : r.analysis().diagnostics())
          if (d.severity() == report::ERROR || d.severity() == report::UNKNOWN) {
            first = absl::StrCat(report::DiagId_Name(d.id()), ": ", d.message());
            break;
          }
        return ledger_->SetCandidateState(
            job.candidate_id, evidence::REJECTED, evidence::ANALYZED,
            absl::StrCat(
                unknown ? "analysis unknown (unknown is not pass) on " : "analysis rejected on ",
                r.target(), ": ", first));
      }
    }
    CAKE_RETURN_IF_ERROR(ledger_->SetCandidateState(job.candidate_id, evidence::ANALYZED,
                                                    evidence::CANDIDATE_STATE_UNSPECIFIED, ""));
    for (const worker::TargetResult& r : results)
      if (!r.has_receipt() || r.receipt().outcome() != report::LoweringReceipt::PASS) {
        std::string why = "no receipt";
        if (r.has_receipt() && !r.receipt().failures().empty())
          why = absl::StrCat(report::DiagId_Name(r.receipt().failures(0).id()), ": ",
                             r.receipt().failures(0).message());
        return ledger_->SetCandidateState(
            job.candidate_id, evidence::REJECTED, evidence::COMPILED,
            absl::StrCat("receipt failed on ", r.target(), ": ", why));
      }
    if (!execution_device_)
      return ledger_->SetCandidateState(job.candidate_id, evidence::COMPILED,
                                        evidence::CANDIDATE_STATE_UNSPECIFIED, device_note_);
    CAKE_RETURN_IF_ERROR(ledger_->SetCandidateState(
        job.candidate_id, evidence::COMPILED, evidence::CANDIDATE_STATE_UNSPECIFIED,
        absl::StrCat(compiler::TargetByName(c.compile_target()).value()->witness)));
    return EnqueueValidate(job.candidate_id, "validate").status();
  });
}

absl::StatusOr<worker::KernelRef> Orchestrator::KernelFor(const std::string& candidate) {
  CAKE_ASSIGN_OR_RETURN(evidence::Candidate cand, ledger_->GetCandidate(candidate));
  CAKE_ASSIGN_OR_RETURN(contract::Contract c, ledger_->GetContract(cand.contract_id()));
  // Receipts are stored per target; the execution target's one points at the runnable cubin.
  worker::KernelRef ref;
  ref.set_candidate(candidate);
  CAKE_ASSIGN_OR_RETURN(report::LoweringReceipt r,
                        ledger_->GetReceipt(candidate, c.execution_target()));
  *ref.mutable_receipt() = r;
  return ref;
}

absl::StatusOr<int64_t> Orchestrator::EnqueueValidate(const std::string& candidate,
                                                      const std::string& kind) {
  CAKE_ASSIGN_OR_RETURN(evidence::Candidate cand, ledger_->GetCandidate(candidate));
  CAKE_ASSIGN_OR_RETURN(contract::Contract c, ledger_->GetContract(cand.contract_id()));
  worker::Request req;
  req.set_job_id(absl::StrCat(kind, "-", candidate));
  worker::ValidateJob* v = req.mutable_validate();
  *v->mutable_contract() = c;
  CAKE_ASSIGN_OR_RETURN(*v->mutable_kernel(), KernelFor(candidate));
  v->set_seed(FreshSeed());
  CAKE_ASSIGN_OR_RETURN(int64_t id, ledger_->EnqueueJob(candidate, kind, req.SerializeAsString()));
  Wake();
  return id;
}

absl::StatusOr<int64_t> Orchestrator::EnqueueSanitize(const std::string& candidate,
                                                      const std::vector<std::string>& tools) {
  CAKE_ASSIGN_OR_RETURN(evidence::Candidate cand, ledger_->GetCandidate(candidate));
  CAKE_ASSIGN_OR_RETURN(contract::Contract c, ledger_->GetContract(cand.contract_id()));
  worker::Request req;
  req.set_job_id(absl::StrCat("sanitize-", candidate));
  worker::SanitizeJob* s = req.mutable_sanitize();
  *s->mutable_contract() = c;
  CAKE_ASSIGN_OR_RETURN(*s->mutable_kernel(), KernelFor(candidate));
  s->set_seed(FreshSeed());
  for (const std::string& t : tools) s->add_tools(t);
  CAKE_ASSIGN_OR_RETURN(int64_t id,
                        ledger_->EnqueueJob(candidate, "sanitize", req.SerializeAsString()));
  Wake();
  return id;
}

absl::StatusOr<int64_t> Orchestrator::EnqueueMeasure(const std::string& candidate,
                                                     const std::string& incumbent, int run) {
  CAKE_ASSIGN_OR_RETURN(evidence::Candidate cand, ledger_->GetCandidate(candidate));
  CAKE_ASSIGN_OR_RETURN(contract::Contract c, ledger_->GetContract(cand.contract_id()));
  worker::Request req;
  req.set_job_id(absl::StrCat("measure-", candidate, "-", run));
  worker::MeasureJob* m = req.mutable_measure();
  *m->mutable_contract() = c;
  CAKE_ASSIGN_OR_RETURN(*m->mutable_incumbent(), KernelFor(incumbent));
  CAKE_ASSIGN_OR_RETURN(*m->mutable_challenger(), KernelFor(candidate));
  m->set_run(run);
  m->set_seed(FreshSeed());
  CAKE_ASSIGN_OR_RETURN(int64_t id,
                        ledger_->EnqueueJob(candidate, "measure", req.SerializeAsString()));
  Wake();
  return id;
}

absl::StatusOr<service::CreateContractReply> Orchestrator::CreateContract(
    const contract::Contract& c) {
  CAKE_RETURN_IF_ERROR(CheckContract(c));
  service::CreateContractReply reply;
  reply.set_contract_id(ContractId(c));
  CAKE_ASSIGN_OR_RETURN(bool existed, ledger_->InsertContract(reply.contract_id(), c));
  reply.set_existed(existed);
  service::ProposeRequest baseline;
  baseline.set_contract_id(reply.contract_id());
  baseline.set_schedule_text(c.baseline_schedule());
  baseline.mutable_hypothesis()->set_expected_effect("baseline: the contract's first incumbent");
  CAKE_ASSIGN_OR_RETURN(service::ProposeReply p, Propose(baseline, Role::kOperator));
  reply.set_baseline_candidate(p.candidate_id());
  return reply;
}

absl::StatusOr<service::GetContractReply> Orchestrator::GetContract(const std::string& id,
                                                                    Role role) {
  CAKE_ASSIGN_OR_RETURN(contract::Contract c, ledger_->GetContract(id));
  service::GetContractReply reply;
  reply.set_contract_id(id);
  *reply.mutable_contract() = role == Role::kAgent ? AgentContractView(c) : c;
  CAKE_ASSIGN_OR_RETURN(std::string inc, ledger_->Incumbent(id));
  reply.set_incumbent(inc);
  return reply;
}

absl::StatusOr<service::ProposeReply> Orchestrator::Propose(const service::ProposeRequest& req,
                                                            Role role) {
  CAKE_RETURN_IF_ERROR(CheckIdempotencyKey(req.idempotency_key()));
  CAKE_ASSIGN_OR_RETURN(contract::Contract c, ledger_->GetContract(req.contract_id()));
  auto parsed = compiler::ParseModuleText(req.schedule_text(), "schedule.textproto");
  if (!parsed.ok()) return absl::InvalidArgumentError(parsed.status().message());
  if (parsed->module.kernels().empty())
    return absl::InvalidArgumentError(
        "schedule.textproto:1:1: the schedule declares no kernel; an empty schedule is not a "
        "candidate");
  // A schedule whose kernel lowers for another workload is refused before it costs a job.
  if (auto target = compiler::TargetByName(c.compile_target()); target.ok()) {
    const auto analysis = compiler::Analyze(*parsed, **target);
    if (analysis->report.lowering_supported() && analysis->report.operation() != c.operation())
      return absl::FailedPreconditionError(
          absl::StrCat("the schedule lowers with ", analysis->report.lowering(), " for operation '",
                       analysis->report.operation(), "', but contract ", req.contract_id(),
                       " is for '", c.operation(), "'"));
  }
  const std::string hash = compiler::ScheduleHash(parsed->module);
  evidence::Candidate cand;
  cand.set_contract_id(req.contract_id());
  cand.set_schedule_hash(hash);
  cand.set_schedule_text(req.schedule_text());
  cand.set_state(evidence::PROPOSED);
  cand.set_proposer(RoleName(role));
  cand.set_created_unix_ms(ledger::NowMs());
  if (req.has_hypothesis()) *cand.mutable_hypothesis() = req.hypothesis();
  service::ProposeReply reply;
  // The key lookup, the queue check and the insert are one transaction: concurrent proposals
  // with one key see each other (the second gets the first's candidate or ALREADY_EXISTS).
  absl::Status st = ledger_->Atomically([&]() -> absl::Status {
    if (!req.idempotency_key().empty()) {
      CAKE_ASSIGN_OR_RETURN(std::string prior, ledger_->CandidateForKey(req.idempotency_key()));
      if (!prior.empty()) {
        CAKE_ASSIGN_OR_RETURN(evidence::Candidate pc, ledger_->GetCandidate(prior));
        if (pc.schedule_hash() != hash || pc.contract_id() != req.contract_id())
          return absl::AlreadyExistsError(absl::StrCat("idempotency key '", req.idempotency_key(),
                                                       "' was used for another proposal"));
        reply.set_candidate_id(prior);
        reply.set_duplicate(true);
        return absl::OkStatus();
      }
    }
    CAKE_ASSIGN_OR_RETURN(int64_t queued, ledger_->CountJobs(ledger::JobState::kQueued));
    if (queued >= config_.max_queue)
      return absl::ResourceExhaustedError(absl::StrCat(
          "job queue is full (", queued, " queued, limit ", config_.max_queue, "); retry later"));
    CAKE_ASSIGN_OR_RETURN(ledger::Ledger::Inserted ins,
                          ledger_->InsertCandidate(cand, req.idempotency_key()));
    reply.set_candidate_id(ins.id);
    reply.set_duplicate(ins.existed);
    if (ins.existed) return absl::OkStatus();
    worker::Request wr;
    wr.set_job_id(absl::StrCat("compile-", ins.id));
    worker::CompileJob* job = wr.mutable_compile();
    job->set_schedule_text(req.schedule_text());
    job->add_targets(c.compile_target());
    if (c.execution_target() != c.compile_target()) job->add_targets(c.execution_target());
    job->set_store_root(config_.store_root);
    return ledger_->EnqueueJob(ins.id, "compile", wr.SerializeAsString()).status();
  });
  if (!st.ok()) return st;
  CAKE_ASSIGN_OR_RETURN(evidence::Candidate now, ledger_->GetCandidate(reply.candidate_id()));
  reply.set_state(now.state());
  Wake();
  return reply;
}

absl::StatusOr<evidence::Candidate> Orchestrator::GetCandidate(const std::string& id, Role role) {
  CAKE_ASSIGN_OR_RETURN(evidence::Candidate c, ledger_->GetCandidate(id));
  CAKE_ASSIGN_OR_RETURN(contract::Contract ct, ledger_->GetContract(c.contract_id()));
  *c.mutable_eligibility() = DeriveEligibility(ct, {c.evidence().begin(), c.evidence().end()});
  if (role == Role::kAgent) HideHeldOutChecks(HiddenCaseNames(ct), &c);
  return c;
}

absl::StatusOr<service::ListCandidatesReply> Orchestrator::ListCandidates(
    const service::ListCandidatesRequest& req, Role role) {
  if (req.page_size() < 0 || req.page_size() > kMaxPageSize)
    return absl::InvalidArgumentError(
        absl::StrCat("page_size ", req.page_size(), " is out of range (0-", kMaxPageSize, ")"));
  int64_t before = 0;
  if (!req.page_token().empty()) {
    // The token is the seq of the last candidate of the previous page ("s<seq>").
    absl::string_view t(req.page_token());
    if (!absl::ConsumePrefix(&t, "s") || !absl::SimpleAtoi(t, &before) || before <= 0)
      return absl::InvalidArgumentError(
          absl::StrCat("page_token '", req.page_token(), "' is not one this server issued"));
  }
  CAKE_ASSIGN_OR_RETURN(
      ledger::Ledger::CandidatePage page,
      ledger_->ListCandidates(req.contract_id(),
                              req.page_size() > 0 ? req.page_size() : kDefaultPageSize, before));
  service::ListCandidatesReply reply;
  for (const evidence::Candidate& c : page.candidates) {
    CAKE_ASSIGN_OR_RETURN(evidence::Candidate v, GetCandidate(c.id(), role));
    *reply.add_candidates() = SummaryView(std::move(v));
  }
  if (page.more) reply.set_next_page_token(absl::StrCat("s", page.last_seq));
  return reply;
}

absl::StatusOr<int64_t> Orchestrator::Measure(const std::string& candidate,
                                              const std::string& key) {
  CAKE_RETURN_IF_ERROR(CheckIdempotencyKey(key));
  CAKE_ASSIGN_OR_RETURN(evidence::Candidate c, ledger_->GetCandidate(candidate));
  CAKE_ASSIGN_OR_RETURN(contract::Contract ct, ledger_->GetContract(c.contract_id()));
  // EVIDENCE-OF: DESIGN 7 "No timing enters a ranking from a failed numerical candidate".
  const evidence::Eligibility e = DeriveEligibility(ct, {c.evidence().begin(), c.evidence().end()});
  if (!e.eligible() || c.state() == evidence::REJECTED)
    return absl::FailedPreconditionError(
        absl::StrCat("candidate ", candidate, " is not eligible (state ",
                     evidence::CandidateState_Name(c.state()),
                     "): ", e.eligible() ? "it was rejected: " + c.status_note() : e.summary()));
  if (!execution_device_) return absl::FailedPreconditionError(device_note_);
  CAKE_ASSIGN_OR_RETURN(std::string incumbent, ledger_->Incumbent(c.contract_id()));
  if (incumbent.empty() || incumbent == candidate)
    return absl::FailedPreconditionError(
        absl::StrCat("candidate ", candidate, " is the incumbent; nothing to measure against"));
  if (key.empty()) return EnqueueMeasure(candidate, incumbent, 0);
  // The key and the job it queued are one transaction: a retried Measure gets the first job.
  int64_t job_id = 0;
  CAKE_RETURN_IF_ERROR(ledger_->Atomically([&]() -> absl::Status {
    CAKE_ASSIGN_OR_RETURN(auto prior, ledger_->MeasureForKey(key));
    if (prior) {
      if (prior->first != candidate)
        return absl::AlreadyExistsError(absl::StrCat("idempotency key '", key,
                                                     "' was used to measure another candidate (",
                                                     prior->first, ")"));
      job_id = prior->second;
      return absl::OkStatus();
    }
    CAKE_ASSIGN_OR_RETURN(job_id, EnqueueMeasure(candidate, incumbent, 0));
    return ledger_->InsertMeasureRequest(key, candidate, job_id);
  }));
  return job_id;
}

absl::StatusOr<service::RegressReply> Orchestrator::Regress(const std::string& contract_id) {
  CAKE_ASSIGN_OR_RETURN(contract::Contract c, ledger_->GetContract(contract_id));
  (void)c;
  CAKE_ASSIGN_OR_RETURN(std::string incumbent, ledger_->Incumbent(contract_id));
  if (incumbent.empty())
    return absl::FailedPreconditionError(
        absl::StrCat("contract ", contract_id, " has no incumbent yet"));
  if (!execution_device_) return absl::FailedPreconditionError(device_note_);
  service::RegressReply reply;
  reply.set_incumbent(incumbent);
  CAKE_ASSIGN_OR_RETURN(int64_t job, EnqueueValidate(incumbent, "regress"));
  reply.set_job_id(job);
  return reply;
}

absl::StatusOr<service::StatusReply> Orchestrator::Status() {
  service::StatusReply s;
  s.set_boot_id(boot_id_);
  s.set_containment(containment_ ? containment_->Describe() : "not started");
  s.set_worker_sandbox(sandbox_note_);
  s.set_execution_device(execution_device_);
  s.set_device_note(device_note_);
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (const std::string& d : devices_) {
      service::DeviceStatus* ds = s.add_devices();
      ds->set_name(d);
      ds->set_state(gpu_state_);
    }
  }
  CAKE_ASSIGN_OR_RETURN(int64_t queued, ledger_->CountJobs(ledger::JobState::kQueued));
  CAKE_ASSIGN_OR_RETURN(int64_t running, ledger_->CountJobs(ledger::JobState::kRunning));
  s.set_queued_jobs(queued);
  s.set_running_jobs(running);
  std::vector<std::string> corrupt;
  CAKE_ASSIGN_OR_RETURN(auto contracts, ledger_->ListContracts(&corrupt));
  for (const std::string& id : corrupt) s.add_corrupt_contracts(id);
  for (const auto& [id, c] : contracts) {
    service::ContractStatus* cs = s.add_contracts();
    cs->set_contract_id(id);
    cs->set_name(c.name());
    CAKE_ASSIGN_OR_RETURN(std::string inc, ledger_->Incumbent(id));
    cs->set_incumbent(inc);
    if (!inc.empty()) {
      CAKE_ASSIGN_OR_RETURN(evidence::Candidate ic, ledger_->GetCandidate(inc));
      cs->set_incumbent_schedule_hash(ic.schedule_hash());
    }
  }
  CAKE_ASSIGN_OR_RETURN(auto failures, ledger_->RecentFailedJobs(5));
  for (const ledger::Job& j : failures) {
    service::JobFailure* f = s.add_recent_failures();
    f->set_job_id(j.id);
    f->set_candidate_id(j.candidate_id);
    f->set_kind(j.kind);
    f->set_error(j.error);
  }
  CAKE_ASSIGN_OR_RETURN(auto counts, ledger_->CandidateCounts());
  for (const auto& [k, v] : counts) (*s.mutable_candidates_by_state())[k] = v;
  return s;
}

absl::StatusOr<std::vector<ledger::Event>> Orchestrator::Events(int64_t after, int limit) {
  if (limit < 0 || limit > kMaxEventsPerPage)
    return absl::InvalidArgumentError(
        absl::StrCat("limit ", limit, " is out of range (0-", kMaxEventsPerPage, ")"));
  return ledger_->EventsAfter(after, limit > 0 ? limit : 100);
}

}  // namespace cake::server
