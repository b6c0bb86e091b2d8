// cake-protocol-bench: checks the paired timing protocol on a real device, side by side in one
// run, through the same MeasureRunner the measure jobs use (fresh inputs per launch, output
// fingerprints, blocking kernel, cold L2, NVML throttle filter, noise-based stopping).
//   A/A: the same schedule loaded twice as incumbent and challenger, N comparisons; the protocol
//        must call "faster" or "slower" in <= 1 % of them.
//   Planted slowdown: the challenger does 3 % more work: each of its samples runs 3 % more
//        launches (each on its own fresh inputs) counted as the same number (a longer K or more
//        output rows was measured to cost only ~1.8 % on the H200: fixed costs and wave
//        quantization do not scale). It must be called "slower" in >= 95 %.
// Prints the rates; with $OUT set writes protocol_bench.json there, raw samples included (the
// CPU tests replay them as fixtures). Exit 0 when both targets are met, 3 when not, 1 on error.
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "CLI/CLI.hpp"
#include "compiler/compiler.h"
#include "cupti_spans.h"
#include "device_session.h"
#include "device_workload.h"
#include "google/protobuf/text_format.h"
#include "gpuqueue/nvml.h"
#include "measure_runner.h"
#include "nlohmann/json.hpp"
#include "protocol/paired_verdict.h"
#include "workloads/workload.h"

namespace gq = cake::gpuqueue;
namespace ev = cake::evidence;

namespace {

int Die(const std::string& why) {
  std::fprintf(stderr, "cake-protocol-bench: %s\n", why.c_str());
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"cake-protocol-bench: A/A false-positive rate and planted-slowdown detection"};
  int comparisons = 100, min_pairs = 20, max_pairs = 200, launches = 100;
  double floor = 0.02, planted = 0.03, min_gpu_seconds = 0.5;
  std::string config_name = "eager/cold";
  const char* src = std::getenv("CAKE_SOURCE_DIR");
  const std::filesystem::path root = src ? src : ".";
  std::string contract_file = (root / "contracts/gemm_bf16.textproto").string();
  std::string schedule_file = (root / "examples/gemm_bf16.textproto").string();
  std::string shape_text = "gemm_bf16 { m: 2048 n: 2048 k: 2048 }";
  app.add_option("--comparisons", comparisons, "Paired comparisons per experiment (default 100)");
  app.add_option("--pairs", min_pairs, "Minimum A/B pairs per comparison (default 20)");
  app.add_option("--max-pairs", max_pairs, "Maximum A/B pairs per comparison (default 200)");
  app.add_option("--min-gpu-seconds", min_gpu_seconds, "Stopping rule's minimum GPU time (0.5)");
  app.add_option("--floor", floor, "Practical-significance floor (default 0.02)");
  app.add_option("--planted", planted, "Extra work of the planted variant (default 0.03)");
  app.add_option("--launches", launches, "Launches per sample, each on fresh inputs (default 100)");
  app.add_option("--config", config_name, "mode/cache: eager|graph / cold|warm (eager/cold)");
  app.add_option("--contract", contract_file, "Contract (its workload and tolerance)");
  app.add_option("--schedule", schedule_file, "Schedule timed against itself");
  app.add_option("--shape", shape_text,
                 "Problem, as cake.contract.ProblemShape text (gemm_bf16 2048^3)");
  CLI11_PARSE(app, argc, argv);

  cake::contract::Contract contract;
  {
    std::ifstream in(contract_file);
    std::stringstream text;
    text << in.rdbuf();
    if (!google::protobuf::TextFormat::ParseFromString(text.str(), &contract))
      return Die("cannot parse " + contract_file);
  }
  cake::contract::ProblemShape shape;
  if (!google::protobuf::TextFormat::ParseFromString(shape_text, &shape))
    return Die("cannot parse --shape " + shape_text);
  const gq::DeviceWorkload* workload = gq::FindDeviceWorkload(contract.operation());
  if (workload == nullptr) return Die("no device workload for " + contract.operation());

  cake::contract::MeasurementProtocol proto;
  proto.add_configurations(config_name);
  auto configs = cake::protocol::TimingConfigs(proto);
  if (!configs.ok()) return Die(std::string(configs.status().message()));
  auto g = gq::OpenGpu();
  if (!g.ok()) return Die(std::string(g.status().message()));
  auto parsed = cake::compiler::ParseModuleFile(schedule_file);
  if (!parsed.ok()) return Die(std::string(parsed.status().message()));
  cake::compiler::CompileOptions opts;
  opts.store_root = (std::filesystem::temp_directory_path() / "cake_bench_store").string();
  auto compiled = cake::compiler::Compile(*parsed, **cake::compiler::TargetByName("sm_90"), opts);
  if (!compiled.ok() || !compiled->receipt ||
      compiled->receipt->outcome() != cake::report::LoweringReceipt::PASS)
    return Die("compile failed");
  cake::worker::KernelRef ref;
  ref.set_candidate("bundled");
  *ref.mutable_receipt() = *compiled->receipt;
  auto a = gq::LoadKernel(*g, ref);
  auto b = gq::LoadKernel(*g, ref);  // a second module: a separate load, as for two candidates
  if (!a.ok() || !b.ok()) return Die("cannot load the kernel");

