// The daemon's state as a Prometheus textfile (text exposition format 0.0.4), for
// node_exporter's textfile collector: queue depth, jobs by kind and state, the seconds GPU lanes
// spent on jobs, each device's SM clock now, promotions, refused calls. Rendering is pure; writing
// replaces the file atomically (a scrape never reads half a file).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "cake/service.pb.h"
#include "ledger/jobs.h"

namespace cake::server {

struct MetricsInput {
  v1::StatusReply status;
  std::vector<ledger::JobQueue::KindStateCount> jobs;
  std::map<std::string, int64_t> promotions;     // per contract id
  std::vector<float> sm_mhz;                     // per NVML device index; NaN where unknown
  std::map<std::string, int64_t> auth_failures;  // refused calls by reason (AuthAudit)
};

// Job kinds that run on a GPU lane (validate, sanitize, measure, regress).
bool IsGpuJobKind(const std::string& kind);

std::string MetricsText(const MetricsInput& in);

// Writes `text` to `path` through a temporary file in the same directory and a rename.
absl::Status WriteFileAtomically(const std::string& path, const std::string& text);

}  // namespace cake::server
