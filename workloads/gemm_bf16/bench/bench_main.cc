// cake-gemm-bench: the gemm_bf16 performance table, measured side by side in one run on one
// device. It measures the project's own mma.sync BF16 issue-rate ceiling (mma_ceiling.cu),
// cuBLASLt BF16 (the peer) and every schedule of the staged warp-GEMM family (space.h) lowered
// for sm_90 by the compiler, on a shape table; each schedule's output must agree with cuBLASLt's
// (same inputs, fresh random BF16 per shape, output poisoned before the check launch) before it is
// timed. Timing: every contender (cuBLASLt and each agreeing schedule) is timed in rounds, its
// order rotated each round, each sample a block of back-to-back launches between two events;
// the per-launch median is reported with its spread. Prints each row's best schedule, its ratio
// to the ceiling and to cuBLASLt, and the worst row; writes JSON with --json.
// Exit: 0 when the targets are met, 3 when measured and not met, 1 on error, 2 on bad usage.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <future>
#include <random>
#include <thread>

#include "CLI/CLI.hpp"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "base/files.h"
#include "compiler/compiler.h"
#include "cublaslt_peer.h"
#include "google/protobuf/text_format.h"
#include "gpuqueue/nvml.h"
#include "gpuqueue/worker/cuda_driver.h"
#include "gpuqueue/worker/helper_kernels.h"
#include "gpuqueue/worker/kernel.h"
#include "nlohmann/json.hpp"
#include "workloads/gemm_bf16/space.h"
#include "workloads/numeric.h"

namespace cake::gpuqueue {
extern const unsigned char kMmaCeilingFatbin[];
extern const size_t kMmaCeilingFatbin_size;
}  // namespace cake::gpuqueue

namespace {

namespace fs = std::filesystem;
namespace gq = cake::gpuqueue;
namespace gemm = cake::workloads::gemm_bf16;
using nlohmann::json;

struct Shape {
  int m, n, k;
  std::string Name() const { return absl::StrCat(m, "x", n, "x", k); }
  double Flops() const { return 2.0 * m * n * k; }
};

// The table: 8192^3 first (the headline row), then 4096^3, 2048^3, a short K and skinny M.
const char* kDefaultShapes =
    "8192x8192x8192,4096x4096x4096,2048x2048x2048,8192x8192x1024,16x8192x8192,64x8192x8192,"
    "128x8192x8192";

absl::StatusOr<std::vector<Shape>> ParseShapes(const std::string& text) {
  std::vector<Shape> out;
  for (absl::string_view item : absl::StrSplit(text, ',', absl::SkipEmpty())) {
    std::vector<absl::string_view> d = absl::StrSplit(item, 'x');
    Shape s{};
    if (d.size() != 3 || !absl::SimpleAtoi(d[0], &s.m) || !absl::SimpleAtoi(d[1], &s.n) ||
        !absl::SimpleAtoi(d[2], &s.k) || s.m < 1 || s.n < 1 || s.k < 8 || s.k % 8 != 0 ||
        int64_t{s.m} * s.k > (int64_t{1} << 31) || int64_t{s.n} * s.k > (int64_t{1} << 31) ||
        int64_t{s.m} * s.n > (int64_t{1} << 31))
      return absl::InvalidArgumentError(
          absl::StrCat("shape '", item, "': want MxNxK, K a multiple of 8, each matrix < 2^31"));
    out.push_back(s);
  }
  if (out.empty()) return absl::InvalidArgumentError("no shapes");
  return out;
}

struct Timing {
  double median_ms = 0, min_ms = 0, max_ms = 0;
  int samples = 0, launches_per_sample = 0;
};

Timing Summarize(std::vector<double> per_launch_ms, int reps) {
  std::sort(per_launch_ms.begin(), per_launch_ms.end());
  Timing t;
  t.samples = static_cast<int>(per_launch_ms.size());
  t.launches_per_sample = reps;
  t.min_ms = per_launch_ms.front();
  t.max_ms = per_launch_ms.back();
  const size_t n = per_launch_ms.size();
  t.median_ms =
      n % 2 ? per_launch_ms[n / 2] : 0.5 * (per_launch_ms[n / 2 - 1] + per_launch_ms[n / 2]);
  return t;
}

// Events around `reps` launches of `launch`; milliseconds per launch.
absl::StatusOr<double> TimeBlock(const gq::CudaDriver& d, CUstream s, CUevent e0, CUevent e1,
                                 int reps, const std::function<absl::Status()>& launch) {
  if (auto st = d.Check(d.EventRecord(e0, s), "cuEventRecord"); !st.ok()) return st;
  for (int i = 0; i < reps; ++i)
    if (auto st = launch(); !st.ok()) return st;
  if (auto st = d.Check(d.EventRecord(e1, s), "cuEventRecord"); !st.ok()) return st;
  if (auto st = d.Check(d.EventSynchronize(e1), "cuEventSynchronize"); !st.ok()) return st;
  float ms = 0;
  if (auto st = d.Check(d.EventElapsedTime(&ms, e0, e1), "cuEventElapsedTime"); !st.ok()) return st;
  return static_cast<double>(ms) / reps;
}

struct Ceiling {
  double tflops = 0;
  std::string kernel;
  int warps_per_sm = 0;
  double sm_mhz = 0;  // the SM clock during the best configuration's blocks (median); 0 = none
  json runs = json::array();
  // The rate with operands fed by ldmatrix as the family's 64x64 warp tiles feed them.
  double ldmatrix_fed_tflops = 0, ldmatrix_fed_sm_mhz = 0;
};

// The median of `v` (0 for none).
double Median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2] : 0.5 * (v[v.size() / 2 - 1] + v[v.size() / 2]);
}

