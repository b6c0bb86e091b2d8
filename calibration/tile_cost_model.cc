#include "tile_cost_model.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>

namespace cake::calibration {
namespace {

int64_t CeilDiv(int64_t a, int64_t b) { return b <= 0 ? 0 : (a + b - 1) / b; }

}  // namespace

const std::array<const char*, kTermCount>& TermNames() {
  static const std::array<const char*, kTermCount> names = {"mma_gmac_per_sm",
                                                            "ring_gbytes_per_sm",
                                                            "ldmatrix_gbytes_per_sm",
                                                            "dram_gbytes",
                                                            "wave_panel_gbytes",
                                                            "exposed_kiterations",
                                                            "ring_kfills",
                                                            "epilogue_mel",
                                                            "staged_epilogue_mel",
                                                            "cp_async_gbytes",
                                                            "launch"};
  return names;
}

int ResidentCtas(const TileSchedule& s, const DeviceShape& d) {
  const int threads = 32 * (s.warps_m * s.warps_n + (s.loader_warp ? 1 : 0));
  const int registers = s.registers > 0 ? s.registers : 255;
  int64_t fit = d.ctas_per_sm;
  fit = std::min<int64_t>(fit, d.registers_per_sm / std::max(1, registers * threads));
  fit = std::min<int64_t>(fit, d.shared_per_sm / std::max<int64_t>(1, s.shared_bytes + 1024));
  fit = std::min<int64_t>(fit, d.threads_per_sm / std::max(1, threads));
  return static_cast<int>(std::max<int64_t>(1, fit));
}

Terms TileTerms(const TileSchedule& s, const GemmExtents& e, const DeviceShape& d) {
  Terms t{};
  const int64_t tiles_m = CeilDiv(e.m, s.tile_m), tiles_n = CeilDiv(e.n, s.tile_n);
  const int64_t slices = std::max(1, s.k_slices);
  const int64_t ctas = tiles_m * tiles_n * slices;
  const int64_t per_sm = CeilDiv(ctas, std::max(1, d.sm_count));  // the busiest SM's CTAs
  const int64_t resident = std::min<int64_t>(ResidentCtas(s, d), std::max<int64_t>(1, per_sm));
  const int64_t k_per_cta = CeilDiv(CeilDiv(e.k, slices), s.tile_k) * s.tile_k;
  // The rest in doubles: counts up to 2^60 lose nothing that matters to a rate.
  const auto f = [](int64_t v) { return static_cast<double>(v); };
  const double tm = s.tile_m, tn = s.tile_n, tk = s.tile_k, m = f(e.m), n = f(e.n), k = f(e.k);
  const double macs = f(per_sm) * tm * tn * f(k_per_cta);
  // A row walk whose ring holds all of k loads each A tile once for its tiles_n output tiles.
  const bool a_once = s.row_walk && int64_t{s.stages} * s.tile_k >= e.k;
  const double a_rows = a_once ? tm / f(std::max<int64_t>(1, tiles_n)) : tm;
  const double ring_bytes = f(per_sm) * (a_rows + tn) * f(k_per_cta) * 2;
  t[0] = macs / 1e9;
  t[1] = ring_bytes / 1e9;
  // ldmatrix bytes per multiply-add fall as the warp tile grows (operand reuse in registers).
  t[2] = macs * (s.warps_m / tm + s.warps_n / tn) * 2 / 1e9;
  t[3] = (m * k * 2 + n * k * 2 + m * n * 2 + (slices > 1 ? m * n * 4 * 2 * f(slices) : 0)) / 1e9;
  // The operand panels one wave of resident CTAs reads from DRAM: a row-major wave spans up to
  // tiles_n columns of tiles; a banded one at most raster_group_m rows.
  const int64_t wave = std::max<int64_t>(1, std::min<int64_t>(d.sm_count * resident, ctas));
  int64_t wave_rows, wave_cols;
  if (s.raster_group_m <= 1) {
    wave_cols = std::min(wave, tiles_n);
    wave_rows = CeilDiv(wave, tiles_n);
  } else {
    wave_cols = std::min(CeilDiv(wave, s.raster_group_m), tiles_n);
    wave_rows = std::min<int64_t>(s.raster_group_m, tiles_m);
  }
  const int64_t waves = CeilDiv(ctas, wave);
  t[4] = f(waves) * (f(wave_rows) * tm + f(wave_cols) * tn) * (k / f(slices)) * 2 / 1e9;
  const double serial_ctas = f(per_sm) / f(resident);  // CTAs one resident slot runs in turn
  const double stages = std::max(1, s.stages);
  t[5] = serial_ctas * (f(k_per_cta) / tk) / stages / 1e3;
  t[6] = serial_ctas * stages / 1e3;
  const double outputs = f(per_sm) * tm * tn / 1e6;
  t[7] = s.staged_store ? 0 : outputs;
  t[8] = s.staged_store ? outputs : 0;
  t[9] = s.tma ? 0 : ring_bytes / 1e9;
  t[10] = 1;
  return t;
}

double FittedModel::PredictMs(const Terms& t) const {
  if (!fitted) return std::numeric_limits<double>::quiet_NaN();
  double ms = 0;
  for (int i = 0; i < kTermCount; ++i) ms += rates[i] * t[i];
  return ms;
}

FittedModel Fit(const std::vector<Sample>& samples) {
  FittedModel model;
  if (samples.empty()) return model;
  // Rows a_j = terms_j / ms_j, target 1: relative error. Columns scaled to unit norm so one step
  // size suits all, then coordinate descent with w >= 0 on the normal equations.
  const size_t n = samples.size();
  std::vector<Terms> a(n);
  Terms norm{};
  for (size_t j = 0; j < n; ++j)
    for (int i = 0; i < kTermCount; ++i) {
      a[j][i] = samples[j].terms[i] / samples[j].ms;
      norm[i] += a[j][i] * a[j][i];
    }
  for (int i = 0; i < kTermCount; ++i) norm[i] = std::sqrt(norm[i]);
  for (auto& row : a)
    for (int i = 0; i < kTermCount; ++i) row[i] = norm[i] > 0 ? row[i] / norm[i] : 0;
  std::array<std::array<double, kTermCount>, kTermCount> gram{};
  Terms rhs{};
  for (const auto& row : a)
    for (int i = 0; i < kTermCount; ++i) {
      rhs[i] += row[i];
      for (int k = 0; k < kTermCount; ++k) gram[i][k] += row[i] * row[k];
    }
  Terms w{};
  for (int sweep = 0; sweep < 20000; ++sweep) {
    double change = 0;
    for (int i = 0; i < kTermCount; ++i) {
      if (gram[i][i] <= 0) continue;
      double g = -rhs[i];
      for (int k = 0; k < kTermCount; ++k) g += gram[i][k] * w[k];
      const double next = std::max(0.0, w[i] - g / gram[i][i]);
      change = std::max(change, std::abs(next - w[i]));
      w[i] = next;
    }
    if (change < 1e-13) break;
  }
  for (int i = 0; i < kTermCount; ++i) model.rates[i] = norm[i] > 0 ? w[i] / norm[i] : 0;
  model.fitted = true;
  return model;
}

double KendallTau(const std::vector<double>& a, const std::vector<double>& b) {
  if (a.size() != b.size()) return 0;
  int64_t concordant = 0, discordant = 0, ties_a = 0, ties_b = 0;
  for (size_t i = 0; i < a.size(); ++i)
    for (size_t j = i + 1; j < a.size(); ++j) {
      const double da = a[i] - a[j], db = b[i] - b[j];
      if (da == 0 && db == 0) continue;  // tied in both: neither
      if (da == 0) {
        ++ties_a;
      } else if (db == 0) {
        ++ties_b;
      } else if ((da > 0) == (db > 0)) {
        ++concordant;
      } else {
        ++discordant;
      }
    }
  const double left = static_cast<double>(concordant + discordant + ties_a);
  const double right = static_cast<double>(concordant + discordant + ties_b);
  if (left <= 0 || right <= 0) return 0;
  return static_cast<double>(concordant - discordant) / std::sqrt(left * right);
}

std::vector<HeldOutGroup> LeaveOneGroupOut(const std::vector<Sample>& samples) {
  std::map<std::string, std::vector<const Sample*>> groups;
  for (const Sample& s : samples) groups[s.group].push_back(&s);
  std::vector<HeldOutGroup> out;
  for (const auto& [name, members] : groups) {
    std::vector<Sample> training;
    for (const Sample& s : samples)
      if (s.group != name) training.push_back(s);
    const FittedModel model = Fit(training);
    if (!model.fitted) continue;
    HeldOutGroup h;
    h.group = name;
    h.samples = static_cast<int>(members.size());
    std::vector<double> predicted, measured;
    double best_predicted = std::numeric_limits<double>::infinity();
    h.measured_best_ms = std::numeric_limits<double>::infinity();
    for (const Sample* s : members) {
      const double p = model.PredictMs(s->terms);
      predicted.push_back(p);
      measured.push_back(s->ms);
      if (p < best_predicted) {
        best_predicted = p;
        h.predicted_best = s->label;
        h.predicted_best_ms = s->ms;
      }
      if (s->ms < h.measured_best_ms) {
        h.measured_best_ms = s->ms;
        h.measured_best = s->label;
      }
    }
    h.tau = KendallTau(predicted, measured);
    out.push_back(h);
  }
  return out;
}

}  // namespace cake::calibration
