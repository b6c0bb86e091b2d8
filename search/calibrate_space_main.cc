// cake-calibrate-space: fits the search's tile cost model to a bench of a workload's search space
// (one device's medians of many points on several shapes: scripts/device/kmeans_peers.sh writes
// one) and reports how well it ranks what it was not fitted on, two ways: per held-out shape
// (Kendall's tau over the points, and the point it would pick there), and leave-one-schedule-out
// over the contract-weighted objective (what the daemon's search reports as held-out tau).
//   cake-calibrate-space --operation OP --bench FILE --sms 132 [--arm ARM] [--json OUT]
// A bench entry's label names a point of the workload's SearchSpace(); its schedule is read with
// TileScheduleOf as the search reads any proposal. Exit 0 with a report, 1 when no entry is a
// point of the space, 2 for usage.
#include <algorithm>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <map>

#include "CLI/CLI.hpp"
#include "absl/strings/str_join.h"
#include "calibration/tile_cost_model.h"
#include "calibration/tile_schedule_of.h"
#include "compiler/parse.h"
#include "google/protobuf/util/json_util.h"
#include "nlohmann/json.hpp"
#include "search/search_model.h"
#include "workloads/workload.h"

namespace {

namespace cal = cake::calibration;
using nlohmann::json;

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{
      "cake-calibrate-space: fit the search's tile cost model to a bench of a workload's search "
      "space and report its held-out ranking"};
  std::string operation, arm, bench, json_out;
  int sms = 0;
  app.add_option("--operation", operation, "Contract operation whose SearchSpace() the labels name")
      ->required();
  app.add_option("--arm", arm, "ProblemShape arm of the bench's shapes (default: the operation)");
  app.add_option("--bench", bench,
                 "Bench JSON: shapes[].shape and shapes[].entries{label: "
                 "{kind, median_ms, registers}}")
      ->required()
      ->check(CLI::ExistingFile);
  app.add_option("--sms", sms, "The device's SM count (H100 SXM: 132)")->required();
  app.add_option("--json", json_out, "Also write the report as JSON here");
  std::string residuals;
  app.add_option("--residuals", residuals,
                 "Print every point of this held-out shape (e.g. 32x65536x1024x128): measured and "
                 "predicted by the model fitted on the other shapes");
  CLI11_PARSE(app, argc, argv);
  const cake::workloads::Workload* w = cake::workloads::FindWorkload(operation);
  if (w == nullptr) {
    std::cerr << "cake-calibrate-space: " << cake::workloads::UnknownOperation(operation).message()
              << "\n";
    return 2;
  }
  if (arm.empty()) arm = operation;
  json in;
  try {
    std::ifstream(bench) >> in;
  } catch (const json::exception& e) {
    std::cerr << "cake-calibrate-space: " << bench << ": not JSON: " << e.what() << "\n";
    return 2;
  }
  if (!in.contains("shapes")) {
    std::cerr << "cake-calibrate-space: " << bench << ": no shapes[]\n";
    return 2;
  }
  cal::DeviceShape device;
  device.sm_count = sms;
  std::map<std::string, std::string> space;  // label -> schedule text
  for (const cake::workloads::Proposal& p : w->SearchSpace()) space[p.label] = p.schedule_text;

