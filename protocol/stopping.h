// The measurement protocol's parameters, pure and tested on CPU: its configurations and the
// noise-based stopping of one paired timing series (nvbench's stdrel criterion, applied to the
// per-pair ratio challenger/incumbent): at least `min_pairs` kept pairs and `min_gpu_seconds` of
// GPU time, then stop when the ratio's relative standard deviation is below `max_noise` or when
// that noise estimate has stopped moving (more pairs would not make it smaller); hard caps on
// pairs and GPU time. The stop reason is kept with the result. Pure; thread-compatible.
#pragma once

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "cake/contract.pb.h"

namespace cake::protocol {

struct TimingConfig {
  std::string mode;   // "eager" | "graph"
  std::string cache;  // "cold" | "warm"
  bool primary = false;
  std::string Name() const { return mode + "/" + cache; }
};
// The contract's configurations ("mode/cache", first = primary), or the default
// eager/cold, eager/warm, graph/cold. InvalidArgument for an unknown or repeated one.
absl::StatusOr<std::vector<TimingConfig>> TimingConfigs(const contract::MeasurementProtocol& p);

struct StoppingParams {
  int min_pairs = 20;
  int max_pairs = 200;
  double max_noise = 0.005;
  double min_gpu_seconds = 0.5;
  double max_gpu_seconds = 20;
  int stable_window = 16;          // noise estimates compared for stability
  double stable_tolerance = 0.05;  // their relative range below which the noise is "stable"
};

// The contract's parameters with their documented defaults.
StoppingParams StoppingFrom(const contract::MeasurementProtocol& p);
std::string Describe(const StoppingParams& p);

class NoiseStopping {
 public:
  explicit NoiseStopping(StoppingParams p) : p_(p) {}
  // One pair: its ratio, whether it was kept (not throttled), and the GPU seconds it took.
  void Add(double ratio, bool kept, double gpu_seconds);
  bool Finished() const { return !reason_.empty(); }
  // "noise" | "stable" | "max_pairs" | "max_time", or "" while running.
  const std::string& reason() const { return reason_; }
  double rel_stddev() const { return rsd_; }
  int pairs() const { return pairs_; }
  double gpu_seconds() const { return gpu_seconds_; }

 private:
  StoppingParams p_;
  std::vector<double> kept_;
  std::vector<double> rsd_history_;
  int pairs_ = 0;
  double gpu_seconds_ = 0;
  double rsd_ = 0;
  std::string reason_;
};

// Relative standard deviation (sample stddev / mean) of `v`; 0 for fewer than two values.
double RelStddev(const std::vector<double>& v);

}  // namespace cake::protocol