// Launches of `launch` that fill a timed block of about `block_ms`: one warm-up launch, then one
// timed launch to size the block.
absl::StatusOr<int> LaunchesPerBlock(const gq::CudaDriver& d, CUstream s, CUevent e0, CUevent e1,
                                     const std::function<absl::Status()>& launch, double block_ms) {
  if (auto st = launch(); !st.ok()) return st;
  auto one = TimeBlock(d, s, e0, e1, 1, launch);
  if (!one.ok()) return one.status();
  return std::clamp(static_cast<int>(std::ceil(block_ms / std::max(*one, 1e-3))), 1, 2000);
}

// NVML's SM clock, read every 2 ms on a helper thread while a timed block runs: the clock the
// block ran at (one read after the block would catch a GPU already idle, its clock rising).
class ClockDuring {
 public:
  explicit ClockDuring(const gq::Nvml* nvml) : nvml_(nvml) {
    if (nvml_ != nullptr) poller_ = std::thread([this] { Poll(); });
  }
  ~ClockDuring() { Stop(); }
  ClockDuring(const ClockDuring&) = delete;
  ClockDuring& operator=(const ClockDuring&) = delete;
  // Stops reading; the median of the reads (0 where NVML gave none).
  double Stop() {
    stop_ = true;
    if (poller_.joinable()) poller_.join();
    return reads_.empty() ? 0 : Median(reads_);
  }

