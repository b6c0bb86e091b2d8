#include "search_model.h"

#include <algorithm>
#include <set>

#include "absl/strings/str_cat.h"

namespace cake::search {
namespace {

namespace cal = calibration;

cal::GemmExtents GemmOf(const workloads::MatmulExtents& e) { return {e.m, e.n, e.k}; }

bool AllWeightsZero(const std::vector<ModelRow>& rows) {
  return std::all_of(rows.begin(), rows.end(), [](const ModelRow& r) { return r.weight <= 0; });
}

double Weight(const ModelRow& r, bool all_zero) { return all_zero ? 1.0 : r.weight; }

std::vector<cal::Sample> SamplesOf(const std::vector<MeasuredSchedule>& measured,
                                   const std::vector<ModelRow>& rows,
                                   const cal::DeviceShape& device, const std::string& except) {
  std::vector<cal::Sample> out;
  for (const MeasuredSchedule& s : measured) {
    if (s.key == except) continue;
    for (const ModelRow& r : s.rows ? *s.rows : rows) {
      auto it = s.row_us.find(r.name);
      if (it == s.row_us.end() || !(it->second > 0)) continue;
      out.push_back(
          {cal::TileTerms(s.tile, GemmOf(r.extents), device), it->second / 1000.0, r.name, s.key});
    }
  }
  return out;
}

}  // namespace

int64_t RingBytes(const cal::TileSchedule& t) {
  return int64_t{t.stages} * (t.tile_m + t.tile_n) * t.tile_k * 2;
}

int EstimatedRegisters(const cal::TileSchedule& t) {
  const int warp_m = t.tile_m / std::max(1, t.warps_m), warp_n = t.tile_n / std::max(1, t.warps_n);
  const int accumulator = warp_m * warp_n / 32;                // FP32 per thread
  const int fragments = (warp_m / 16) * 4 + (warp_n / 8) * 2;  // one k16 step of A and B
  return std::min(255, accumulator + fragments + 40);
}

double PredictWeightedUs(const cal::FittedModel& model, const cal::TileSchedule& tile,
                         const std::vector<ModelRow>& rows, const cal::DeviceShape& device) {
  const bool all_zero = AllWeightsZero(rows);
  double total = 0;
  for (const ModelRow& r : rows) {
    const double w = Weight(r, all_zero);
    if (w <= 0) continue;
    total += w * model.PredictMs(cal::TileTerms(tile, GemmOf(r.extents), device)) * 1000.0;
  }
  return total;
}

std::pair<double, double> PredictionInterval(double predicted_us, const Calibration& c) {
  if (!c.model.fitted || (c.error_low == 0 && c.error_high == 0) || !(predicted_us > 0))
    return {0, 0};
  // predicted = measured x (1 + e): a low error means the measured time is above the prediction.
  const auto measured = [&](double e) { return predicted_us / std::max(1 + e, 0.05); };
  return {measured(c.error_high), measured(c.error_low)};
}

std::optional<double> MeasuredWeightedUs(const MeasuredSchedule& s,
                                         const std::vector<ModelRow>& rows) {
  const bool all_zero = AllWeightsZero(rows);
  double total = 0;
  for (const ModelRow& r : rows) {
    const double w = Weight(r, all_zero);
    if (w <= 0) continue;
    auto it = s.row_us.find(r.name);
    if (it == s.row_us.end() || !(it->second > 0)) return std::nullopt;
    total += w * it->second;
  }
  return total;
}

Calibration Calibrate(const std::vector<MeasuredSchedule>& measured,
                      const std::vector<ModelRow>& rows, const cal::DeviceShape& device) {
  Calibration c;
  const std::vector<cal::Sample> all = SamplesOf(measured, rows, device, "");
  c.samples = static_cast<int>(all.size());
  std::set<std::string> keys;
  for (const MeasuredSchedule& s : measured)
    if (!s.row_us.empty()) keys.insert(s.key);
  c.schedules = static_cast<int>(keys.size());
  if (c.schedules < 3) {
    c.note = absl::StrCat("uncalibrated: ", c.schedules,
                          " schedule(s) measured on this device profile, 3 needed");
    return c;
  }
  c.model = cal::Fit(all);
  if (!c.model.fitted) {
    c.note = "uncalibrated: the fit found no rates";
    return c;
  }
  // Held out: each schedule's weighted time predicted by a model fitted without it.
  std::vector<double> predicted, observed;
  for (const MeasuredSchedule& s : measured) {
    if (s.rows) continue;  // another contract's: fitted on, not ranked here
    const std::optional<double> m = MeasuredWeightedUs(s, rows);
    if (!m) continue;
    const cal::FittedModel without = cal::Fit(SamplesOf(measured, rows, device, s.key));
    if (!without.fitted) continue;
    predicted.push_back(PredictWeightedUs(without, s.tile, rows, device));
    observed.push_back(*m);
  }
  c.held_out_tau = predicted.size() >= 3 ? cal::KendallTau(predicted, observed) : 0;
  if (predicted.size() >= 3) {
    std::vector<double> errors;
    for (size_t i = 0; i < predicted.size(); ++i) errors.push_back(predicted[i] / observed[i] - 1);
    std::sort(errors.begin(), errors.end());
    const size_t n = errors.size();
    const size_t low = n >= 10 ? n / 10 : 0, high = n >= 10 ? n - 1 - n / 10 : n - 1;
    c.error_low = errors[low];
    c.error_high = errors[high];
  }
  return c;
}

}  // namespace cake::search
