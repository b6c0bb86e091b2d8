#include "worker_jobs.h"

#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <limits>
#include <optional>
#include <random>
#include <regex>
#include <sstream>
#include <string_view>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "base/files.h"
#include "base/subprocess.h"
#include "compiler/compiler.h"
#include "compiler/portfolio.h"
#include "cuda_driver.h"
#include "cupti_spans.h"
#include "device_session.h"
#include "device_workload.h"
#include "gpuqueue/framing.h"
#include "gpuqueue/nvml.h"
#include "measure_runner.h"
#include "protocol/paired_verdict.h"
#include "validate_runner.h"
#include "workloads/numeric.h"
#include "workloads/workload.h"

namespace cake::gpuqueue {
namespace {

namespace fs = std::filesystem;

worker::Reply Fail(const std::string& error,
                   worker::FailureClass failure_class = worker::SCHEDULE) {
  worker::Reply r;
  r.set_ok(false);
  r.set_error(error);
  r.set_failure_class(failure_class);
  return r;
}

// The lane's device could not be opened (it left the bus, its driver failed, it is not
// visible): the machine's failure, and the daemon probes the device before its next job.
worker::Reply DeviceNotOpened(const absl::Status& s) {
  const absl::string_view why = s.message();
  worker::Reply r = Fail(absl::StartsWith(why, "no execution device")
                             ? std::string(why)
                             : absl::StrCat("no execution device: ", why),
                         worker::INFRASTRUCTURE);
  r.set_device_fault(true);
  return r;
}

// What the machine could not do (a tool or device missing, I/O, space) is not the schedule's
// fault; a malformed request or our own refusal to emit (Internal) is final for it.
worker::Reply Fail(const absl::Status& s) {
  switch (s.code()) {
    case absl::StatusCode::kFailedPrecondition:
    case absl::StatusCode::kUnavailable:
    case absl::StatusCode::kResourceExhausted:
    case absl::StatusCode::kDataLoss:
    case absl::StatusCode::kNotFound:
    case absl::StatusCode::kDeadlineExceeded:
    case absl::StatusCode::kAborted:
      return Fail(std::string(s.message()), worker::INFRASTRUCTURE);
    default:
      return Fail(std::string(s.message()), worker::SCHEDULE);
  }
}

// A portfolio for one target: every member under its guard, then the fallback; the manifest of
// those that compiled, and the first that did not (with its analysis) for the daemon's verdict.
absl::Status CompilePortfolioFor(const portfolio::Portfolio& p, const compiler::TargetInfo& target,
                                 const compiler::CompileOptions& opts, worker::TargetResult* r) {
  auto c = compiler::CompilePortfolio(p, fs::path(), target, opts);
  if (!c.ok()) return c.status();
  *r->mutable_manifest() = c->manifest;
  const compiler::PortfolioMemberResult* shown = &c->members.back();  // the fallback
  for (const compiler::PortfolioMemberResult& m : c->members)
    if (!m.error.empty()) {
      shown = &m;
      r->set_portfolio_error(absl::StrCat("member '", m.name, "': ", m.error));
      break;
    }
  *r->mutable_analysis() = shown->analysis;
  if (shown->receipt) *r->mutable_receipt() = *shown->receipt;
  return absl::OkStatus();
}

// One schedule, or (job.portfolio) every member of a portfolio, for each target in turn.
worker::Reply RunCompile(const worker::CompileJob& job) {
  std::optional<compiler::ParsedModule> parsed;
  if (!job.has_portfolio()) {
    auto module = compiler::ParseModuleText(job.schedule_text(), "schedule.textproto");
    if (!module.ok()) return Fail(std::string(module.status().message()));
    parsed = *std::move(module);
  }
  worker::Reply reply;
  reply.set_ok(true);
  for (const std::string& t : job.targets()) {
    auto target = compiler::TargetByName(t);
    if (!target.ok()) return Fail(std::string(target.status().message()));
    compiler::CompileOptions opts;
    opts.store_root = job.store_root();
    worker::TargetResult* r = reply.mutable_compile()->add_results();
    r->set_target(t);
    if (!parsed) {
      if (absl::Status s = CompilePortfolioFor(job.portfolio(), **target, opts, r); !s.ok())
        return Fail(s);
      continue;
    }
    auto c = compiler::Compile(*parsed, **target, opts);
    if (!c.ok()) return Fail(c.status());
    *r->mutable_analysis() = c->analysis;
    if (c->receipt) *r->mutable_receipt() = *c->receipt;
  }
  return reply;
}

worker::Reply RunValidate(const worker::ValidateJob& job) {
  auto g = OpenGpu();
  if (!g.ok()) return DeviceNotOpened(g.status());
  auto image = ReadKernelImage(job.kernel());
  if (!image.ok()) return Fail(image.status());
  ValidationOutcome v = RunValidation(*g, *image, job.contract(), job.seed());
  worker::Reply reply;
  reply.set_ok(true);
  *reply.mutable_validation() = std::move(v.validation);
  reply.set_device_fault(v.device_fault);
  return reply;
}

std::string FindComputeSanitizer() {
  if (const char* p = std::getenv("CAKE_COMPUTE_SANITIZER"); p && *p) return p;
  if (const char* nvcc = std::getenv("CAKE_NVCC"); nvcc && *nvcc) {
    const fs::path beside = fs::path(nvcc).parent_path() / "compute-sanitizer";
    if (fs::exists(beside)) return beside.string();
  }
  if (auto on_path = base::FindOnPath("compute-sanitizer")) return *on_path;
  for (const char* p : {"/usr/local/cuda/bin/compute-sanitizer",
                        "/usr/local/cuda/compute-sanitizer/compute-sanitizer"})
    if (fs::exists(p)) return p;
  return "";
}

struct ToolScope {
  const char* scope;
  const char* not_covered;
};
ToolScope ScopeOf(const std::string& tool) {
  if (tool == "memcheck")
    return {
        "out-of-bounds and misaligned global/shared/local accesses and device errors, every "
        "launch, exact-size allocations",
        "values written in bounds but wrong (the numerical record covers them)"};
  if (tool == "racecheck")
    return {"shared-memory hazards (RAW/WAR/WAW) between threads of a CTA",
            "global-memory races between CTAs"};
  if (tool == "initcheck")
    return {"reads of uninitialized global memory", "uninitialized shared memory or registers"};
  return {"invalid synchronization: divergent or mismatched barriers and warp syncs",
          "missing synchronization that is not misused (racecheck covers shared memory)"};
}

worker::Reply RunSanitize(const worker::SanitizeJob& job) {
  worker::Reply reply;
  reply.set_ok(true);
  evidence::Validation* v = reply.mutable_validation();
  v->set_seed(job.seed());
  const std::string cs = FindComputeSanitizer();
  const workloads::Workload* w = workloads::FindWorkload(job.contract().operation());
  if (w == nullptr)
    return Fail(std::string(workloads::UnknownOperation(job.contract().operation()).message()));
  const auto policy = workloads::EffectivePolicy(job.contract(), *w);
  const int timeout_s = policy.sanitizer_timeout_s() > 0 ? policy.sanitizer_timeout_s() : 300;
  // The target reads its job from a file: compute-sanitizer owns the target's stdio. The file
  // lives in the job's own temporary directory (the sandbox lets a worker write nowhere else).
  const char* tmp = std::getenv("TMPDIR");
  std::string dir_template =
      (fs::path(tmp != nullptr && *tmp ? tmp : "/tmp") / "cake-sanitize-XXXXXX").string();
  const char* dir = mkdtemp(dir_template.data());
  std::string request_file;
  if (dir != nullptr) {
    request_file = (fs::path(dir) / "request.bin").string();
    worker::Request target;
    worker::ValidateJob* vj = target.mutable_validate();
    *vj->mutable_contract() = job.contract();
    *vj->mutable_kernel() = job.kernel();
    vj->set_seed(job.seed());
    std::ofstream(request_file, std::ios::binary) << Frame(target);
  }
  const std::string self = fs::read_symlink("/proc/self/exe").string();
  bool all = true;
  for (const std::string& tool : job.tools()) {
    evidence::EvidenceRecord* r = v->add_records();
    r->set_kind(evidence::SANITIZER);
    r->set_tool(tool);
    r->set_seed(job.seed());
    const ToolScope scope = ScopeOf(tool);
    r->mutable_coverage()->set_scope(scope.scope);
    r->mutable_coverage()->set_not_covered(scope.not_covered);
    if (cs.empty() || request_file.empty()) {
      r->set_status(evidence::NOT_RUN);
      r->set_failure(cs.empty() ? "compute-sanitizer not found (set $CAKE_COMPUTE_SANITIZER)"
                                : "cannot write the target's request file");
      r->set_summary(absl::StrCat("not run: ", r->failure()));
      all = false;
      continue;
    }
    base::SubprocessOptions opts;
    opts.timeout = std::chrono::seconds(timeout_s);
    std::vector<std::string> argv = {cs,   "--tool",        tool, "--error-exitcode",
                                     "86", "--print-limit", "20"};
    argv.insert(argv.end(), {self, "--sanitize-target", request_file});
    auto run = base::RunSubprocess(argv, opts);
    const std::string output = run.ok() ? run->stdout_bytes + run->stderr_bytes : "";
    const int errors = SanitizerErrors(tool, output);
    std::vector<std::string> cases;
    std::istringstream lines(output);
    for (std::string line; std::getline(lines, line);)
      if (line.rfind("case: ", 0) == 0) cases.push_back(line.substr(6));
    for (const std::string& c : cases) r->mutable_coverage()->add_cases(c);
    r->mutable_coverage()->set_launches(static_cast<int64_t>(cases.size()));
    auto tail = [&](size_t n) {
      return output.size() <= n ? output : output.substr(output.size() - n);
    };
    if (!run.ok()) {
      r->set_status(evidence::NOT_RUN);
      r->set_failure(std::string(run.status().message()));
    } else if (run->timed_out) {
      r->set_status(evidence::INCONCLUSIVE);
      r->set_failure(absl::StrCat("did not finish within ", timeout_s, " s"));
    } else if (errors > 0 || run->exit_code == 86) {
      r->set_status(evidence::FAILED);
      // The first reported problem, for people.
      std::smatch first;
      const std::regex problem(
          "=========\\s+(Invalid|Error|Race|Uninitialized|Barrier|"
          "Warning|Program hit)[^\\n]*");
      r->set_failure(absl::StrCat(errors, " error(s) reported",
                                  std::regex_search(output, first, problem)
                                      ? absl::StrCat(": ", first.str(0).substr(10))
                                      : std::string()));
    } else if (errors == 0 && run->exit_code == 0 && !cases.empty()) {
      r->set_status(evidence::PASSED);
    } else {
      r->set_status(evidence::INCONCLUSIVE);
      r->set_failure(absl::StrCat("no verdict (", run->Describe(), "): ", tail(600)));
    }
    r->set_summary(absl::StrCat("compute-sanitizer ", tool, ": ",
                                evidence::EvidenceStatus_Name(r->status()), " over ", cases.size(),
                                " cases"));
    all = all && r->status() == evidence::PASSED;
  }
  if (dir != nullptr) fs::remove_all(dir);
  v->set_passed(all);
  return reply;
}

// NVML's index of the device this worker computes on. The daemon confines a GPU job to one device
// with CUDA_VISIBLE_DEVICES=GPU-<uuid>, which renumbers CUDA's devices but not NVML's.
absl::StatusOr<unsigned> VisibleDeviceNvmlIndex(const Nvml& nvml) {
  const char* visible = std::getenv("CUDA_VISIBLE_DEVICES");
  if (visible == nullptr || std::string_view(visible).rfind("GPU-", 0) != 0) return 0u;
  return nvml.IndexOf(visible);
}

void NoteForeignProcesses(const Nvml* nvml, unsigned index, const char* when,
                          evidence::Measurement* m) {
  if (nvml == nullptr) return;
  auto procs = nvml->ComputeProcesses(index);
  if (!procs.ok()) {
    m->add_foreign_processes(absl::StrCat(when, ": not read (", procs.status().message(), ")"));
    return;
  }
  for (unsigned pid : *procs)
    if (pid != static_cast<unsigned>(getpid()))
      m->add_foreign_processes(
          absl::StrCat(when, ": pid ", pid, " computing on NVML device ", index));
}

worker::Reply RunMeasure(const worker::MeasureJob& job) {
  auto g = OpenGpu();
  if (!g.ok()) return DeviceNotOpened(g.status());
  auto inc_image = ReadKernelImage(job.incumbent());
  auto cha_image = ReadKernelImage(job.challenger());
  if (!inc_image.ok()) return Fail(inc_image.status());
  if (!cha_image.ok()) return Fail(cha_image.status());
  const CudaDriver& d = *g->driver;
  auto inc = LoadImage(d, *inc_image);
  auto cha = LoadImage(d, *cha_image);
  // The driver refusing a cubin the daemon compiled for this target is the machine's doing (a
  // driver too old, a device of another architecture), not the schedule's.
  if (!inc.ok()) return Fail(std::string(inc.status().message()), worker::INFRASTRUCTURE);
  if (!cha.ok()) return Fail(std::string(cha.status().message()), worker::INFRASTRUCTURE);
  const contract::Contract& c = job.contract();
  const workloads::Workload* w = workloads::FindWorkload(c.operation());
  const DeviceWorkload* dw = FindDeviceWorkload(c.operation());
  if (w == nullptr || dw == nullptr)
    return Fail(absl::StrCat("this worker has no device side for operation '", c.operation(), "'"));
  const auto configs = protocol::TimingConfigs(c.protocol());
  if (!configs.ok()) return Fail(std::string(configs.status().message()));

  auto nvml = Nvml::Load();
  absl::StatusOr<unsigned> nvml_index =
      nvml.ok() ? VisibleDeviceNvmlIndex(**nvml) : absl::StatusOr<unsigned>(nvml.status());
  if (nvml.ok() && !nvml_index.ok()) nvml = nvml_index.status();  // readings of another device
  auto cupti = CuptiSpans::Start();
  MeasureOptions o;
  o.warmup_samples = c.protocol().warmup_launches() > 0 ? c.protocol().warmup_launches() : 3;
  o.min_launches = c.protocol().launches_per_sample() > 0 ? c.protocol().launches_per_sample() : 1;
  o.stopping = protocol::StoppingFrom(c.protocol());
  o.throttle_fraction =
      c.protocol().throttle_fraction() > 0 ? c.protocol().throttle_fraction() : 0.75;
  o.inputs_mutable = workloads::EffectivePolicy(c, *w).inputs_mutable();
  o.nvml_index = nvml_index.ok() ? *nvml_index : 0;
  auto runner = MeasureRunner::Create(*g, o, nvml.ok() ? nvml->get() : nullptr,
                                      cupti.ok() ? cupti->get() : nullptr);
  if (!runner.ok()) return Fail(std::string(runner.status().message()), worker::INFRASTRUCTURE);

  worker::Reply reply;
  reply.set_ok(true);
  evidence::Measurement* m = reply.mutable_measurement();
  m->set_candidate(job.challenger().candidate());
  m->set_incumbent(job.incumbent().candidate());
  m->set_run(job.run());
  m->set_device(g->ctx->name());
  m->set_mode((*configs)[0].mode);
  m->set_default_sm_mhz((*runner)->default_sm_mhz());
  m->set_cupti(cupti.ok() ? "kernel spans recorded"
                          : absl::StrCat("no spans: ", cupti.status().message()));
  m->set_stopping_rule(protocol::Describe(o.stopping));
  NoteForeignProcesses(nvml.ok() ? nvml->get() : nullptr, o.nvml_index, "before", m);
  const Arm inc_arm{inc->get()}, cha_arm{cha->get()};
  for (int i = 0; i < c.rows_size() && !m->invalid(); ++i) {
    const contract::Row& row = c.rows(i);
    if (row.held_out()) continue;  // held-out rows gate correctness, not ranking
    for (size_t k = 0; k < configs->size() && !m->invalid(); ++k) {
      const protocol::TimingConfig& cfg = (*configs)[k];
      const uint64_t seed = workloads::Mix64(job.seed() ^ workloads::Mix64(i * 16 + k));
      auto rt = (*runner)->TimeRow(*dw, c, row.problem(), cfg, inc_arm, cha_arm, seed);
      if (!rt.ok()) {
        // A device that fails mid-run (or an arm failing its output check) invalidates the run:
        // no partial timing is ranked.
        m->set_invalid(true);
        m->set_invalid_reason(
            absl::StrCat("row ", row.name(), " (", cfg.Name(), "): ", rt.status().message()));
        break;
      }
      rt->set_row(row.name());
      rt->set_required(row.required());
      const auto scalars = w->Scalars(row.problem());
      if ((*inc)->entry_count() > 1)
        if (auto e = (*inc)->Dispatch(scalars); e.ok())
          rt->set_incumbent_entry((*inc)->entry_name(*e));
      if ((*cha)->entry_count() > 1)
        if (auto e = (*cha)->Dispatch(scalars); e.ok())
          rt->set_challenger_entry((*cha)->entry_name(*e));
      *m->add_rows() = *rt;
    }
  }
  *m->add_output_checks() = (*runner)->output_check(0);
  *m->add_output_checks() = (*runner)->output_check(1);
  NoteForeignProcesses(nvml.ok() ? nvml->get() : nullptr, o.nvml_index, "after", m);
  std::vector<std::string> notes;
  if (!nvml.ok()) notes.push_back(absl::StrCat("no NVML: ", nvml.status().message()));
  if (!(*runner)->notes().empty()) notes.push_back((*runner)->notes());
  m->set_note(absl::StrJoin(notes, "; "));
  protocol::JudgeMeasurement(m, c);
  reply.set_device_fault(d.context_lost);
  if (d.context_lost && cupti.ok()) cupti->release();  // its flush could wait on a hung kernel
  return reply;
}

// nvidia-smi's spelling: "GPU-" and the 16 bytes as 8-4-4-4-12 hex digits.
std::string FormatGpuUuid(const CUuuid& u) {
  std::string hex;
  for (int i = 0; i < 16; ++i) {
    if (i == 4 || i == 6 || i == 8 || i == 10) hex += '-';
    absl::StrAppend(&hex, absl::Hex(static_cast<unsigned char>(u.bytes[i]), absl::kZeroPad2));
  }
  return "GPU-" + hex;
}

worker::Reply RunProbe() {
  worker::Reply reply;
  reply.set_ok(true);
  worker::ProbeResult* p = reply.mutable_probe();
  auto d = CudaDriver::Load();
  if (!d.ok()) {
    p->set_reason(std::string(d.status().message()));
    return reply;
  }
  p->set_driver_loaded(true);
  int count = 0;
  (*d)->DeviceGetCount(&count);
  p->set_device_count(count);
  for (int i = 0; i < count; ++i) {
    CUdevice dev;
    (*d)->DeviceGet(&dev, i);
    char name[256] = {};
    (*d)->DeviceGetName(name, sizeof(name), dev);
    int major = 0, minor = 0;
    (*d)->DeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev);
    (*d)->DeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev);
    p->add_devices(absl::StrCat(i, ": ", name, " (", major, ".", minor, ")"));
    worker::DeviceIdentity* id = p->add_identities();
    id->set_ordinal(i);
    id->set_name(p->devices(i));
    id->set_cc_major(major);
    id->set_cc_minor(minor);
    CUuuid uuid;
    if ((*d)->DeviceGetUuid(&uuid, dev) == CUDA_SUCCESS) id->set_uuid(FormatGpuUuid(uuid));
    int sms = 0;
    if ((*d)->DeviceGetAttribute(&sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, dev) ==
        CUDA_SUCCESS)
      id->set_sm_count(sms);
  }
  if (count == 0) p->set_reason("the driver reports no CUDA device");
  return reply;
}

}  // namespace