  std::vector<cake::search::ModelRow> rows;
  std::map<std::string, cake::search::MeasuredSchedule> measured;
  std::vector<cal::Sample> samples;
  std::map<std::string, int> outside;  // labels of schedules not in the space
  for (const json& s : in["shapes"]) {
    cake::contract::ProblemShape problem;
    const std::string text = json{{arm, s["shape"]}}.dump();
    if (!google::protobuf::util::JsonStringToMessage(text, &problem).ok()) {
      std::cerr << "cake-calibrate-space: shape " << text << " is not a ProblemShape\n";
      return 2;
    }
    const cake::workloads::MatmulExtents x = w->Extents(problem);
    const std::string row = w->ShapeText(problem);
    rows.push_back({row, x, 1});
    for (const auto& [label, e] : s["entries"].items()) {
      if (e.value("kind", "") != "schedule" || !(e.value("median_ms", 0.0) > 0)) continue;
      auto point = space.find(label);
      if (point == space.end()) {
        ++outside[label];
        continue;
      }
      auto parsed = cake::compiler::ParseModuleText(point->second, label);
      if (!parsed.ok()) continue;
      auto tile = cal::TileScheduleOf(parsed->module, e.value("registers", 0), 0);
      if (!tile.has_value()) continue;
      tile->shared_bytes = cake::search::RingBytes(*tile);  // the bench records no receipt's
      cake::search::MeasuredSchedule& m = measured[label];
      m.key = label;
      m.tile = *tile;
      m.row_us[row] = e["median_ms"].get<double>() * 1000;
      samples.push_back({cal::TileTerms(*tile, {x.m, x.n, x.k}, device),
                         e["median_ms"].get<double>(), row, label});
    }
  }
  if (samples.empty()) {
    std::cerr << "cake-calibrate-space: no entry of " << bench << " is a point of " << operation
              << "'s search space (" << outside.size() << " labels outside it)\n";
    return 1;
  }
  std::printf("device: %s, %d SMs; operation %s\n", in.value("device", "?").c_str(), sms,
              operation.c_str());
  std::printf("samples: %zu (%zu points of the space x %zu shapes); %zu labels outside the space\n",
              samples.size(), measured.size(), rows.size(), outside.size());
  std::printf(
      "\nheld-out shape             n   tau    model's pick (measured)            best measured\n");
  json report = {
      {"bench", bench}, {"operation", operation}, {"sm_count", sms}, {"samples", samples.size()}};
  double tau_sum = 0;
  const std::vector<cal::HeldOutGroup> held = cal::LeaveOneGroupOut(samples);
  for (const cal::HeldOutGroup& h : held) {
    tau_sum += h.tau;
    std::printf("%-24s %4d  %5.3f  %8.4f ms %-28s %8.4f ms %s\n", h.group.c_str(), h.samples, h.tau,
                h.predicted_best_ms, h.predicted_best.c_str(), h.measured_best_ms,
                h.measured_best.c_str());
    report["held_out_shapes"].push_back({{"shape", h.group},
                                         {"samples", h.samples},
                                         {"kendall_tau", h.tau},
                                         {"predicted_best", h.predicted_best},
                                         {"predicted_best_measured_ms", h.predicted_best_ms},
                                         {"measured_best", h.measured_best},
                                         {"measured_best_ms", h.measured_best_ms}});
  }
  const double shape_tau = tau_sum / static_cast<double>(held.size());
  if (!residuals.empty()) {
    std::vector<cal::Sample> others, mine;
    for (const cal::Sample& x : samples) (x.group == residuals ? mine : others).push_back(x);
    const cal::FittedModel fit = cal::Fit(others);
    std::sort(mine.begin(), mine.end(),
              [](const cal::Sample& a, const cal::Sample& b) { return a.ms < b.ms; });
    std::printf("\n%s: measured, predicted (fitted without it), ratio\n", residuals.c_str());
    for (const cal::Sample& x : mine)
      std::printf("  %-28s %8.4f ms %8.4f ms %6.3f\n", x.label.c_str(), x.ms,
                  fit.PredictMs(x.terms), fit.PredictMs(x.terms) / x.ms);
  }
  std::vector<cake::search::MeasuredSchedule> all;
  for (auto& [label, m] : measured) all.push_back(m);
  const cake::search::Calibration c = cake::search::Calibrate(all, rows, device);
  std::printf("\nmean held-out-shape Kendall tau: %.3f\n", shape_tau);
  std::printf(
      "leave-one-schedule-out tau over the equal-weight objective: %.3f (%d schedules; "
      "held-out error %+.1f%% .. %+.1f%%)%s%s\n",
      c.held_out_tau, c.schedules, 100 * c.error_low, 100 * c.error_high,
      c.note.empty() ? "" : "; ", c.note.c_str());
  report["mean_held_out_shape_tau"] = shape_tau;
  report["leave_one_schedule_out_tau"] = c.held_out_tau;
  report["held_out_error_low"] = c.error_low;
  report["held_out_error_high"] = c.error_high;
  if (!json_out.empty()) std::ofstream(json_out) << report.dump(2) << "\n";
  return 0;
}