 private:
  void Poll() {
    while (!stop_) {
      const float mhz = nvml_->Read(0).sm_mhz;
      if (std::isfinite(mhz)) reads_.push_back(mhz);  // only this thread, until the join
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
  }
  const gq::Nvml* nvml_;
  std::atomic<bool> stop_ = false;
  std::vector<double> reads_;
  std::thread poller_;
};

// One timed block (TimeBlock) and the SM clock during it (ClockDuring).
absl::StatusOr<double> TimeBlockAndClock(const gq::CudaDriver& d, CUstream s, CUevent e0,
                                         CUevent e1, int reps,
                                         const std::function<absl::Status()>& launch,
                                         const gq::Nvml* nvml, std::vector<double>& mhz) {
  ClockDuring clock(nvml);
  auto t = TimeBlock(d, s, e0, e1, reps, launch);
  const double during = clock.Stop();
  if (t.ok() && during > 0) mhz.push_back(during);
  return t;
}

// One ceiling kernel's configuration: a warm-up, then the median of 5 timed blocks of about
// `block_ms` each (as the GEMMs are timed, so both run under the same sustained power), of
// `mmas` m16n8k16 mma.sync per launch, with the SM clock during each block.
struct KernelRate {
  double median_ms = 0, tflops = 0, sm_mhz = 0;
};
absl::StatusOr<KernelRate> TimeMmaKernel(const gq::CudaDriver& d, CUstream s, CUevent e0,
                                         CUevent e1, CUfunction f, unsigned grid, int threads,
                                         void** args, double mmas, double block_ms,
                                         const gq::Nvml* nvml) {
  auto launch = [&]() {
    return d.Check(d.LaunchKernel(f, grid, 1, 1, unsigned(threads), 1, 1, 0, s, args, nullptr),
                   "cuLaunchKernel (ceiling)");
  };
  auto reps = LaunchesPerBlock(d, s, e0, e1, launch, block_ms);
  if (!reps.ok()) return reps.status();
  std::vector<double> ms, mhz;
  for (int r = 0; r < 5; ++r) {
    auto t = TimeBlockAndClock(d, s, e0, e1, *reps, launch, nvml, mhz);
    if (!t.ok()) return t.status();
    ms.push_back(*t);
  }
  KernelRate rate;
  rate.median_ms = Summarize(ms, *reps).median_ms;
  rate.tflops = mmas * 4096.0 / (rate.median_ms * 1e-3) / 1e12;
  rate.sm_mhz = Median(mhz);
  return rate;
}

// The best rate over chain counts and occupancies; each configuration the median of 5 blocks.
absl::StatusOr<Ceiling> MeasureCeiling(const gq::CudaDriver& d, CUstream s, CUevent e0, CUevent e1,
                                       int sm_count, double block_ms, const gq::Nvml* nvml) {
  CUmodule module = nullptr;
  if (auto st = d.Check(d.ModuleLoadData(&module, gq::kMmaCeilingFatbin), "cuModuleLoadData");
      !st.ok())
    return st;
  Ceiling best;
  const int threads = 256;
  const int max_blocks_per_sm = 8;
  auto out = gq::DeviceBuffer::Allocate(d, size_t(sm_count) * max_blocks_per_sm * threads * 4);
  if (!out.ok()) return out.status();
  for (int chains : {4, 8, 16}) {
    const std::string name = absl::StrCat("cake_mma_ceiling_", chains);
    CUfunction f = nullptr;
    if (auto st = d.Check(d.ModuleGetFunction(&f, module, name.c_str()), name.c_str()); !st.ok())
      return st;
    for (int blocks_per_sm : {1, 2, 4, 8}) {
      const unsigned grid = unsigned(sm_count * blocks_per_sm);
      int iters = 1 << 14;
      CUdeviceptr out_ptr = out->ptr();
      void* args[] = {&out_ptr, &iters};
      const double mmas = double(grid) * (threads / 32) * double(iters) * chains;
      auto rate = TimeMmaKernel(d, s, e0, e1, f, grid, threads, args, mmas, block_ms, nvml);
      if (!rate.ok()) return rate.status();
      best.runs.push_back({{"kernel", name},
                           {"warps_per_sm", blocks_per_sm * threads / 32},
                           {"median_ms", rate->median_ms},
                           {"tflops", rate->tflops},
                           {"sm_mhz_median", rate->sm_mhz}});
      if (rate->tflops > best.tflops) {
        best.tflops = rate->tflops;
        best.kernel = name;
        best.warps_per_sm = blocks_per_sm * threads / 32;
        best.sm_mhz = rate->sm_mhz;
      }
    }
  }
  // The same rate fed by ldmatrix at the family's 64x64 warp tile (mma_ceiling.cu): one CTA
  // of eight warps per SM, 128 mma per warp per iteration. Reported beside the ceiling, which
  // stays the reference of the targets.
  CUfunction fed = nullptr;
  if (auto st = d.Check(d.ModuleGetFunction(&fed, module, "cake_mma_ldmatrix_ceiling"),
                        "cake_mma_ldmatrix_ceiling");
      !st.ok())
    return st;
  int iters = 1 << 12;
  CUdeviceptr out_ptr = out->ptr();
  void* args[] = {&out_ptr, &iters};
  const unsigned grid = unsigned(sm_count);
  auto rate = TimeMmaKernel(d, s, e0, e1, fed, grid, threads, args,
                            double(grid) * (threads / 32) * double(iters) * 128, block_ms, nvml);
  if (!rate.ok()) return rate.status();
  best.ldmatrix_fed_tflops = rate->tflops;
  best.ldmatrix_fed_sm_mhz = rate->sm_mhz;
  d.ModuleUnload(module);
  return best;
}

struct Candidate {
  gemm::WarpGemmParams params;
  std::string describe;
  absl::Status status = absl::OkStatus();  // why it is out of the table
  cake::report::LoweringReceipt receipt;
  std::unique_ptr<gq::Kernel> kernel;
};

// The family's points, then the points that fit sm_90's shared memory only (marked so in every
// row that names them), whose description contains `only` (all of them when it is empty), or
// the one whose description is exactly `only` where there is one (a profiler's single kernel).
std::vector<Candidate> FamilyCandidates(const std::string& only) {
  std::vector<Candidate> out;
  auto add = [&](const gemm::WarpGemmParams& p, const char* mark) {
    std::string describe = absl::StrCat(p.Describe(), mark);
    if (!only.empty() && !absl::StrContains(describe, only)) return;
    Candidate c;
    c.params = p;
    c.describe = std::move(describe);
    out.push_back(std::move(c));
  };
  for (const gemm::WarpGemmParams& p : gemm::WarpGemmFamily()) add(p, "");
  for (const gemm::WarpGemmParams& p : gemm::WarpGemmSm90OnlyPoints()) add(p, " sm90-only");
  for (Candidate& c : out) {
    if (c.describe != only) continue;
    std::vector<Candidate> exact;
    exact.push_back(std::move(c));
    return exact;
  }
  return out;
}

void CompileAll(std::vector<Candidate>& cands, const std::string& store) {
  auto target = cake::compiler::TargetByName("sm_90");
  const unsigned width = std::max(1u, std::thread::hardware_concurrency());
  std::vector<std::future<void>> running;
  for (Candidate& c : cands) {
    running.push_back(std::async(std::launch::async, [&c, &target, &store]() {
      if (!target.ok()) {
        c.status = target.status();
        return;
      }
      cake::compiler::ParsedModule parsed;
      parsed.module = gemm::MakeWarpGemm(c.params);
      parsed.file = c.describe;
      cake::compiler::CompileOptions opts;
      opts.store_root = store;
      auto compiled = cake::compiler::Compile(parsed, **target, opts);
      if (!compiled.ok()) {
        c.status = compiled.status();
      } else if (!compiled->receipt) {
        // The first error or unknown the analysis reported, so the reason is on the line.
        std::string why = cake::report::Verdict_Name(compiled->analysis.verdict());
        for (const cake::report::Diagnostic& dg : compiled->analysis.diagnostics())
          if (dg.severity() == cake::report::ERROR || dg.severity() == cake::report::UNKNOWN) {
            why = absl::StrCat(cake::report::DiagId_Name(dg.id()), ": ", dg.message());
            break;
          }
        c.status = absl::FailedPreconditionError(absl::StrCat("not verified for sm_90: ", why));
      } else if (compiled->receipt->outcome() != cake::report::LoweringReceipt::PASS) {
        const auto& r = *compiled->receipt;
        c.status = absl::FailedPreconditionError(
            absl::StrCat("lowered for sm_90, but its receipt failed",
                         r.failures_size() > 0
                             ? absl::StrCat(": ", cake::report::DiagId_Name(r.failures(0).id()),
                                            ": ", r.failures(0).message())
                             : std::string()));
      } else {
        c.receipt = *compiled->receipt;
      }
    }));
    if (running.size() >= width) {
      for (auto& f : running) f.wait();
      running.clear();
    }
  }
  for (auto& f : running) f.wait();
}

// Agreement with cuBLASLt on the same inputs: per element |x - ref| <= 2^-6 (|ref| + rms(ref)).
// Both accumulate in FP32 and round to BF16, so they differ by about one BF16 ulp; a wrong tile,
// a stale stage or an unwritten (poisoned, NaN) element is far outside.
struct Agreement {
  bool agrees = false;
  int64_t outside = 0, non_finite = 0;
  double max_abs_diff = 0, ref_rms = 0;
};

Agreement Compare(const std::vector<uint16_t>& out, const std::vector<uint16_t>& ref) {
  Agreement a;
  double sumsq = 0;
  for (uint16_t r : ref) {
    const double v = cake::workloads::Bf16ToFloat(r);
    sumsq += v * v;
  }
  a.ref_rms = std::sqrt(sumsq / double(std::max<size_t>(1, ref.size())));
  for (size_t i = 0; i < out.size(); ++i) {
    const double x = cake::workloads::Bf16ToFloat(out[i]);
    const double r = cake::workloads::Bf16ToFloat(ref[i]);
    if (!std::isfinite(x)) {
      ++a.non_finite;
      continue;
    }
    const double diff = std::fabs(x - r);
    a.max_abs_diff = std::max(a.max_abs_diff, diff);
    if (diff > (std::fabs(r) + a.ref_rms) / 64.0) ++a.outside;
  }
  a.agrees = a.outside == 0 && a.non_finite == 0;
  return a;
}

int Fail(const std::string& why) {
  std::fprintf(stderr, "cake-gemm-bench: %s\n", why.c_str());
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{
      "cake-gemm-bench: mma.sync ceiling, cuBLASLt and the staged warp-GEMM family, side by side "
      "on one device (sm_90)\n\nExample:\n  cake-gemm-bench --json gemm_bench.json\n"
      "  cake-gemm-bench --shapes 4096x4096x4096 --rounds 7\n\n"
      "Exit codes: 0 targets met, 1 error, 2 usage, 3 measured and targets not met"};
  std::string shapes_text = kDefaultShapes, json_path,
              store = (fs::temp_directory_path() / "cake_gemm_bench_store").string();
  int rounds = 11;
  double block_ms = 20.0;
  double target_ceiling = 0.90, target_peer_headline = 0.75, target_peer_rows = 0.60;
  app.add_option("--shapes", shapes_text, "Comma-separated MxNxK (default: the issue's table)");
  app.add_option("--rounds", rounds, "Timed samples per contender and shape (default 11)")
      ->check(CLI::Range(3, 101));
  app.add_option(
         "--block-ms", block_ms,
         "GPU time per sample of the ceiling and of each GEMM, in launches of ~this length (20)")
      ->check(CLI::Range(1.0, 500.0));
  app.add_option("--json", json_path, "Write the full results as JSON here");
  app.add_option("--store", store, "Artifact store for the compiled schedules");
  app.add_option("--target-ceiling", target_ceiling, "Headline row vs the ceiling (0.90)");
  app.add_option("--target-peer", target_peer_headline, "Headline row vs cuBLASLt (0.75)");
  app.add_option("--target-rows", target_peer_rows, "Every row vs cuBLASLt (0.60)");
  std::string only;
  app.add_option("--only", only,
                 "Only the family's schedules whose description contains this text (the one "
                 "whose description is exactly this text, where there is one), e.g. "
                 "\"128x256x64 w2x4 s2\" (for a profiler)");
  std::string write_schedules;
  app.add_option(
      "--write-schedules", write_schedules,
      "Write each selected schedule as DIR/<description>.textproto (for cakec) and exit");
  bool compile_only = false;
  app.add_flag(
      "--compile-only", compile_only,
      "Compile the family for sm_90 and print registers, spills and shared bytes (no GPU)");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int printed = app.exit(e);  // --help and --version print and return 0
    return printed == 0 ? 0 : 2;
  }
  if (FamilyCandidates(only).empty()) {
    std::fprintf(stderr, "cake-gemm-bench: no schedule of the family matches --only \"%s\"\n",
                 only.c_str());
    return 2;
  }
  auto shapes = ParseShapes(shapes_text);
  if (!shapes.ok()) {
    std::fprintf(stderr, "cake-gemm-bench: %s\n", std::string(shapes.status().message()).c_str());
    return 2;
  }

