#include "machine_failures.h"

#include <algorithm>

namespace cake::server {

MachineRetry NextMachineRetry(const MachineRetryPolicy& policy, int failures_before) {
  MachineRetry r;
  if (failures_before + 1 >= policy.max_failures) {
    r.block = true;
    return r;
  }
  int64_t delay = policy.first_delay.count();
  for (int i = 0; i < failures_before && delay < policy.max_delay.count(); ++i) delay *= 4;
  r.delay_ms = std::min<int64_t>(delay, policy.max_delay.count());
  return r;
}

worker::FailureClass ClassifyWorkerRun(const absl::Status& run) {
  return run.code() == absl::StatusCode::kFailedPrecondition ? worker::INFRASTRUCTURE
                                                             : worker::SCHEDULE;
}

}  // namespace cake::server
