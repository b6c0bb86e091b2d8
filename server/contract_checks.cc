#include "contract_checks.h"

#include "absl/strings/str_cat.h"
#include "base/digest.h"
#include "compiler/canonical.h"
#include "compiler/parse.h"
#include "compiler/targets.h"
#include "eligibility.h"
#include "error_detail.h"
#include "proposal.h"
#include "protocol/stopping.h"
#include "workloads/workload.h"

namespace cake::server {

absl::Status CheckContract(const contract::Contract& c) {
  if (c.name().empty()) return absl::InvalidArgumentError("contract has no name");
  const workloads::Workload* w = workloads::FindWorkload(c.operation());
  if (w == nullptr) return workloads::UnknownOperation(c.operation());
  if (c.rows().empty()) return absl::InvalidArgumentError("contract has no rows");
  bool required = false;
  for (int i = 0; i < c.rows_size(); ++i) {
    const contract::Row& r = c.rows(i);
    if (r.name().empty()) return absl::InvalidArgumentError("a row has no name");
    if (absl::Status s = w->CheckShape(r.problem()); !s.ok())
      return InvalidField(absl::StrCat("contract.rows[", i, "].problem"),
                          absl::StrCat("contract.rows[", i, "] '", r.name(), "': ", s.message()));
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
  if (c.has_validation()) {
    std::string field;
    if (std::string bad = CheckValidationPolicy(c.validation(), *w, &field); !bad.empty())
      return field.empty() ? absl::InvalidArgumentError(bad)
                           : InvalidField(absl::StrCat("contract.", field), bad);
  }
  // Read as a proposal's schedule is (names, limits, kernels), refusals naming the field.
  return CheckBaselineSchedule(c.baseline_schedule());
}

std::string KeyedContractId(const std::string& key, const contract::Contract& c) {
  return "ct-" + base::HmacSha256Hex(key, "cake-contract-v2\n" + compiler::DeterministicBytes(c))
                     .substr(0, 16);
}

std::string BaselineHash(const contract::Contract& c) {
  auto parsed = compiler::ParseModuleText(c.baseline_schedule(), "baseline_schedule");
  return parsed.ok() ? compiler::ScheduleHash(parsed->module) : "";
}

}  // namespace cake::server