  auto nvml = gq::Nvml::Load();
  auto cupti = gq::CuptiSpans::Start();
  gq::MeasureOptions o;
  o.min_launches = launches;
  o.stopping.min_pairs = min_pairs;
  o.stopping.max_pairs = std::max(max_pairs, min_pairs);
  o.stopping.min_gpu_seconds = min_gpu_seconds;
  auto runner = gq::MeasureRunner::Create(*g, o, nvml.ok() ? nvml->get() : nullptr,
                                          cupti.ok() ? cupti->get() : nullptr);
  if (!runner.ok()) return Die(std::string(runner.status().message()));
  const int extra = static_cast<int>(launches * planted + 0.5);

  nlohmann::json doc;
  const std::time_t now = std::time(nullptr);
  char date[32];
  std::strftime(date, sizeof(date), "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&now));
  doc["date"] = date;
  doc["commit"] = std::getenv("CAKE_COMMIT") ? std::getenv("CAKE_COMMIT") : "unknown";
  doc["device"] = g->ctx->name();
  doc["schedule"] = schedule_file;
  doc["shape"] = shape_text;
  doc["configuration"] = config_name;
  doc["launches_per_sample"] = launches;
  doc["planted_extra_launches"] = extra;
  doc["floor"] = floor;
  doc["stopping_rule"] = cake::protocol::Describe(o.stopping);
  doc["default_sm_mhz"] = (*runner)->default_sm_mhz();
  doc["cupti"] = cupti.ok() ? "kernel spans recorded" : std::string(cupti.status().message());
  doc["rule"] =
      "per-pair ratio of kept pairs, median with sign-test ~95% interval, practical floor";
  uint64_t seed = 0x5eedbe7c;
  for (const bool plant : {false, true}) {
    std::map<std::string, int> counts, span_counts;
    std::vector<double> medians;
    nlohmann::json samples = nlohmann::json::array();
    int total_pairs = 0, discarded = 0;
    for (int c = 0; c < comparisons; ++c) {
      gq::Arm inc{a->get()}, cha{b->get(), plant ? extra : 0};
      auto rt = (*runner)->TimeRow(*workload, contract, shape, (*configs)[0], inc, cha, ++seed);
      if (!rt.ok()) return Die(std::string(rt.status().message()));
      cake::protocol::JudgeRow(&*rt, floor);
      ++counts[ev::TimingVerdict_Name(rt->verdict())];
      ++span_counts[ev::TimingVerdict_Name(rt->span_verdict())];
      medians.push_back(rt->median_ratio());
      total_pairs += rt->incumbent_us_size();
      discarded += rt->discarded_pairs();
      samples.push_back({{"incumbent_us", rt->incumbent_us()},
                         {"challenger_us", rt->challenger_us()},
                         {"challenger_first", rt->challenger_first()},
                         {"discarded", rt->discarded()},
                         {"incumbent_span_us", rt->incumbent_span_us()},
                         {"challenger_span_us", rt->challenger_span_us()},
                         {"incumbent_sm_mhz", rt->incumbent_sm_mhz()},
                         {"challenger_sm_mhz", rt->challenger_sm_mhz()},
                         {"stop_reason", rt->stop_reason()},
                         {"verdict", ev::TimingVerdict_Name(rt->verdict())},
                         {"median_ratio", rt->median_ratio()}});
    }
    const std::string name = plant ? "planted_slowdown" : "a_a";
    nlohmann::json e;
    for (const auto& [v, c] : counts) e["verdicts"][v] = c;
    for (const auto& [v, c] : span_counts) e["span_verdicts"][v] = c;
    e["median_ratios"] = medians;
    e["comparisons"] = samples;
    e["pairs_total"] = total_pairs;
    e["pairs_discarded"] = discarded;
    const double decisive = 100.0 * (counts["FASTER"] + counts["SLOWER"]) / comparisons;
    const double slower = 100.0 * counts["SLOWER"] / comparisons;
    e["decisive_percent"] = decisive;
    e["slower_percent"] = slower;
    doc[name] = e;
    std::sort(medians.begin(), medians.end());
    std::printf(
        "%-17s %4d comparisons (%d pairs, %d discarded): FASTER %3d  SLOWER %3d  TIE %3d  "
        "AMBIGUOUS %3d | median ratio p50 %.4f [p5 %.4f, p95 %.4f] | %s %.1f %%\n",
        name.c_str(), comparisons, total_pairs, discarded, counts["FASTER"], counts["SLOWER"],
        counts["TIE"], counts["AMBIGUOUS"], medians[medians.size() / 2],
        medians[medians.size() / 20], medians[medians.size() * 19 / 20],
        plant ? "detected slower" : "called different", plant ? slower : decisive);
  }
  for (int arm = 0; arm < 2; ++arm) {
    const auto& chk = (*runner)->output_check(arm);
    doc["output_checks"].push_back({{"arm", chk.arm()},
                                    {"launches_checked", chk.launches_checked()},
                                    {"mismatches", chk.mismatches()},
                                    {"inputs_modified", chk.inputs_modified()}});
    std::printf("timed outputs (%s): %lld launches checked, %lld mismatches\n", chk.arm().c_str(),
                static_cast<long long>(chk.launches_checked()),
                static_cast<long long>(chk.mismatches()));
  }
  if (!(*runner)->notes().empty()) std::printf("notes: %s\n", (*runner)->notes().c_str());
  doc["notes"] = (*runner)->notes();
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
