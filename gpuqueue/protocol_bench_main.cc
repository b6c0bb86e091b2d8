// cake-protocol-bench: checks the paired timing protocol on a real device, side by side in one
// run. A/A: the same schedule loaded twice as incumbent and challenger, N comparisons; the
// protocol must call "faster" or "slower" in <= 1 % of them. Planted slowdown: the challenger
// does 3 % more work: each of its samples runs 3 % more launches of the same kernel, divided
// by the same count (a longer K or more output rows was measured to cost only ~1.8 % on the
// H200: fixed costs and wave quantization do not scale). It must be called "slower" in >= 95 %.
// Prints the rates; with $OUT set writes protocol_bench.json there.
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>

#include "CLI/CLI.hpp"
#include "compiler/compiler.h"
#include "gemm_timing.h"
#include "nlohmann/json.hpp"
#include "paired_verdict.h"
#include "workloads/warp_gemm_space.h"

namespace gq = cake::gpuqueue;
namespace ev = cake::evidence;

int main(int argc, char** argv) {
  CLI::App app{"cake-protocol-bench: A/A false-positive rate and planted-slowdown detection"};
  int comparisons = 100, pairs = 20, m = 2048, n = 2048, k = 2048, launches = 100;
  double floor = 0.02, planted = 0.03;
  app.add_option("--comparisons", comparisons, "Paired comparisons per experiment (default 100)");
  app.add_option("--pairs", pairs, "A/B pairs per comparison (default 20)");
  app.add_option("--floor", floor, "Practical-significance floor (default 0.02)");
  app.add_option("--planted", planted, "Extra work of the planted variant (default 0.03)");
  app.add_option("--launches", launches, "Launches per sample (default 100)");
  app.add_option("-m", m, "M (default 2048)");
  app.add_option("-n", n, "N (default 2048)");
  app.add_option("-k", k, "K (default 2048)");
  CLI11_PARSE(app, argc, argv);

  auto g = gq::OpenGpu();
  if (!g.ok()) {
    std::fprintf(stderr, "cake-protocol-bench: %s\n", std::string(g.status().message()).c_str());
    return 1;
  }
  cake::compiler::ParsedModule parsed;
  parsed.module = cake::workloads::MakeWarpGemm({});
  cake::compiler::CompileOptions opts;
  opts.store_root = (std::filesystem::temp_directory_path() / "cake_bench_store").string();
  auto compiled = cake::compiler::Compile(parsed, **cake::compiler::TargetByName("sm_90"), opts);
  if (!compiled.ok() || !compiled->receipt ||
      compiled->receipt->outcome() != cake::report::LoweringReceipt::PASS) {
    std::fprintf(stderr, "cake-protocol-bench: compile failed\n");
    return 1;
  }
  cake::worker::KernelRef ref;
  ref.set_candidate("bundled");
  *ref.mutable_receipt() = *compiled->receipt;
  auto a = gq::LoadKernel(*g, ref);
  auto b = gq::LoadKernel(*g, ref);  // a second module: a separate load, as for two candidates
  if (!a.ok() || !b.ok()) {
    std::fprintf(stderr, "cake-protocol-bench: cannot load the kernel\n");
    return 1;
  }
  cake::contract::GemmShape base;
  base.set_m(m);
  base.set_n(n);
  base.set_k(k);
  const int extra = static_cast<int>(launches * planted + 0.5);
  gq::RowBuffers rb_base;
  if (!gq::PrepareRow(*g, base, true, 1, &rb_base).ok()) {
    std::fprintf(stderr, "cake-protocol-bench: cannot allocate inputs\n");
    return 1;
  }
  CUevent start, stop;
  g->driver->EventCreate(&start, CU_EVENT_DEFAULT);
  g->driver->EventCreate(&stop, CU_EVENT_DEFAULT);

  nlohmann::json doc;
  doc["device"] = g->ctx->name();
  doc["schedule"] = cake::workloads::WarpGemmParams{}.Describe();
  doc["shape"] = {m, n, k};
  doc["launches_per_sample"] = launches;
  doc["planted_extra_launches"] = extra;
  doc["pairs"] = pairs;
  doc["floor"] = floor;
  doc["rule"] = "per-pair ratio, median with sign-test ~95% interval, practical floor";
  for (const bool plant : {false, true}) {
    std::map<std::string, int> counts;
    std::vector<double> medians;
    for (int c = 0; c < comparisons; ++c) {
      auto rt = gq::TimePairs(*g, **a, rb_base, base, **b, rb_base, base, pairs, 3, launches, start,
                              stop, plant ? extra : 0);
      if (!rt.ok()) {
        std::fprintf(stderr, "timing failed: %s\n", std::string(rt.status().message()).c_str());
        return 1;
      }
      gq::JudgeRow(&*rt, floor);
      ++counts[ev::TimingVerdict_Name(rt->verdict())];
      medians.push_back(rt->median_ratio());
    }
    const std::string name = plant ? "planted_slowdown" : "a_a";
    nlohmann::json e;
    for (const auto& [v, c] : counts) e["verdicts"][v] = c;
    e["median_ratios"] = medians;
    const double decisive = 100.0 * (counts["FASTER"] + counts["SLOWER"]) / comparisons;
    const double slower = 100.0 * counts["SLOWER"] / comparisons;
    e["decisive_percent"] = decisive;
    e["slower_percent"] = slower;
    doc[name] = e;
    std::sort(medians.begin(), medians.end());
    std::printf(
        "%-17s %4d comparisons: FASTER %3d  SLOWER %3d  TIE %3d  AMBIGUOUS %3d | median "
        "ratio p50 %.4f [p5 %.4f, p95 %.4f] | %s %.1f %%\n",
        name.c_str(), comparisons, counts["FASTER"], counts["SLOWER"], counts["TIE"],
        counts["AMBIGUOUS"], medians[medians.size() / 2], medians[medians.size() / 20],
        medians[medians.size() * 19 / 20], plant ? "detected slower" : "called different",
        plant ? slower : decisive);
  }
  const bool aa_ok = doc["a_a"]["decisive_percent"].get<double>() <= 1.0;
  const bool plant_ok = doc["planted_slowdown"]["slower_percent"].get<double>() >= 95.0;
  doc["a_a_target_met"] = aa_ok;
  doc["planted_target_met"] = plant_ok;
  std::printf("targets: A/A decisive <= 1 %%: %s; planted slower >= 95 %%: %s\n",
              aa_ok ? "met" : "NOT met", plant_ok ? "met" : "NOT met");
  if (const char* out = std::getenv("OUT"))
    std::ofstream(std::filesystem::path(out) / "protocol_bench.json") << doc.dump(1) << "\n";
  return aa_ok && plant_ok ? 0 : 3;
}