  if (!write_schedules.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(write_schedules, ec);
    for (const Candidate& c : FamilyCandidates(only)) {
      std::string file = c.describe;
      for (char& ch : file)
        if (ch == ' ') ch = '_';
      std::string text;
      google::protobuf::TextFormat::PrintToString(gemm::MakeWarpGemm(c.params), &text);
      const std::filesystem::path path =
          std::filesystem::path(write_schedules) / (file + ".textproto");
      std::ofstream out(path, std::ios::binary);
      out << "# " << c.describe << " (cake-gemm-bench --write-schedules)\n" << text;
      if (!out) {
        std::fprintf(stderr, "cake-gemm-bench: cannot write %s\n", path.c_str());
        return 1;
      }
      std::printf("%s\n", path.c_str());
    }
    return 0;
  }
  if (compile_only) {
    std::vector<Candidate> cands = FamilyCandidates(only);
    CompileAll(cands, store);
    int failed = 0;
    for (const Candidate& c : cands) {
      if (!c.status.ok()) {
        ++failed;
        std::printf("%-46s %s\n", c.describe.c_str(), std::string(c.status.message()).c_str());
        continue;
      }
      const auto& r = c.receipt.resources();
      std::printf("%-46s registers %3d  spill stores %lld B  shared %lld B\n", c.describe.c_str(),
                  r.registers(), static_cast<long long>(r.spill_store_bytes()),
                  static_cast<long long>(r.shared_dynamic_bytes()));
    }
    return failed == 0 ? 0 : 1;
  }

