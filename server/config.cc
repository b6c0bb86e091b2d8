#include "config.h"

#include <fstream>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"

namespace cake::server {

absl::Status ApplyConfigFile(const std::string& path, DaemonConfig* c) {
  std::ifstream in(path);
  if (!in) return absl::NotFoundError(absl::StrCat(path, ": cannot read config file"));
  std::string line;
  for (int n = 1; std::getline(in, line); ++n) {
    absl::string_view v = absl::StripAsciiWhitespace(line);
    if (v.empty() || v.front() == '#') continue;
    const size_t eq = v.find('=');
    if (eq == absl::string_view::npos)
      return absl::InvalidArgumentError(absl::StrCat(path, ":", n, ": expected key = value"));
    const std::string key(absl::StripAsciiWhitespace(v.substr(0, eq)));
    const std::string value(absl::StripAsciiWhitespace(v.substr(eq + 1)));
    auto as_int = [&](auto* out) -> absl::Status {
      int64_t x;
      if (!absl::SimpleAtoi(value, &x) || x < 0)
        return absl::InvalidArgumentError(
            absl::StrCat(path, ":", n, ": ", key, " needs a non-negative integer"));
      *out = static_cast<std::remove_pointer_t<decltype(out)>>(x);
      return absl::OkStatus();
    };
    absl::Status s;
    if (key == "state_dir")
      c->state_dir = value;
    else if (key == "listen")
      c->listen = value;
    else if (key == "worker_path")
      c->worker_path = value;
    else if (key == "cpu_workers")
      s = as_int(&c->cpu_workers);
    else if (key == "max_queue")
      s = as_int(&c->max_queue);
    else if (key == "max_attempts")
      s = as_int(&c->max_attempts);
    else if (key == "max_message_bytes")
      s = as_int(&c->max_message_bytes);
    else if (key == "compile_timeout_ms")
      s = as_int(&c->compile_timeout_ms);
    else if (key == "gpu_timeout_ms")
      s = as_int(&c->gpu_timeout_ms);
    else if (key == "worker_user")
      c->worker_user = value;
    else if (key == "log_level") {
      if (value != "trace" && value != "debug" && value != "info" && value != "warn" &&
          value != "error" && value != "critical")
        return absl::InvalidArgumentError(absl::StrCat(
            path, ":", n, ": log_level is trace, debug, info, warn, error or critical"));
      c->log_level = value;
    } else if (key == "job_containment") {
      if (value != "auto" && value != "process_group")
        return absl::InvalidArgumentError(
            absl::StrCat(path, ":", n, ": job_containment is auto or process_group"));
      c->job_containment = value;
    } else if (key == "job_memory_max_bytes")
      s = as_int(&c->job_memory_max_bytes);
    else if (key == "job_pids_max")
      s = as_int(&c->job_pids_max);
    else if (key == "compile_address_space_bytes")
      s = as_int(&c->compile_address_space_bytes);
    else if (key == "use_gpu" || key == "confine_workers") {
      if (value != "true" && value != "false")
        return absl::InvalidArgumentError(
            absl::StrCat(path, ":", n, ": ", key, " is true or false"));
      (key == "use_gpu" ? c->use_gpu : c->confine_workers) = value == "true";
    } else {
      return absl::InvalidArgumentError(absl::StrCat(path, ":", n, ": unknown key '", key, "'"));
    }
    if (!s.ok()) return s;
  }
  return absl::OkStatus();
}

}  // namespace cake::server