namespace {

// A count as the tool printed it; one too large for an int is still that many errors.
int ErrorCount(const std::string& digits) {
  int n = 0;
  return absl::SimpleAtoi(digits, &n) ? n : std::numeric_limits<int>::max();
}

}  // namespace

int SanitizerErrors(const std::string& tool, const std::string& output) {
  std::smatch m;
  if (tool == "racecheck") {
    static const std::regex race("RACECHECK SUMMARY: \\d+ hazards? displayed \\((\\d+) errors?");
    if (std::regex_search(output, m, race)) return ErrorCount(m[1].str());
  }
  static const std::regex summary("ERROR SUMMARY: (\\d+) errors?");
  if (std::regex_search(output, m, summary)) return ErrorCount(m[1].str());
  return -1;
}

int RunSanitizeTarget(const std::string& request_file) {
  worker::Request request;
  absl::Status s = Unframe(base::ReadFileBytes(request_file), &request);
  if (!s.ok() || !request.has_validate()) {
    std::fprintf(stderr, "cake-worker: bad sanitize target request %s\n", request_file.c_str());
    return 2;
  }
  auto g = OpenGpu();
  if (!g.ok()) {
    std::fprintf(stderr, "cake-worker: %s\n", std::string(g.status().message()).c_str());
    return 3;
  }
  auto image = ReadKernelImage(request.validate().kernel());
  if (!image.ok()) {
    std::fprintf(stderr, "cake-worker: %s\n", std::string(image.status().message()).c_str());
    return 3;
  }
  auto ran = RunForSanitizer(*g, *image, request.validate().contract(), request.validate().seed());
  if (!ran.ok()) {
    std::fprintf(stderr, "cake-worker: %s\n", std::string(ran.status().message()).c_str());
    g->driver->MarkContextLost();
    return 3;
  }
  for (const std::string& c : *ran) std::printf("case: %s\n", c.c_str());
  std::fflush(stdout);
  return 0;
}

worker::Reply RunWorkerRequest(const worker::Request& request) {
  switch (request.job_case()) {
    case worker::Request::kCompile:
      return RunCompile(request.compile());
    case worker::Request::kValidate:
      return RunValidate(request.validate());
    case worker::Request::kRegress:
      return RunValidate(request.regress());
    case worker::Request::kSanitize:
      return RunSanitize(request.sanitize());
    case worker::Request::kMeasure:
      return RunMeasure(request.measure());
    case worker::Request::kProbe:
      return RunProbe();
    default:
      return Fail("request names no job");
  }
}

}  // namespace cake::gpuqueue