  auto driver = gq::CudaDriver::Load();
  if (!driver.ok()) return Fail(std::string(driver.status().message()));
  const gq::CudaDriver& d = **driver;
  auto ctx = gq::ScopedContext::Open(d, 0);
  if (!ctx.ok()) return Fail(std::string(ctx.status().message()));
  if ((*ctx)->compute_major() != 9 || (*ctx)->compute_minor() != 0)
    return Fail("the schedules' executed lowering is sm_90; found " + (*ctx)->name());
  int sm_count = 0;
  d.DeviceGetAttribute(&sm_count, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, (*ctx)->device());
  CUstream s = nullptr;
  CUevent e0 = nullptr, e1 = nullptr;
  if (auto st = d.Check(d.StreamCreate(&s, CU_STREAM_DEFAULT), "cuStreamCreate"); !st.ok())
    return Fail(std::string(st.message()));
  d.EventCreate(&e0, CU_EVENT_DEFAULT);
  d.EventCreate(&e1, CU_EVENT_DEFAULT);
  auto nvml = gq::Nvml::Load();
  auto clock = [&]() -> json {
    if (!nvml.ok()) return nullptr;
    const auto r = (*nvml)->Read(0);
    return {{"sm_mhz", r.sm_mhz}, {"temperature_c", r.temperature_c}, {"power_w", r.power_w}};
  };

