#include "metrics.h"

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace cake::server {
namespace {

// A label value as the exposition format wants it: backslash, quote and newline escaped.
std::string Label(const std::string& v) {
  std::string out;
  for (char ch : v) {
    if (ch == '\\' || ch == '"') out.push_back('\\');
    if (ch == '\n') {
      out += "\\n";
      continue;
    }
    out.push_back(ch);
  }
  return out;
}

void Family(std::string* out, const char* name, const char* type, const char* help) {
  absl::StrAppend(out, "# HELP ", name, " ", help, "\n# TYPE ", name, " ", type, "\n");
}

}  // namespace

bool IsGpuJobKind(const std::string& kind) {
  return kind == "validate" || kind == "sanitize" || kind == "measure" || kind == "regress";
}

std::string MetricsText(const MetricsInput& in) {
  std::string out;
  Family(&out, "caked_up", "gauge", "1 while caked writes this file.");
  absl::StrAppend(&out, "caked_up{version=\"", Label(in.status.version()), "\",boot_id=\"",
                  Label(in.status.boot_id()), "\"} 1\n");
  Family(&out, "caked_execution_device", "gauge", "1 when caked has an execution device.");
  absl::StrAppend(&out, "caked_execution_device ", in.status.execution_device() ? 1 : 0, "\n");
  Family(&out, "caked_queue_jobs", "gauge", "Jobs queued or running now.");
  absl::StrAppend(&out, "caked_queue_jobs{state=\"queued\"} ", in.status.queued_jobs(), "\n",
                  "caked_queue_jobs{state=\"running\"} ", in.status.running_jobs(), "\n");
  Family(&out, "caked_jobs", "gauge", "Jobs in the ledger by kind and state.");
  for (const auto& j : in.jobs)
    absl::StrAppend(&out, "caked_jobs{kind=\"", Label(j.kind), "\",state=\"", Label(j.state),
                    "\"} ", j.count, "\n");
  Family(&out, "caked_job_run_seconds_total", "counter",
         "Seconds ended jobs ran, by kind (GPU lanes: validate, sanitize, measure, regress).");
  std::map<std::string, double> by_kind;
  double gpu = 0;
  for (const auto& j : in.jobs) {
    by_kind[j.kind] += j.run_seconds;
    if (IsGpuJobKind(j.kind)) gpu += j.run_seconds;
  }
  for (const auto& [kind, s] : by_kind)
    absl::StrAppend(&out, "caked_job_run_seconds_total{kind=\"", Label(kind), "\"} ",
                    absl::StrFormat("%.3f", s), "\n");
  Family(&out, "caked_gpu_lane_busy_seconds_total", "counter",
         "Seconds the GPU lanes spent running jobs, all devices together.");
  absl::StrAppend(&out, "caked_gpu_lane_busy_seconds_total ", absl::StrFormat("%.3f", gpu), "\n");
  // A device is labelled as the ledger names it: its UUID, else the probe's name.
  const auto device = [](const v1::DeviceStatus& d) {
    return Label(d.uuid().empty() ? d.name() : d.uuid());
  };
  Family(&out, "caked_device_busy_seconds_total", "counter",
         "Seconds each device's lane spent running jobs since caked started.");
  for (const v1::DeviceStatus& d : in.status.devices())
    absl::StrAppend(&out, "caked_device_busy_seconds_total{device=\"", device(d), "\"} ",
                    absl::StrFormat("%.3f", d.busy_seconds()), "\n");
  Family(&out, "caked_device_queued_jobs", "gauge",
         "Jobs queued now that each device's lane admits (its target and profile).");
  for (const v1::DeviceStatus& d : in.status.devices())
    absl::StrAppend(&out, "caked_device_queued_jobs{device=\"", device(d), "\"} ",
                    d.admitted_queued_jobs(), "\n");
  Family(&out, "caked_device_sm_clock_mhz", "gauge", "SM clock of each device now (NVML).");
  for (size_t i = 0; i < in.sm_mhz.size(); ++i)
    if (!std::isnan(in.sm_mhz[i]))
      absl::StrAppend(&out, "caked_device_sm_clock_mhz{index=\"", i, "\"} ",
                      absl::StrFormat("%.0f", in.sm_mhz[i]), "\n");
  Family(&out, "caked_promotions_total", "counter",
         "Incumbents recorded per contract (the first, its baseline, counts).");
  for (const auto& [contract, n] : in.promotions)
    absl::StrAppend(&out, "caked_promotions_total{contract=\"", Label(contract), "\"} ", n, "\n");
  Family(&out, "caked_auth_failures_total", "counter",
         "Calls refused as UNAUTHENTICATED or PERMISSION_DENIED since start, by reason.");
  for (const auto& [reason, n] : in.auth_failures)
    absl::StrAppend(&out, "caked_auth_failures_total{reason=\"", Label(reason), "\"} ", n, "\n");
  Family(&out, "caked_candidates", "gauge", "Candidates by state.");
  for (const auto& [state, n] : in.status.candidates_by_state())
    absl::StrAppend(&out, "caked_candidates{state=\"", Label(state), "\"} ", n, "\n");
  return out;
}

absl::Status WriteFileAtomically(const std::string& path, const std::string& text) {
  const std::string tmp = absl::StrCat(path, ".tmp");
  {
    std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
    f << text;
    f.flush();
    if (!f) return absl::UnavailableError(absl::StrCat("cannot write ", tmp));
  }
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  if (ec) return absl::UnavailableError(absl::StrCat("cannot rename ", tmp, ": ", ec.message()));
  return absl::OkStatus();
}

}  // namespace cake::server
