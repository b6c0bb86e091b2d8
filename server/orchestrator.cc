#include "orchestrator.h"

#include <signal.h>
#include <unistd.h>

#include <filesystem>
#include <random>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/strip.h"
#include "artifact_ownership.h"
#include "base/status_macros.h"
#include "base/text.h"
#include "candidate_view.h"
#include "compiler/analysis.h"
#include "compiler/canonical.h"
#include "compiler/parse.h"
#include "compiler/schedule_limits.h"
#include "compiler/targets.h"
#include "contract_checks.h"
#include "eligibility.h"
#include "error_detail.h"
#include "gpuqueue/sandbox.h"
#include "hypothesis_checks.h"
#include "job_requests.h"
#include "lane_admission.h"
#include "proposal.h"
#include "request_limits.h"
#include "spdlog/spdlog.h"
#include "workloads/workload.h"

namespace cake::server {
namespace {

// ALREADY_EXISTS naming, for programs, the candidate the idempotency key already stands for.
absl::Status KeyUsedBefore(const std::string& message, const std::string& earlier) {
  v1::ErrorDetail d;
  d.set_field("idempotency_key");
  d.set_earlier_candidate(earlier);
  return WithDetail(absl::AlreadyExistsError(message), d);
}

namespace fs = std::filesystem;

using ledger::JobKind;

uint64_t FreshSeed() {
  std::random_device rd;
  return (uint64_t{rd()} << 32) ^ rd();
}

// The devices a probe found: its identities, else (an older worker) its device names.
std::vector<gpuqueue::Device> DevicesOf(const worker::ProbeResult& p) {
  std::vector<gpuqueue::Device> out;
  for (const worker::DeviceIdentity& id : p.identities())
    out.push_back(
        {id.ordinal(), id.name(), id.uuid(), id.sm_count(), id.cc_major(), id.cc_minor()});
  if (out.empty())
    for (int i = 0; i < p.devices_size(); ++i) out.push_back({i, p.devices(i), ""});
  return out;
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

absl::Status Orchestrator::Start(const std::string& boot_id) {
  boot_id_ = boot_id;
  containment_ = gpuqueue::Containment::Create(
      config_.containment_scope.empty() ? "default" : config_.containment_scope, config_.job_limits,
      config_.job_cgroups);
  // Confinement fails closed: a daemon that cannot filter its workers' syscalls does not start
  // as if it could (every job would fail at exec instead).
  if (config_.confine_workers)
    if (absl::Status seccomp = gpuqueue::SeccompFiltersLoad(); !seccomp.ok())
      return absl::FailedPreconditionError(absl::StrCat(
          "worker confinement (confine_workers = true) needs a seccomp filter: ", seccomp.message(),
          "; set confine_workers = false to run workers unconfined"));
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
    CAKE_ASSIGN_OR_RETURN(rec, ledger_->jobs().Recover(boot_id, config_.max_attempts));
    // A job out of attempts settles its candidate in the same transaction: none is left
    // PROPOSED with no job and no note.
    for (const ledger::Job& j : rec.gave_up)
      CAKE_RETURN_IF_ERROR(
          Advance(j.candidate_id, Step::kNote, absl::StrCat("waiting on the machine: ", j.error)));
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
  spdlog::info("ledger recovered: {} job(s) re-queued, {} blocked, {} queued", rec.requeued,
               rec.blocked, rec.queued);
  // Device discovery runs in a worker: this process never initializes CUDA.
  if (config_.probe_devices) {
    auto reply = RunProbe("probe", nullptr);
    if (!reply.ok()) {
      device_note_ = absl::StrCat("no execution device: probe failed: ", reply.status().message());
    } else if (reply->probe().device_count() == 0) {
      device_note_ = absl::StrCat("no execution device: ", reply->probe().reason());
    } else {
      std::vector<std::string> repeats;
      devices_ = OneLanePerDevice(DevicesOf(reply->probe()), &repeats);
      for (const std::string& r : repeats) {
        spdlog::warn("{}", r);
        (void)ledger_->events().Add("device_listed_twice", "", 0, r);
      }
      execution_device_ = !devices_.empty();
    }
  } else {
    device_note_ = "no execution device: GPU use disabled by configuration";
  }
  for (const gpuqueue::Device& d : devices_)
    spdlog::info("execution device: {}{}", d.name, d.uuid.empty() ? "" : " (" + d.uuid + ")");
  if (!execution_device_) spdlog::info("{}", device_note_);
  gpuqueue::LaneOptions lanes;
  lanes.cpu_lanes = config_.cpu_workers;
  lanes_ = std::make_unique<gpuqueue::Lanes>(static_cast<gpuqueue::LaneWork*>(this), devices_,
                                             gpuqueue::ForeignProcesses::FromNvml(), lanes);
  lanes_->Start();
  return absl::OkStatus();
}

void Orchestrator::Stop() {
  if (lanes_) lanes_->RequestStop();
  // Running jobs do not get to finish: their trees are killed and their jobs re-queued, so a
  // stop takes seconds whatever the GPU is doing.
  if (containment_) containment_->KillAll();
  if (lanes_) lanes_->Join();
}

gpuqueue::SandboxOptions Orchestrator::WorkerOptions(const std::string& job_name, bool gpu,
                                                     const gpuqueue::Device* device,
                                                     std::chrono::milliseconds timeout) {
  gpuqueue::SandboxOptions opts;
  opts.worker_path = config_.worker_path;
  opts.timeout = timeout;
  opts.env = config_.worker_env;
  // One lane per device: its jobs' workers (and their sanitizer children) see that device only.
  if (device != nullptr && !device->uuid.empty()) opts.env["CUDA_VISIBLE_DEVICES"] = device->uuid;
  opts.containment = containment_.get();
  opts.job_name = job_name;
  if (config_.confine_workers && !config_.state_dir.empty()) {
    gpuqueue::SandboxSpec spec;
    spec.job_dir = (fs::path(config_.state_dir) / "work" / job_name).string();
    spec.writable = config_.worker_writable;
    // Every job reads only the system's trees, the toolkit and the worker's folder: compile jobs
    // (nvcc, cuobjdump) and GPU jobs (the driver, NVML, compute-sanitizer) were measured to run
    // in that set (evidence/sandbox_read_set/).
    spec.readable = config_.worker_readable;
    // The store is the daemon's (sticky, group-writable for the worker's group: see
    // HandOverArtifacts); its scratch folder is the worker's.
    if (config_.worker_uid >= 0)
      spec.group_writable.push_back(config_.store_root);
    else
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

bool Orchestrator::Run(int64_t id, const gpuqueue::Device* device) {
  auto job = ledger_->jobs().Get(id);
  if (!job.ok()) {
    spdlog::error("job {}: {}", id, job.status().ToString());
    return false;
  }
  if (job->state != ledger::JobState::kQueued) return false;  // ended meanwhile
  return RunJob(*job, device);
}

bool Orchestrator::RunJob(const ledger::Job& job, const gpuqueue::Device* device) {
  worker::Request request;
  std::string refused;
  if (!request.ParseFromString(job.request)) {
    refused = "stored request does not parse";
  } else if (job.kind == JobKind::kRegress && request.has_validate()) {
    // Queued before regress had its own arm: the same job under its own name.
    *request.mutable_regress() = std::move(*request.mutable_validate());
  }
  if (refused.empty() && KindOf(request) != job.kind)
    refused = absl::StrCat("the queue says a ", ledger::JobKindName(job.kind),
                           " job, its stored request is a ", ledger::JobKindName(KindOf(request)),
                           " job");
  if (!refused.empty()) {
    if (ledger_->jobs().MarkRunning(job.id, 0).ok())
      (void)OnJobFailed(job, refused, worker::INFRASTRUCTURE);
    return false;
  }
  if (lanes_->stopping()) return false;
  const bool gpu = RunsOnGpu(job.kind);
  const int attempt = job.attempt + 1;
  request.set_attempt(attempt);
  gpuqueue::SandboxOptions opts =
      WorkerOptions(absl::StrCat("job-", job.id, "-a", attempt), gpu, device,
                    JobTimeout(request, config_.compile_timeout, config_.gpu_timeout));
  if (!ledger_->jobs().MarkRunning(job.id, 0, device == nullptr ? "" : DeviceLabel(*device)).ok())
    return false;  // someone else took it
  opts.on_start = [&](int pid) {
    // Recorded so a later boot can find this worker's group when cgroups are not in force.
    if (absl::Status st = ledger_->jobs().SetPid(job.id, pid); !st.ok())
      spdlog::warn("job {}: recording worker pid {} failed: {}", job.id, pid, st.ToString());
  };
  const std::string kind = ledger::JobKindName(job.kind);
  spdlog::info("job {} ({}, candidate {}{}) started", job.id, kind, job.candidate_id,
               device ? ", on " + device->name : "");
  auto reply = gpuqueue::RunInWorker(request, opts);
  if (lanes_->stopping() && !reply.ok()) {
    // Killed by the shutdown, not failed: the job runs again after the restart.
    absl::Status rq = ledger_->jobs().RequeueAfterShutdown(job.id);
    spdlog::info("job {} ({}) stopped by the shutdown; {}", job.id, kind,
                 rq.ok() ? "re-queued" : rq.ToString());
    return false;
  }
  absl::Status s;
  if (!reply.ok()) {
    s = OnJobFailed(job, std::string(reply.status().message()), ClassifyWorkerRun(reply.status()));
  } else if (!reply->ok()) {
    s = OnJobFailed(job, reply->error(),
                    reply->failure_class() == worker::INFRASTRUCTURE ? worker::INFRASTRUCTURE
                                                                     : worker::SCHEDULE);
  } else {
    // What the ledger now says of this attempt: its number and its lane's device.
    ledger::Job ran = job;
    ran.attempt = attempt;
    ran.device = device == nullptr ? "" : DeviceLabel(*device);
    s = Record(ran, *reply);
  }
  if (!s.ok()) {
    // The result could not be recorded (a full disk, a ledger error): the machine failed, the
    // job runs again. If even that cannot be written, Tick writes it once the ledger can.
    spdlog::warn("job {}: recording its result failed: {}", job.id, s.ToString());
    const std::string why = absl::StrCat("recording the result failed: ", s.message());
    if (absl::Status f = OnMachineFailure(job, why); !f.ok()) {
      spdlog::warn("job {}: recording that failed too ({}); retried every second", job.id,
                   f.ToString());
      absl::MutexLock lock(&machine_mu_);
      unsettled_.emplace_back(job, why);
    }
  }
  spdlog::info("job {} ({}) finished{}", job.id, kind,
               reply.ok() && reply->ok()
                   ? ""
                   : absl::StrCat(" with a failure: ",
                                  reply.ok() ? reply->error() : reply.status().message()));
  lanes_->Wake();
  // After a hang, a sticky error or a killed worker, the device is probed in a fresh worker
  // before its next job.
  return device != nullptr && (!reply.ok() || reply->device_fault());
}

absl::Status Orchestrator::Record(const ledger::Job& job, const worker::Reply& reply) {
  switch (job.kind) {
    case JobKind::kCompile:
      return OnCompiled(job, reply);
    case JobKind::kValidate:
      return OnValidated(job, reply);
    case JobKind::kSanitize:
      return OnSanitized(job, reply);
    case JobKind::kMeasure:
      return OnMeasured(job, reply);
    case JobKind::kRegress:
      return OnRegressed(job, reply);
    case JobKind::kUnknown:
      break;
  }
  return OnJobFailed(job, "a job of an unknown kind");
}

absl::Status Orchestrator::Advance(const std::string& candidate, Step step,
                                   const std::string& note) {
  CAKE_ASSIGN_OR_RETURN(ledger::CandidateStore::StateOf now,
                        ledger_->candidates().State(candidate));
  absl::StatusOr<StateChange> next = Next(now.state, now.rejected_at, step);
  if (!next.ok()) {
    spdlog::error("candidate {}: {}", candidate, next.status().ToString());
    return ledger_->events().Add("illegal_transition", candidate, 0,
                                 absl::StrCat(next.status().message(), " (note: ", note, ")"));
  }
  return ledger_->candidates().SetState(candidate, next->state, next->rejected_at, note);
}

absl::Status Orchestrator::OnCompiled(const ledger::Job& job, const worker::Reply& reply) {
  if (config_.worker_uid >= 0)
    HandOverCompileOutputs(reply, config_.store_root, ::geteuid(),
                           static_cast<gid_t>(config_.worker_gid));
  CAKE_ASSIGN_OR_RETURN(evidence::Candidate cand, ledger_->candidates().Get(job.candidate_id));
  CAKE_ASSIGN_OR_RETURN(contract::Contract c, ledger_->contracts().Get(cand.contract_id()));
  return ledger_->Atomically([&]() -> absl::Status {
    CAKE_RETURN_IF_ERROR(ledger_->jobs().Finish(job.id, true, ""));
    const auto& results = reply.compile().results();
    if (results.empty()) return absl::InternalError("compile reply has no results");
    CAKE_RETURN_IF_ERROR(ledger_->evidence().PutAnalysis(job.candidate_id, results[0].analysis()));
    for (const worker::TargetResult& r : results) {
      if (r.has_receipt())
        CAKE_RETURN_IF_ERROR(ledger_->evidence().PutReceipt(job.candidate_id, r.receipt()));
      if (r.has_manifest()) {
        portfolio::DispatcherManifest m = r.manifest();
        m.set_target(r.target());
        CAKE_RETURN_IF_ERROR(ledger_->evidence().PutManifest(job.candidate_id, m));
      }
    }
    // A portfolio is one candidate: any member that fails under its guard rejects it, the note
    // naming the member (its analysis and receipt are the ones recorded for the target).
    auto member = [](const worker::TargetResult& r) {
      return r.portfolio_error().empty() ? std::string()
                                         : absl::StrCat(" (portfolio ", r.portfolio_error(), ")");
    };
    for (const worker::TargetResult& r : results) {
      if (!r.portfolio_error().empty() && r.analysis().verdict() == report::VERIFIED &&
          r.has_receipt() && r.receipt().outcome() == report::LoweringReceipt::PASS)
        return Advance(
            job.candidate_id, Step::kAnalysisRejected,
            absl::StrCat("portfolio rejected on ", r.target(), ": ", r.portfolio_error()));
      if (r.analysis().verdict() != report::VERIFIED) {
        const bool unknown = r.analysis().verdict() == report::UNDETERMINED;
        std::string first;
        for (const auto& d : r.analysis().diagnostics())
          if (d.severity() == report::ERROR || d.severity() == report::UNKNOWN) {
            first = absl::StrCat(report::DiagId_Name(d.id()), ": ", d.message());
            break;
          }
        return Advance(job.candidate_id, Step::kAnalysisRejected,
                       absl::StrCat(unknown ? "analysis unknown (unknown is not pass) on "
                                            : "analysis rejected on ",
                                    r.target(), member(r), ": ", first));
      }
    }
    CAKE_RETURN_IF_ERROR(Advance(job.candidate_id, Step::kAnalyzed, ""));
    for (const worker::TargetResult& r : results)
      if (!r.has_receipt() || r.receipt().outcome() != report::LoweringReceipt::PASS) {
        std::string why = "no receipt";
        if (r.has_receipt() && !r.receipt().failures().empty())
          why = absl::StrCat(report::DiagId_Name(r.receipt().failures(0).id()), ": ",
                             r.receipt().failures(0).message());
        return Advance(job.candidate_id, Step::kReceiptFailed,
                       absl::StrCat("receipt failed on ", r.target(), member(r), ": ", why));
      }
    if (auto device = ExecutionDeviceFor(c); !device.ok())
      return Advance(job.candidate_id, Step::kCompiled, std::string(device.status().message()));
    CAKE_RETURN_IF_ERROR(
        Advance(job.candidate_id, Step::kCompiled,
                std::string(compiler::TargetByName(c.compile_target()).value()->witness)));
    return EnqueueValidate(job.candidate_id, JobKind::kValidate).status();
  });
}

absl::StatusOr<worker::KernelRef> Orchestrator::KernelFor(const std::string& candidate) {
  CAKE_ASSIGN_OR_RETURN(evidence::Candidate cand, ledger_->candidates().Get(candidate));
  CAKE_ASSIGN_OR_RETURN(contract::Contract c, ledger_->contracts().Get(cand.contract_id()));
  // Receipts are stored per target; the execution target's one points at the runnable cubin.
  worker::KernelRef ref;
  ref.set_candidate(candidate);
  CAKE_ASSIGN_OR_RETURN(*ref.mutable_receipt(),
                        ledger_->evidence().GetReceipt(candidate, c.execution_target()));
  auto manifest = ledger_->evidence().GetManifest(candidate, c.execution_target());
  if (manifest.ok()) {
    *ref.mutable_manifest() = *std::move(manifest);
  } else if (!absl::IsNotFound(manifest.status())) {
    return manifest.status();
  }
  return ref;
}

absl::StatusOr<int64_t> Orchestrator::Enqueue(const std::string& candidate,
                                              const worker::Request& request) {
  CAKE_ASSIGN_OR_RETURN(
      int64_t id, ledger_->jobs().Enqueue(candidate, KindOf(request), request.SerializeAsString()));
  if (lanes_) lanes_->Wake();
  return id;
}

absl::StatusOr<int64_t> Orchestrator::EnqueueValidate(const std::string& candidate, JobKind kind) {
  CAKE_ASSIGN_OR_RETURN(evidence::Candidate cand, ledger_->candidates().Get(candidate));
  CAKE_ASSIGN_OR_RETURN(contract::Contract c, ledger_->contracts().Get(cand.contract_id()));
  CAKE_ASSIGN_OR_RETURN(worker::KernelRef kernel, KernelFor(candidate));
  return Enqueue(candidate, ValidateRequest(kind, candidate, c, kernel, FreshSeed()));
}

absl::StatusOr<int64_t> Orchestrator::EnqueueSanitize(const std::string& candidate,
                                                      const std::vector<std::string>& tools) {
  CAKE_ASSIGN_OR_RETURN(evidence::Candidate cand, ledger_->candidates().Get(candidate));
  CAKE_ASSIGN_OR_RETURN(contract::Contract c, ledger_->contracts().Get(cand.contract_id()));
  CAKE_ASSIGN_OR_RETURN(worker::KernelRef kernel, KernelFor(candidate));
  return Enqueue(candidate, SanitizeRequest(candidate, c, kernel, tools, FreshSeed()));
}

absl::StatusOr<int64_t> Orchestrator::EnqueueMeasure(const std::string& candidate,
                                                     const std::string& incumbent, int run) {
  CAKE_ASSIGN_OR_RETURN(evidence::Candidate cand, ledger_->candidates().Get(candidate));
  CAKE_ASSIGN_OR_RETURN(contract::Contract c, ledger_->contracts().Get(cand.contract_id()));
  CAKE_ASSIGN_OR_RETURN(worker::KernelRef inc, KernelFor(incumbent));
  CAKE_ASSIGN_OR_RETURN(worker::KernelRef cha, KernelFor(candidate));
  return Enqueue(candidate, MeasureRequest(candidate, c, inc, cha, run, FreshSeed()));
}

absl::StatusOr<v1::CreateContractReply> Orchestrator::CreateContract(const contract::Contract& c) {
  // Everything is checked before anything is stored, and the contract and its baseline
  // candidate are stored together or not at all: a refused contract leaves no row.
  CAKE_RETURN_IF_ERROR(CheckContract(c));
  v1::CreateContractReply reply;
  reply.set_contract_id(KeyedContractId(config_.contract_id_key, c));
  CAKE_RETURN_IF_ERROR(ledger_->Atomically([&]() -> absl::Status {
    CAKE_ASSIGN_OR_RETURN(bool existed, ledger_->contracts().Insert(reply.contract_id(), c));
    reply.set_existed(existed);
    v1::ProposeRequest baseline;
    baseline.set_contract_id(reply.contract_id());
    baseline.set_schedule_text(c.baseline_schedule());
    baseline.mutable_hypothesis()->set_expected_effect("baseline: the contract's first incumbent");
    CAKE_ASSIGN_OR_RETURN(v1::ProposeReply p, Propose(baseline, Role::kOperator));
    reply.set_baseline_candidate(p.candidate_id());
    return absl::OkStatus();
  }));
  return reply;
}

absl::StatusOr<v1::GetContractReply> Orchestrator::GetContract(const std::string& id, Role role) {
  CAKE_ASSIGN_OR_RETURN(contract::Contract c, ledger_->contracts().Get(id));
  v1::GetContractReply reply;
  reply.set_contract_id(id);
  *reply.mutable_contract() = role == Role::kAgent ? AgentContractView(c) : c;
  CAKE_ASSIGN_OR_RETURN(std::string inc, ledger_->contracts().Incumbent(id));
  reply.set_incumbent(inc);
  return reply;
}

absl::StatusOr<v1::ProposeReply> Orchestrator::Propose(const v1::ProposeRequest& req, Role role,
                                                       const std::string& proposer) {
  CAKE_RETURN_IF_ERROR(CheckIdempotencyKey(req.idempotency_key()));
  CAKE_ASSIGN_OR_RETURN(contract::Contract c, ledger_->contracts().Get(req.contract_id()));
  CAKE_ASSIGN_OR_RETURN(ProposedSchedules proposed, ReadProposal(req));
  const std::string branch = req.branch().empty() ? "main" : req.branch();
  CAKE_RETURN_IF_ERROR(CheckBranchName(branch));
  // An agent's proposal states its hypothesis; a parent is a candidate of this contract that
  // the branch may continue from (checked after the schedule parses, before its analysis costs
  // anything).
  if (role == Role::kAgent) CAKE_RETURN_IF_ERROR(CheckHypothesis(req.hypothesis()));
  if (const std::string& parent_id = req.hypothesis().parent(); !parent_id.empty()) {
    auto parent = ledger_->candidates().HeadOf(parent_id);
    if (!parent.ok() || parent->contract_id != req.contract_id())
      return InvalidField("hypothesis.parent",
                          absl::StrCat("hypothesis.parent '", parent_id,
                                       "' is not a candidate of contract ", req.contract_id()));
    CAKE_ASSIGN_OR_RETURN(std::string incumbent, ledger_->contracts().Incumbent(req.contract_id()));
    CAKE_ASSIGN_OR_RETURN(int64_t on_branch,
                          ledger_->candidates().CountOnBranch(req.contract_id(), branch));
    CAKE_RETURN_IF_ERROR(
        CheckParentBranch(parent_id, parent->branch, branch, on_branch,
                          parent_id == incumbent || parent->schedule_hash == BaselineHash(c)));
  }
  for (int i = 0; i < req.hypothesis().new_evidence_size(); ++i) {
    auto cited = ledger_->candidates().HeadOf(req.hypothesis().new_evidence(i));
    if (!cited.ok() || cited->contract_id != req.contract_id())
      return InvalidField(
          absl::StrCat("hypothesis.new_evidence[", i, "]"),
          absl::StrCat("hypothesis.new_evidence[", i, "] '", req.hypothesis().new_evidence(i),
                       "' is not a candidate of contract ", req.contract_id()));
  }
  // A schedule whose kernel lowers for another workload is refused before it costs a job.
  if (auto target = compiler::TargetByName(c.compile_target()); target.ok()) {
    const auto analysis = compiler::Analyze(proposed.representative, **target);
    if (analysis->report.lowering_supported() && analysis->report.operation() != c.operation())
      return absl::FailedPreconditionError(absl::StrCat(
          proposed.portfolio ? "the portfolio's fallback" : "the schedule", " lowers with ",
          analysis->report.lowering(), " for operation '", analysis->report.operation(),
          "', but contract ", req.contract_id(), " is for '", c.operation(), "'"));
  }
  const std::string& hash = proposed.hash;
  CAKE_ASSIGN_OR_RETURN(std::optional<v1::ProposeReply> repeat, AnswerRepeatedFailure(req, hash));
  if (repeat.has_value()) return *repeat;
  evidence::Candidate cand;
  cand.set_branch(branch);
  cand.set_contract_id(req.contract_id());
  cand.set_schedule_hash(hash);
  cand.set_schedule_text(proposed.stored_text);
  cand.set_state(evidence::PROPOSED);
  cand.set_proposer(proposer.empty() ? RoleName(role) : proposer);
  cand.set_created_unix_ms(ledger::NowMs());
  if (req.has_hypothesis()) *cand.mutable_hypothesis() = req.hypothesis();
  v1::ProposeReply reply;
  // The key lookup, the queue check and the insert are one transaction: concurrent proposals
  // with one key see each other (the second gets the first's candidate or ALREADY_EXISTS).
  absl::Status st = ledger_->Atomically([&]() -> absl::Status {
    if (!req.idempotency_key().empty()) {
      CAKE_ASSIGN_OR_RETURN(std::string prior, ledger_->candidates().ForKey(req.idempotency_key()));
      if (!prior.empty()) {
        CAKE_ASSIGN_OR_RETURN(evidence::Candidate pc, ledger_->candidates().Get(prior));
        if (pc.schedule_hash() != hash || pc.contract_id() != req.contract_id())
          return KeyUsedBefore(absl::StrCat("idempotency key '", req.idempotency_key(),
                                            "' was used for another proposal (", prior, ")"),
                               prior);
        reply.set_candidate_id(prior);
        reply.set_duplicate(true);
        return absl::OkStatus();
      }
    }
    CAKE_ASSIGN_OR_RETURN(int64_t queued, ledger_->jobs().Count(ledger::JobState::kQueued));
    if (queued >= config_.max_queue)
      return absl::ResourceExhaustedError(absl::StrCat(
          "job queue is full (", queued, " queued, limit ", config_.max_queue, "); retry later"));
    CAKE_ASSIGN_OR_RETURN(ledger::CandidateStore::Inserted ins,
                          ledger_->candidates().Insert(cand, req.idempotency_key()));
    reply.set_candidate_id(ins.id);
    reply.set_duplicate(ins.existed);
    if (ins.existed) return absl::OkStatus();
    return Enqueue(ins.id,
                   proposed.portfolio
                       ? CompilePortfolioRequest(ins.id, *proposed.portfolio, c, config_.store_root)
                       : CompileRequest(ins.id, proposed.stored_text, c, config_.store_root))
        .status();
  });
  if (!st.ok()) return st;
  CAKE_ASSIGN_OR_RETURN(ledger::CandidateStore::Head now,
                        ledger_->candidates().HeadOf(reply.candidate_id()));
  reply.set_state(now.state);
  reply.set_branch(now.branch);
  if (reply.duplicate()) {
    // The same schedule again: what the machine had blocked of it runs again.
    CAKE_ASSIGN_OR_RETURN(v1::RetryReply retried, Retry(now.id));
    reply.set_note(absl::StrCat("this schedule was proposed before as ", now.id, " on branch ",
                                now.branch, "; its record is returned",
                                retried.requeued_jobs() > 0
                                    ? absl::StrCat("; its ", retried.requeued_jobs(),
                                                   " job(s) blocked by the machine were re-queued")
                                    : ""));
  }
  return reply;
}

absl::StatusOr<std::optional<v1::ProposeReply>> Orchestrator::AnswerRepeatedFailure(
    const v1::ProposeRequest& req, const std::string& schedule_hash) {
  CAKE_ASSIGN_OR_RETURN(std::optional<ledger::CandidateStore::Head> failed,
                        ledger_->candidates().LatestFailure(
                            req.contract_id(), ledger::HypothesisKey(req.hypothesis())));
  // The same schedule again is a duplicate (its own record is returned), not a repeat.
  if (!failed.has_value() || failed->schedule_hash == schedule_hash) return std::nullopt;
  for (const std::string& id : req.hypothesis().new_evidence()) {
    CAKE_ASSIGN_OR_RETURN(ledger::CandidateStore::Head cited, ledger_->candidates().HeadOf(id));
    if (cited.seq > failed->seq) return std::nullopt;  // evidence recorded since the failure
  }
  v1::ProposeReply reply;
  reply.set_candidate_id(failed->id);
  reply.set_repeat_of(failed->id);
  reply.set_state(failed->state);
  reply.set_branch(failed->branch);
  reply.set_note(absl::StrCat(
      "this hypothesis (the same parent, changed decisions and expected effect) failed as ",
      failed->id, " (", evidence::CandidateState_Name(failed->state),
      failed->status_note.empty() ? ""
                                  : absl::StrCat(": ", base::Utf8Prefix(failed->status_note, 300)),
      "); nothing was queued. To try it again, cite a candidate recorded since in "
      "hypothesis.new_evidence"));
  CAKE_RETURN_IF_ERROR(ledger_->events().Add(
      "repeat_answered", failed->id, 0,
      absl::StrCat("a repeat of this failed hypothesis was answered with this record (schedule ",
                   schedule_hash.substr(0, 12), " not queued)")));
  return reply;
}

namespace {

// A stored candidate as a caller in `role` is shown it: eligibility derived, and for agents
// the checks of held-out rows and cases removed.
evidence::Candidate AsServed(evidence::Candidate c, const contract::Contract& ct, Role role) {
  *c.mutable_eligibility() = DeriveEligibility(ct, {c.evidence().begin(), c.evidence().end()});
  if (role == Role::kAgent) HideHeldOutChecks(HiddenCaseNames(ct), &c);
  return c;
}

}  // namespace

absl::StatusOr<evidence::Candidate> Orchestrator::GetCandidate(const std::string& id, Role role) {
  CAKE_ASSIGN_OR_RETURN(evidence::Candidate c, ledger_->candidates().Get(id));
  CAKE_ASSIGN_OR_RETURN(contract::Contract ct, ledger_->contracts().Get(c.contract_id()));
  return AsServed(std::move(c), ct, role);
}

absl::StatusOr<v1::ListCandidatesReply> Orchestrator::ListCandidates(
    const v1::ListCandidatesRequest& req, Role role) {
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
      ledger::CandidateStore::CandidatePage page,
      ledger_->candidates().List(req.contract_id(),
                                 req.page_size() > 0 ? req.page_size() : kDefaultPageSize, before,
                                 req.branch()));
  v1::ListCandidatesReply reply;
  // The page's candidates are already assembled: each contract is read once, not each candidate
  // twice.
  std::map<std::string, contract::Contract> contracts;
  for (evidence::Candidate& c : page.candidates) {
    auto it = contracts.find(c.contract_id());
    if (it == contracts.end()) {
      CAKE_ASSIGN_OR_RETURN(contract::Contract ct, ledger_->contracts().Get(c.contract_id()));
      it = contracts.emplace(c.contract_id(), std::move(ct)).first;
    }
    *reply.add_candidates() = SummaryView(AsServed(std::move(c), it->second, role));
  }
  if (page.more) reply.set_next_page_token(absl::StrCat("s", page.last_seq));
  return reply;
}

absl::StatusOr<int64_t> Orchestrator::Measure(const std::string& candidate,
                                              const std::string& key) {
  CAKE_RETURN_IF_ERROR(CheckIdempotencyKey(key));
  CAKE_ASSIGN_OR_RETURN(evidence::Candidate c, ledger_->candidates().Get(candidate));
  CAKE_ASSIGN_OR_RETURN(contract::Contract ct, ledger_->contracts().Get(c.contract_id()));
  // EVIDENCE-OF: DESIGN 7 "No timing enters a ranking from a failed numerical candidate".
  const evidence::Eligibility e = DeriveEligibility(ct, {c.evidence().begin(), c.evidence().end()});
  if (!e.eligible() || c.state() == evidence::REJECTED)
    return absl::FailedPreconditionError(
        absl::StrCat("candidate ", candidate, " is not eligible (state ",
                     evidence::CandidateState_Name(c.state()),
                     "): ", e.eligible() ? "it was rejected: " + c.status_note() : e.summary()));
  CAKE_RETURN_IF_ERROR(ExecutionDeviceFor(ct).status());
  CAKE_ASSIGN_OR_RETURN(std::string incumbent, ledger_->contracts().Incumbent(c.contract_id()));
  if (incumbent.empty() || incumbent == candidate)
    return absl::FailedPreconditionError(
        absl::StrCat("candidate ", candidate, " is the incumbent; nothing to measure against"));
  // A measurement already queued or running for the candidate (the daemon queues one when the
  // candidate becomes eligible, and its confirmation runs) answers the request: a second one
  // would only race the first to a verdict.
  CAKE_ASSIGN_OR_RETURN(int64_t active, ledger_->jobs().ActiveJob(candidate, JobKind::kMeasure));
  if (key.empty()) return active != 0 ? active : EnqueueMeasure(candidate, incumbent, 0);
  // The key and the job it queued are one transaction: a retried Measure gets the first job.
  int64_t job_id = 0;
  CAKE_RETURN_IF_ERROR(ledger_->Atomically([&]() -> absl::Status {
    CAKE_ASSIGN_OR_RETURN(auto prior, ledger_->jobs().MeasureForKey(key));
    if (prior) {
      if (prior->first != candidate)
        return KeyUsedBefore(
            absl::StrCat("idempotency key '", key, "' was used to measure another candidate (",
                         prior->first, ")"),
            prior->first);
      job_id = prior->second;
      return absl::OkStatus();
    }
    if (active != 0) {
      job_id = active;
    } else {
      CAKE_ASSIGN_OR_RETURN(job_id, EnqueueMeasure(candidate, incumbent, 0));
    }
    return ledger_->jobs().InsertMeasureRequest(key, candidate, job_id);
  }));
  return job_id;
}

absl::StatusOr<v1::RegressReply> Orchestrator::Regress(const std::string& contract_id) {
  CAKE_ASSIGN_OR_RETURN(contract::Contract c, ledger_->contracts().Get(contract_id));
  CAKE_ASSIGN_OR_RETURN(std::string incumbent, ledger_->contracts().Incumbent(contract_id));
  if (incumbent.empty())
    return absl::FailedPreconditionError(
        absl::StrCat("contract ", contract_id, " has no incumbent yet"));
  CAKE_RETURN_IF_ERROR(ExecutionDeviceFor(c).status());
  v1::RegressReply reply;
  reply.set_incumbent(incumbent);
  // The timing half pairs the incumbent against the baseline (the contract's first candidate).
  // Both kernels are found before anything is queued, and both jobs are queued together: a
  // refused regression leaves no job behind.
  CAKE_ASSIGN_OR_RETURN(std::string baseline, ledger_->candidates().Oldest(contract_id));
  CAKE_ASSIGN_OR_RETURN(worker::KernelRef base_kernel, KernelFor(baseline));
  CAKE_ASSIGN_OR_RETURN(worker::KernelRef inc_kernel, KernelFor(incumbent));
  CAKE_RETURN_IF_ERROR(ledger_->Atomically([&]() -> absl::Status {
    CAKE_ASSIGN_OR_RETURN(int64_t job, EnqueueValidate(incumbent, JobKind::kRegress));
    reply.set_job_id(job);
    CAKE_ASSIGN_OR_RETURN(
        int64_t timing,
        Enqueue(incumbent, MeasureRequest(incumbent, c, base_kernel, inc_kernel, 0, FreshSeed(),
                                          /*regress=*/true)));
    reply.set_timing_job_id(timing);
    return absl::OkStatus();
  }));
  reply.set_baseline(baseline);
  return reply;
}

}  // namespace cake::server