  json doc;
  doc["device"] = (*ctx)->name();
  doc["sm_count"] = sm_count;
  doc["driver_version"] = d.driver_version;
  doc["commit"] = std::getenv("CAKE_COMMIT") ? std::getenv("CAKE_COMMIT") : "unknown";
  const std::time_t now = std::time(nullptr);
  char date[32];
  std::strftime(date, sizeof(date), "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&now));
  doc["date"] = date;
  std::string command;
  for (int i = 0; i < argc; ++i) absl::StrAppend(&command, i ? " " : "", argv[i]);
  doc["command"] = command;
  doc["clock_before"] = clock();
  std::printf("device: %s, %d SMs; witness: sm_90 execution (no SM120 execution witness)\n",
              (*ctx)->name().c_str(), sm_count);

  auto ceiling =
      MeasureCeiling(d, s, e0, e1, sm_count, block_ms, nvml.ok() ? nvml->get() : nullptr);
  if (!ceiling.ok()) return Fail(std::string(ceiling.status().message()));
  std::printf("mma.sync m16n8k16 BF16 ceiling: %.1f TFLOP/s (%s, %d warps/SM; SM clock %.0f MHz)\n",
              ceiling->tflops, ceiling->kernel.c_str(), ceiling->warps_per_sm, ceiling->sm_mhz);
  std::printf(
      "mma.sync fed by ldmatrix (64x64 warp tiles, no global traffic): %.1f TFLOP/s = %.3f x the "
      "ceiling (SM clock %.0f MHz)\n",
      ceiling->ldmatrix_fed_tflops, ceiling->ldmatrix_fed_tflops / ceiling->tflops,
      ceiling->ldmatrix_fed_sm_mhz);
  doc["ceiling"] = {{"tflops", ceiling->tflops},
                    {"kernel", ceiling->kernel},
                    {"warps_per_sm", ceiling->warps_per_sm},
                    {"sm_mhz_median", ceiling->sm_mhz},
                    {"runs", ceiling->runs},
                    {"ldmatrix_fed",
                     {{"kernel", "cake_mma_ldmatrix_ceiling"},
                      {"tflops", ceiling->ldmatrix_fed_tflops},
                      {"x_ceiling", ceiling->ldmatrix_fed_tflops / ceiling->tflops},
                      {"sm_mhz_median", ceiling->ldmatrix_fed_sm_mhz}}}};

  auto peer = gemm::CublasLtPeer::Load(d, size_t{64} << 20);
  if (!peer.ok()) return Fail(std::string(peer.status().message()));
  doc["peer"] = (*peer)->Describe();
  std::printf("peer: %s\n", (*peer)->Describe().c_str());

  std::vector<Candidate> cands = FamilyCandidates(only);
  const auto compile_start = std::chrono::steady_clock::now();
  CompileAll(cands, store);
  std::printf(
      "compiled %zu schedules for sm_90 in %.1f s\n", cands.size(),
      std::chrono::duration<double>(std::chrono::steady_clock::now() - compile_start).count());
  json family = json::array();
  for (Candidate& c : cands) {
    if (c.status.ok()) {
      const std::string cubin =
          cake::base::ReadFileBytes(fs::path(c.receipt.artifact_dir()) / "kernel.cubin");
      auto k = gq::Kernel::Load(d, cubin, c.receipt);
      if (k.ok())
        c.kernel = std::move(*k);
      else
        c.status = k.status();
    }
    family.push_back({{"schedule", c.describe},
                      {"schedule_hash", c.receipt.schedule_hash()},
                      {"cubin_sha256", c.receipt.cubin_sha256()},
                      {"registers", c.receipt.resources().registers()},
                      {"spill_bytes", c.receipt.resources().spill_store_bytes()},
                      {"shared_bytes", c.receipt.resources().shared_dynamic_bytes()},
                      {"status", c.status.ok() ? "ok" : std::string(c.status.message())}});
    if (!c.status.ok())
      std::printf("  %-46s out: %s\n", c.describe.c_str(), std::string(c.status.message()).c_str());
  }
  doc["family"] = family;

  auto helpers = gq::HelperKernels::Load(d);
  if (!helpers.ok()) return Fail(std::string(helpers.status().message()));
  std::mt19937_64 seeds(std::random_device{}() ^ (uint64_t{std::random_device{}()} << 32));

  json rows = json::array();
  double worst_row_peer = 1e9, headline_ceiling = 0, headline_peer = 0;
  std::string worst_row;
  std::printf("\n%-16s %-46s %9s %9s %8s %8s %6s %9s\n", "shape", "best schedule", "TFLOP/s",
              "cuBLASLt", "x ceil", "x peer", "MHz", "x ceil/clk");
  for (const Shape& shape : *shapes) {
    const size_t a_elems = size_t(shape.m) * shape.k, b_elems = size_t(shape.n) * shape.k,
                 c_elems = size_t(shape.m) * shape.n;
    auto da = gq::DeviceBuffer::Allocate(d, a_elems * 2);
    auto db = gq::DeviceBuffer::Allocate(d, b_elems * 2);
    auto dref = gq::DeviceBuffer::Allocate(d, (c_elems * 2 + 3) / 4 * 4);
    auto dc = gq::DeviceBuffer::Allocate(d, (c_elems * 2 + 3) / 4 * 4);
    if (!da.ok() || !db.ok() || !dref.ok() || !dc.ok()) return Fail("device allocation failed");
    const uint64_t seed_a = seeds(), seed_b = seeds();
    absl::Status st = (*helpers)->FillUniformBf16(s, da->ptr(), a_elems, seed_a);
    if (st.ok()) st = (*helpers)->FillUniformBf16(s, db->ptr(), b_elems, seed_b);
    if (st.ok()) st = dref->Fill32(0xFFFFFFFFu);  // NaN in BF16: an unwritten element fails
    if (st.ok())
      st = (*peer)->Gemm(s, da->ptr(), db->ptr(), dref->ptr(), shape.m, shape.n, shape.k);
    if (st.ok()) st = d.Check(d.StreamSynchronize(s), "cuStreamSynchronize");
    if (!st.ok()) return Fail(absl::StrCat(shape.Name(), ": ", st.message()));
    std::vector<uint16_t> ref(c_elems), out(c_elems);
    if (auto dl = dref->Download(ref.data(), c_elems * 2); !dl.ok())
      return Fail(std::string(dl.message()));

    struct Contender {
      std::string name;
      std::function<absl::Status()> launch;
      std::vector<double> ms;
      int reps = 1;
      Agreement agreement;
      std::vector<double> mhz = {};  // the SM clock during each timed sample (ClockDuring)
    };
    std::vector<Contender> contenders;
    contenders.push_back({"cuBLASLt",
                          [&]() {
                            return (*peer)->Gemm(s, da->ptr(), db->ptr(), dc->ptr(), shape.m,
                                                 shape.n, shape.k);
                          },
                          {},
                          1,
                          {}});
    json checks = json::array();
    for (Candidate& c : cands) {
      if (!c.kernel) continue;
      gq::KernelArgs args;
      args.tensors = {{"A", da->ptr()}, {"B", db->ptr()}, {"C", dc->ptr()}};
      args.scalars = {{"M", shape.m}, {"N", shape.n}, {"K", shape.k}};
      const gq::Kernel* kernel = c.kernel.get();
      auto launch = [kernel, args, s]() { return kernel->Launch(s, args); };
      absl::Status ok = dc->Fill32(0xFFFFFFFFu);
      if (ok.ok()) ok = launch();
      if (ok.ok()) ok = d.Check(d.StreamSynchronize(s), "cuStreamSynchronize");
      if (ok.ok()) ok = dc->Download(out.data(), c_elems * 2);
      if (!ok.ok()) return Fail(absl::StrCat(c.describe, " on ", shape.Name(), ": ", ok.message()));
      const Agreement a = Compare(out, ref);
      checks.push_back({{"schedule", c.describe},
                        {"agrees", a.agrees},
                        {"outside", a.outside},
                        {"non_finite", a.non_finite},
                        {"max_abs_diff", a.max_abs_diff},
                        {"ref_rms", a.ref_rms}});
      if (!a.agrees) {
        std::printf(
            "  %s on %s disagrees with cuBLASLt (%lld outside, %lld non-finite): not timed\n",
            c.describe.c_str(), shape.Name().c_str(), static_cast<long long>(a.outside),
            static_cast<long long>(a.non_finite));
        continue;
      }
      contenders.push_back({c.describe, launch, {}, 1, a});
    }

    // Size each contender's block from one warm launch, then rounds in rotated order.
    for (Contender& c : contenders) {
      auto reps = LaunchesPerBlock(d, s, e0, e1, c.launch, block_ms);
      if (!reps.ok()) return Fail(std::string(reps.status().message()));
      c.reps = *reps;
    }
    for (int r = 0; r < rounds; ++r) {
      for (size_t i = 0; i < contenders.size(); ++i) {
        Contender& c = contenders[(i + size_t(r)) % contenders.size()];
        auto t = TimeBlockAndClock(d, s, e0, e1, c.reps, c.launch,
                                   nvml.ok() ? nvml->get() : nullptr, c.mhz);
        if (!t.ok()) return Fail(std::string(t.status().message()));
        c.ms.push_back(*t);
      }
    }
    const Timing peer_t = Summarize(contenders[0].ms, contenders[0].reps);
    const double peer_tflops = shape.Flops() / (peer_t.median_ms * 1e-3) / 1e12;
    json timings = json::array();
    std::string best;
    double best_tflops = 0, best_mhz = 0;
    for (const Contender& c : contenders) {
      const Timing t = Summarize(c.ms, c.reps);
      const double tflops = shape.Flops() / (t.median_ms * 1e-3) / 1e12;
      const double mhz = Median(c.mhz);
      timings.push_back({{"contender", c.name},
                         {"median_ms", t.median_ms},
                         {"min_ms", t.min_ms},
                         {"max_ms", t.max_ms},
                         {"samples", t.samples},
                         {"launches_per_sample", t.launches_per_sample},
                         {"tflops", tflops},
                         {"x_ceiling", tflops / ceiling->tflops},
                         {"x_peer", tflops / peer_tflops},
                         {"sm_mhz_median", mhz}});
      if (c.name != "cuBLASLt" && tflops > best_tflops) {
        best_tflops = tflops;
        best = c.name;
        best_mhz = mhz;
      }
    }
    const double x_ceiling = best_tflops / ceiling->tflops, x_peer = best_tflops / peer_tflops;
    // The same ratio per clock cycle: the GEMM and the ceiling kernel may run at different SM
    // clocks (power); 0 when NVML gave no clock. Reported beside, never instead of, x_ceiling.
    const double x_ceiling_per_clock =
        best_mhz > 0 && ceiling->sm_mhz > 0 ? x_ceiling * ceiling->sm_mhz / best_mhz : 0;
    std::printf("%-16s %-46s %9.1f %9.1f %8.3f %8.3f %6.0f %9.3f\n", shape.Name().c_str(),
                best.empty() ? "(none agreed)" : best.c_str(), best_tflops, peer_tflops, x_ceiling,
                x_peer, best_mhz, x_ceiling_per_clock);
    std::fflush(stdout);
    if (&shape == &shapes->front()) {
      headline_ceiling = x_ceiling;
      headline_peer = x_peer;
    }
    if (x_peer < worst_row_peer) {
      worst_row_peer = x_peer;
      worst_row = shape.Name();
    }
    rows.push_back({{"shape", {shape.m, shape.n, shape.k}},
                    {"seeds", {std::to_string(seed_a), std::to_string(seed_b)}},
                    {"best_schedule", best},
                    {"best_tflops", best_tflops},
                    {"peer_tflops", peer_tflops},
                    {"x_ceiling", x_ceiling},
                    {"x_ceiling_per_clock", x_ceiling_per_clock},
                    {"best_sm_mhz_median", best_mhz},
                    {"x_peer", x_peer},
                    {"checks", checks},
                    {"timings", timings}});
  }
  doc["rows"] = rows;
  doc["clock_after"] = clock();
  const bool met = headline_ceiling >= target_ceiling && headline_peer >= target_peer_headline &&
                   worst_row_peer >= target_peer_rows;
  doc["summary"] = {{"headline_shape", shapes->front().Name()},
                    {"headline_x_ceiling", headline_ceiling},
                    {"headline_x_peer", headline_peer},
                    {"worst_row", worst_row},
                    {"worst_row_x_peer", worst_row_peer},
                    {"targets",
                     {{"x_ceiling", target_ceiling},
                      {"x_peer", target_peer_headline},
                      {"rows_x_peer", target_peer_rows}}},
                    {"targets_met", met}};
  std::printf("\nheadline %s: %.3f x ceiling (target %.2f), %.3f x cuBLASLt (target %.2f)\n",
              shapes->front().Name().c_str(), headline_ceiling, target_ceiling, headline_peer,
              target_peer_headline);
  std::printf("worst row %s: %.3f x cuBLASLt (target %.2f) -> targets %s\n", worst_row.c_str(),
              worst_row_peer, target_peer_rows, met ? "met" : "NOT met");
  if (!json_path.empty()) std::ofstream(json_path) << doc.dump(2) << "\n";
  d.EventDestroy(e0);
  d.EventDestroy(e1);
  d.StreamDestroy(s);
  return met ? 0 : 3;
}
