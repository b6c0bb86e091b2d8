#include "stopping.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"

namespace cake::protocol {

absl::StatusOr<std::vector<TimingConfig>> TimingConfigs(const contract::MeasurementProtocol& p) {
  std::vector<std::string> names(p.configurations().begin(), p.configurations().end());
  if (names.empty()) names = {"eager/cold", "eager/warm", "graph/cold"};
  std::vector<TimingConfig> out;
  for (const std::string& n : names) {
    std::vector<std::string> parts = absl::StrSplit(n, '/');
    if (parts.size() != 2 || (parts[0] != "eager" && parts[0] != "graph") ||
        (parts[1] != "cold" && parts[1] != "warm"))
      return absl::InvalidArgumentError(absl::StrCat(
          "measurement configuration '", n, "' is not mode/cache (eager|graph / cold|warm)"));
    for (const TimingConfig& c : out)
      if (c.Name() == n)
        return absl::InvalidArgumentError(absl::StrCat("configuration '", n, "' listed twice"));
    out.push_back({parts[0], parts[1], out.empty()});
  }
  return out;
}

StoppingParams StoppingFrom(const contract::MeasurementProtocol& c) {
  StoppingParams p;
  if (c.pairs() > 0) p.min_pairs = c.pairs();
  if (c.max_pairs() > 0) p.max_pairs = c.max_pairs();
  if (c.max_noise() > 0) p.max_noise = c.max_noise();
  if (c.min_gpu_seconds() > 0) p.min_gpu_seconds = c.min_gpu_seconds();
  if (c.max_gpu_seconds() > 0) p.max_gpu_seconds = c.max_gpu_seconds();
  p.max_pairs = std::max(p.max_pairs, p.min_pairs);
  return p;
}

std::string Describe(const StoppingParams& p) {
  return absl::StrFormat(
      "stdrel on the pair ratio: >= %d kept pairs and >= %.2f s GPU, then rsd < %.3f%% or the "
      "rsd stable (last %d within %.0f%%); caps %d pairs, %.1f s GPU",
      p.min_pairs, p.min_gpu_seconds, 100 * p.max_noise, p.stable_window, 100 * p.stable_tolerance,
      p.max_pairs, p.max_gpu_seconds);
}

double RelStddev(const std::vector<double>& v) {
  if (v.size() < 2) return 0;
  double mean = 0;
  for (double x : v) mean += x;
  mean /= double(v.size());
  double var = 0;
  for (double x : v) var += (x - mean) * (x - mean);
  var /= double(v.size() - 1);
  return mean != 0 ? std::sqrt(var) / std::fabs(mean) : 0;
}

void NoiseStopping::Add(double ratio, bool kept, double gpu_seconds) {
  if (Finished()) return;
  ++pairs_;
  gpu_seconds_ += gpu_seconds;
  if (kept && std::isfinite(ratio)) {
    kept_.push_back(ratio);
    rsd_ = RelStddev(kept_);
    rsd_history_.push_back(rsd_);
  }
  if (pairs_ >= p_.max_pairs) {
    reason_ = "max_pairs";
    return;
  }
  if (gpu_seconds_ >= p_.max_gpu_seconds) {
    reason_ = "max_time";
    return;
  }
  if (int(kept_.size()) < p_.min_pairs || gpu_seconds_ < p_.min_gpu_seconds) return;
  if (rsd_ < p_.max_noise) {
    reason_ = "noise";
    return;
  }
  if (int(rsd_history_.size()) >= p_.stable_window) {
    const auto begin = rsd_history_.end() - p_.stable_window;
    const auto [lo, hi] = std::minmax_element(begin, rsd_history_.end());
    if (*hi > 0 && (*hi - *lo) / *hi < p_.stable_tolerance) reason_ = "stable";
  }
}

}  // namespace cake::protocol
