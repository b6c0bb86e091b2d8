// cake-calibrate: fits the tile cost model (calibration/tile_cost_model.h) to a cake-gemm-bench
// JSON (one device's measured medians of the warp-GEMM family on several shapes) and reports how
// well it ranks shapes it was not fitted on: Kendall's tau per held-out shape, the schedule it
// would pick there and that schedule's measured time beside the measured best.
//   cake-calibrate --bench evidence/gemm_bench/raster_bands/gemm_bench.json [--json OUT]
// Exit 0 when a report was made, 1 when no schedule of the file is in the family, 2 for usage.
#include <cstdio>
#include <fstream>
#include <iostream>
#include <map>

#include "CLI/CLI.hpp"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "calibration/tile_cost_model.h"
#include "nlohmann/json.hpp"
#include "workloads/gemm_bf16/space.h"

namespace {

namespace cal = cake::calibration;
namespace gemm = cake::workloads::gemm_bf16;
using nlohmann::json;

// The family's points by the name the bench prints (Describe(), " sm90-only" for those).
std::map<std::string, gemm::WarpGemmParams> FamilyByName() {
  std::map<std::string, gemm::WarpGemmParams> out;
  for (const gemm::WarpGemmParams& p : gemm::WarpGemmFamily()) out[p.Describe()] = p;
  for (const gemm::WarpGemmParams& p : gemm::WarpGemmSm90OnlyPoints())
    out[p.Describe() + " sm90-only"] = p;
  return out;
}

cal::TileSchedule ScheduleOf(const gemm::WarpGemmParams& p, int registers, int64_t shared) {
  cal::TileSchedule s;
  s.tile_m = p.tile_m;
  s.tile_n = p.tile_n;
  s.tile_k = p.tile_k;
  s.warps_m = p.warps_m;
  s.warps_n = p.warps_n;
  s.stages = p.stages;
  s.k_slices = p.k_slices;
  s.raster_group_m = p.raster_group_m;
  s.tma = p.transfer == cake::ir::TMA;
  s.loader_warp = p.warp_specialized;
  s.staged_store = p.stage_store;
  s.registers = registers;
  s.shared_bytes = shared;
  return s;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{
      "cake-calibrate: fit the tile cost model to a cake-gemm-bench JSON and report "
      "its held-out ranking (Kendall's tau per shape)"};
  std::string bench, json_out;
  app.add_option("--bench", bench, "cake-gemm-bench --json output")
      ->required()
      ->check(CLI::ExistingFile);
  app.add_option("--json", json_out, "Also write the report as JSON here");
  CLI11_PARSE(app, argc, argv);

  json in;
  try {
    std::ifstream(bench) >> in;
  } catch (const json::exception& e) {
    std::cerr << "cake-calibrate: " << bench << ": not JSON: " << e.what() << "\n";
    return 2;
  }
  if (!in.contains("rows") || !in.contains("family") || !in.contains("sm_count")) {
    std::cerr << "cake-calibrate: " << bench << ": not a cake-gemm-bench report (rows, family, "
              << "sm_count)\n";
    return 2;
  }
  cal::DeviceShape device;
  device.sm_count = in["sm_count"].get<int>();
  const auto family = FamilyByName();
  std::map<std::string, cal::TileSchedule> known;  // the file's schedules this build knows
  std::vector<std::string> unknown;
  for (const json& f : in["family"]) {
    const std::string name = f.value("schedule", "");
    if (f.value("status", "") != "ok") continue;
    auto it = family.find(name);
    if (it == family.end()) {
      unknown.push_back(name);
      continue;
    }
    known[name] = ScheduleOf(it->second, f.value("registers", 0), f.value("shared_bytes", 0));
  }
  std::vector<cal::Sample> samples;
  for (const json& row : in["rows"]) {
    const auto shape = row["shape"].get<std::vector<int64_t>>();
    if (shape.size() != 3) continue;
    const cal::GemmExtents e{shape[0], shape[1], shape[2]};
    const std::string group = absl::StrJoin(shape, "x");
    for (const json& t : row["timings"]) {
      auto it = known.find(t.value("contender", ""));
      if (it == known.end() || !(t.value("median_ms", 0.0) > 0)) continue;
      samples.push_back(
          {cal::TileTerms(it->second, e, device), t["median_ms"].get<double>(), group, it->first});
    }
  }
  if (samples.empty()) {
    std::cerr << "cake-calibrate: no schedule of " << bench << " is in this build's family ("
              << unknown.size() << " unknown names)\n";
    return 1;
  }
  const std::vector<cal::HeldOutGroup> held = cal::LeaveOneGroupOut(samples);
  const cal::FittedModel all = cal::Fit(samples);
  const std::string device_name = in.value("device", "unknown device");
  std::printf("device: %s, %d SMs (bench commit %s)\n", device_name.c_str(), device.sm_count,
              in.value("commit", "?").c_str());
  std::printf("samples: %zu (%zu schedules x %zu shapes); %zu names not in this build's family\n",
              samples.size(), known.size(), held.size(), unknown.size());
  std::printf(
      "\nheld-out shape        n   tau    model's pick (measured)          best measured\n");
  double tau_sum = 0;
  json report = {{"bench", bench},
                 {"device", device_name},
                 {"sm_count", device.sm_count},
                 {"samples", samples.size()},
                 {"unknown_names", unknown}};
  for (const cal::HeldOutGroup& h : held) {
    tau_sum += h.tau;
    std::printf("%-18s %4d  %5.3f  %8.4f ms %-40s %8.4f ms\n", h.group.c_str(), h.samples, h.tau,
                h.predicted_best_ms, h.predicted_best.c_str(), h.measured_best_ms);
    report["held_out"].push_back({{"shape", h.group},
                                  {"samples", h.samples},
                                  {"kendall_tau", h.tau},
                                  {"predicted_best", h.predicted_best},
                                  {"predicted_best_measured_ms", h.predicted_best_ms},
                                  {"measured_best", h.measured_best},
                                  {"measured_best_ms", h.measured_best_ms}});
  }
  const double mean_tau = tau_sum / static_cast<double>(held.size());
  std::printf("\nmean held-out Kendall tau: %.3f (target 0.8)\n", mean_tau);
  std::printf("rates fitted on every shape (ms per unit):");
  for (int i = 0; i < cal::kTermCount; ++i) {
    std::printf("%s %s %.4g", i ? "," : "", cal::TermNames()[i], all.rates[i]);
    report["rates_ms_per_unit"][cal::TermNames()[i]] = all.rates[i];
  }
  std::printf("\n");
  report["mean_kendall_tau"] = mean_tau;
  if (!json_out.empty()) std::ofstream(json_out) << report.dump(1) << "\n";
  return 0;
}
