// What the search learns from a contract's measured rows: the tile cost model
// (calibration/tile_cost_model.h) fitted to one device profile's per-row medians of every
// measured schedule of the contract, whoever proposed it, and the weighted time it predicts for a
// schedule over the contract's rows. Its ranking is measured, not assumed: each measured schedule
// is predicted by a model fitted without it, and Kendall's tau compares those predictions with
// the measured weighted times. Pure; thread-safe.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "calibration/tile_cost_model.h"
#include "workloads/workload.h"

namespace cake::search {

// A contract row as the model sees it.
struct ModelRow {
  std::string name;
  workloads::MatmulExtents extents;
  double weight = 1;  // the contract row's weight (0: fitted on, not in the objective)
};

// One schedule's measured medians on this device profile, per row name.
struct MeasuredSchedule {
  std::string key;  // the schedule hash: held out together wherever it was measured
  calibration::TileSchedule tile;
  std::map<std::string, double> row_us;
  // The rows of the contract it was measured on, when that is not the searched contract (its
  // rows are fitted on; the objective and the held-out tau use the searched contract's only).
  std::shared_ptr<const std::vector<ModelRow>> rows;
};

struct Calibration {
  calibration::FittedModel model;
  int samples = 0, schedules = 0;  // schedules: distinct keys with a median
  double held_out_tau = 0;         // leave-one-schedule-out; 0 when fewer than 3 schedules
  // predicted / measured - 1 of those held-out predictions: 10th and 90th percentiles (the
  // extremes below 10 schedules); both 0 when fewer than 3.
  double error_low = 0, error_high = 0;
  std::string note;  // why the model is unfitted, when it is
};

// Fits on every (schedule, row) median. Unfitted, saying why, with fewer than 3 schedules.
Calibration Calibrate(const std::vector<MeasuredSchedule>& measured,
                      const std::vector<ModelRow>& rows, const calibration::DeviceShape& device);

// Sum over rows of weight x predicted microseconds (rows of weight 0 left out; all rows when
// every weight is 0).
double PredictWeightedUs(const calibration::FittedModel& model,
                         const calibration::TileSchedule& tile, const std::vector<ModelRow>& rows,
                         const calibration::DeviceShape& device);

// The measured time a prediction stands for, given the held-out relative errors: [low, high]
// microseconds, or {0, 0} when the calibration has no interval.
std::pair<double, double> PredictionInterval(double predicted_us, const Calibration& c);

// The same objective from measured medians; nullopt when a row of the objective is missing.
std::optional<double> MeasuredWeightedUs(const MeasuredSchedule& s,
                                         const std::vector<ModelRow>& rows);

// Registers per thread a warp-tiled schedule is likely to get before it is compiled: its FP32
// accumulator fragment, the A and B fragments of one k-step and a fixed share for addresses and
// the loop (capped at 255). The receipt's count replaces it once the schedule is compiled.
int EstimatedRegisters(const calibration::TileSchedule& tile);

// Shared bytes of the schedule's ring (BF16 operands, stages x (tile_m + tile_n) x tile_k).
int64_t RingBytes(const calibration::TileSchedule& tile);

}  // namespace cake::search
