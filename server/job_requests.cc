#include "job_requests.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "workloads/workload.h"

namespace cake::server {

ledger::JobKind KindOf(const worker::Request& r) {
  switch (r.job_case()) {
    case worker::Request::kCompile:
      return ledger::JobKind::kCompile;
    case worker::Request::kValidate:
      return ledger::JobKind::kValidate;
    case worker::Request::kSanitize:
      return ledger::JobKind::kSanitize;
    case worker::Request::kMeasure:
      return ledger::JobKind::kMeasure;
    case worker::Request::kRegress:
      return ledger::JobKind::kRegress;
    case worker::Request::kProbe:
    case worker::Request::JOB_NOT_SET:
      break;
  }
  return ledger::JobKind::kUnknown;
}

bool RunsOnGpu(ledger::JobKind k) {
  switch (k) {
    case ledger::JobKind::kValidate:
    case ledger::JobKind::kSanitize:
    case ledger::JobKind::kMeasure:
    case ledger::JobKind::kRegress:
      return true;
    case ledger::JobKind::kCompile:
    case ledger::JobKind::kUnknown:
      break;
  }
  return false;
}

worker::Request CompileRequest(const std::string& candidate, const std::string& schedule_text,
                               const contract::Contract& c, const std::string& store_root) {
  worker::Request r;
  r.set_job_id(absl::StrCat("compile-", candidate));
  worker::CompileJob* job = r.mutable_compile();
  job->set_schedule_text(schedule_text);
  job->add_targets(c.compile_target());
  if (c.execution_target() != c.compile_target()) job->add_targets(c.execution_target());
  job->set_store_root(store_root);
  return r;
}

worker::Request CompilePortfolioRequest(const std::string& candidate, const portfolio::Portfolio& p,
                                        const contract::Contract& c,
                                        const std::string& store_root) {
  worker::Request r = CompileRequest(candidate, "", c, store_root);
  *r.mutable_compile()->mutable_portfolio() = p;
  return r;
}

worker::Request ValidateRequest(ledger::JobKind kind, const std::string& candidate,
                                const contract::Contract& c, const worker::KernelRef& kernel,
                                uint64_t seed) {
  worker::Request r;
  const bool regress = kind == ledger::JobKind::kRegress;
  r.set_job_id(absl::StrCat(regress ? "regress-" : "validate-", candidate));
  worker::ValidateJob* v = regress ? r.mutable_regress() : r.mutable_validate();
  *v->mutable_contract() = c;
  *v->mutable_kernel() = kernel;
  v->set_seed(seed);
  return r;
}

worker::Request SanitizeRequest(const std::string& candidate, const contract::Contract& c,
                                const worker::KernelRef& kernel,
                                const std::vector<std::string>& tools, uint64_t seed) {
  worker::Request r;
  r.set_job_id(absl::StrCat("sanitize-", candidate));
  worker::SanitizeJob* s = r.mutable_sanitize();
  *s->mutable_contract() = c;
  *s->mutable_kernel() = kernel;
  s->set_seed(seed);
  for (const std::string& t : tools) s->add_tools(t);
  return r;
}

worker::Request MeasureRequest(const std::string& candidate, const contract::Contract& c,
                               const worker::KernelRef& incumbent,
                               const worker::KernelRef& challenger, int run, uint64_t seed,
                               bool regress) {
  worker::Request r;
  r.set_job_id(absl::StrCat(regress ? "regress-timing-" : "measure-", candidate, "-", run));
  worker::MeasureJob* m = r.mutable_measure();
  *m->mutable_contract() = c;
  *m->mutable_incumbent() = incumbent;
  *m->mutable_challenger() = challenger;
  m->set_run(run);
  m->set_seed(seed);
  m->set_regress(regress);
  return r;
}

std::chrono::milliseconds JobTimeout(const worker::Request& r, std::chrono::milliseconds cpu,
                                     std::chrono::milliseconds gpu) {
  const ledger::JobKind kind = KindOf(r);
  std::chrono::milliseconds timeout = RunsOnGpu(kind) ? gpu : cpu;
  // A portfolio compiles each member and its fallback: the compile limit is per schedule.
  if (kind == ledger::JobKind::kCompile && r.compile().has_portfolio())
    timeout *= r.compile().portfolio().members_size() + 1;
  if (kind == ledger::JobKind::kSanitize) {
    const auto policy = workloads::EffectivePolicy(r.sanitize().contract());
    const int per_tool = policy.sanitizer_timeout_s() > 0 ? policy.sanitizer_timeout_s() : 300;
    timeout = std::max<std::chrono::milliseconds>(
        timeout, std::chrono::seconds(int64_t{per_tool} * r.sanitize().tools_size() + 60));
  }
  return timeout;
}

}  // namespace cake::server
