// cake-sm12x-qualify: the SM12x qualification experiment. On an SM120/SM121 device it
//  1. runs one FP8 (e4m3) MMA per tile in the legacy form and in the block-scaled form with unit
//     UE8M0 scales on the same fresh random fragments, and counts outputs that differ bitwise
//     between the two forms, and outputs outside the CPU model's tolerance (block_scaled_mma.h);
//  2. times both forms in a raw issue loop (four independent chains per warp) and prints each
//     rate and their ratio;
//  3. writes what it measured, with the device and date, as JSON (--out): the calibration
//     profile's first rows.
// On any other device, or without one, it refuses: "no SM120 execution witness possible on
// <device>", exit 3, nothing written. Unit-scale identity is what it measures, not assumes.
#include <cuda.h>

#include <chrono>
#include <cmath>
#include <cstring>
#include <ctime>
#include <fstream>
#include <iostream>
#include <random>
#include <vector>

#include "CLI/CLI.hpp"
#include "absl/strings/str_format.h"
#include "gpuqueue/worker/cuda_driver.h"
#include "nlohmann/json.hpp"
#include "workloads/block_scaled_mma.h"
#include "workloads/gemm_blockscaled/fragments.h"

namespace cake::gpuqueue {
extern const unsigned char kQualifyFatbin[];
}

namespace {

using cake::gpuqueue::CudaDriver;
namespace bs = cake::workloads::gemm_blockscaled;
using cake::workloads::NarrowFormat;

constexpr int kRefused = 3, kFailed = 1;

// Refuses unless the device is SM12x; the message names the device.
bool Sm12x(int major) { return major == 12; }

struct Tiles {
  std::vector<cake::workloads::MmaOperands> operands;  // per tile, as matrices
  std::vector<uint32_t> a, b;                          // per tile and lane: 4 and 2 registers
  std::vector<float> c;                                // per tile and lane: 4 values
};

// Fresh random finite E4M3 codes and FP32 C values, packed into per-lane registers.
Tiles RandomTiles(int count, std::mt19937_64& rng) {
  Tiles t;
  std::uniform_int_distribution<uint32_t> code(0, 255);
  std::uniform_real_distribution<float> cval(-8, 8);
  auto finite = [&] {
    uint32_t c;
    do c = code(rng);
    while ((c & 0x7F) == 0x7F);  // E4M3 NaN codes
    return c;
  };
  t.a.resize(size_t(count) * 32 * 4);
  t.b.resize(size_t(count) * 32 * 2);
  t.c.resize(size_t(count) * 32 * 4);
  for (int tile = 0; tile < count; ++tile) {
    cake::workloads::MmaOperands o;
    o.a.resize(16 * 32);
    o.b.resize(8 * 32);
    o.c.resize(128);
    for (auto& v : o.a) v = finite();
    for (auto& v : o.b) v = finite();
    for (auto& v : o.c) v = cval(rng);
    for (int lane = 0; lane < 32; ++lane) {
      const size_t at = size_t(tile) * 32 + lane;
      uint32_t ra[4], rb[2];
      bs::PackA8(o.a.data(), lane, ra);
      bs::PackB8(o.b.data(), lane, rb);
      for (int r = 0; r < 4; ++r) t.a[at * 4 + r] = ra[r];
      for (int r = 0; r < 2; ++r) t.b[at * 2 + r] = rb[r];
      for (int i = 0; i < 4; ++i) {
        const bs::MatrixIndex e = bs::FragmentC(lane, i);
        t.c[at * 4 + i] = o.c[e.row * 8 + e.col];
      }
    }
    t.operands.push_back(std::move(o));
  }
  return t;
}

class Device {
 public:
  explicit Device(const CudaDriver& d) : d_(d) {}
  ~Device() {
    for (CUdeviceptr p : allocations_) d_.MemFree(p);
  }
  absl::StatusOr<CUdeviceptr> Upload(const void* data, size_t bytes) {
    CUdeviceptr p = 0;
    if (absl::Status s = d_.Check(d_.MemAlloc(&p, bytes), "cuMemAlloc"); !s.ok()) return s;
    allocations_.push_back(p);
    if (data != nullptr)
      if (absl::Status s = d_.Check(d_.MemcpyHtoD(p, data, bytes), "cuMemcpyHtoD"); !s.ok())
        return s;
    return p;
  }

 private:
  const CudaDriver& d_;
  std::vector<CUdeviceptr> allocations_;
};

int Fail(const absl::Status& s) {
  std::cerr << "cake-sm12x-qualify: " << s.message() << "\n";
  return kFailed;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{
      "The SM12x qualification experiment: legacy vs unit-scale block-scaled FP8 MMA (bitwise "
      "identity on random inputs, the CPU model's tolerance, raw issue rates). Refuses, "
      "recording nothing, on any device that is not SM120/SM121."};
  std::string out;
  int ordinal = 0, tiles = 4096, iterations = 20000, rounds = 5;
  app.add_option("--out", out, "Write the measurements as JSON here");
  app.add_option("--device", ordinal, "Device ordinal (default 0)");
  app.add_option("--tiles", tiles, "Random MMA tiles for the identity check (default 4096)")
      ->check(CLI::Range(1, 1 << 20));
  app.add_option("--iterations", iterations, "Issue-loop iterations per warp (default 20000)")
      ->check(CLI::Range(1, 1 << 24));
  app.add_option("--rounds", rounds, "Timed rounds per form, interleaved (default 5)")
      ->check(CLI::Range(1, 100));
  CLI11_PARSE(app, argc, argv);

  auto driver = CudaDriver::Load();
  if (!driver.ok()) {
    std::cout << "no SM120 execution witness possible on this machine: "
              << driver.status().message() << "\n";
    return kRefused;
  }
  const CudaDriver& d = **driver;
  auto ctx = cake::gpuqueue::ScopedContext::Open(d, ordinal);
  if (!ctx.ok()) {
    std::cout << "no SM120 execution witness possible on device " << ordinal << ": "
              << ctx.status().message() << "\n";
    return kRefused;
  }
  const std::string device = (*ctx)->name();
  const int major = (*ctx)->compute_major(), minor = (*ctx)->compute_minor();
  if (!Sm12x(major)) {
    std::cout << absl::StrFormat(
        "no SM120 execution witness possible on %s (sm_%d%d): the block-scaled forms run only "
        "on SM120/SM121; nothing was measured or recorded\n",
        device, major, minor);
    return kRefused;
  }

  CUmodule module = nullptr;
  if (absl::Status s =
          d.Check(d.ModuleLoadData(&module, cake::gpuqueue::kQualifyFatbin), "cuModuleLoadData");
      !s.ok())
    return Fail(s);
  auto function = [&](const char* name) -> absl::StatusOr<CUfunction> {
    CUfunction f = nullptr;
    if (absl::Status s = d.Check(d.ModuleGetFunction(&f, module, name), name); !s.ok()) return s;
    return f;
  };

  // 1. Bitwise identity of the two forms, and both against the CPU model.
  const uint64_t seed = std::random_device{}() * 0x9E3779B97F4A7C15ull ^ std::random_device{}();
  std::mt19937_64 rng(seed);
  const Tiles t = RandomTiles(tiles, rng);
  Device mem(d);
  auto da = mem.Upload(t.a.data(), t.a.size() * 4);
  auto db = mem.Upload(t.b.data(), t.b.size() * 4);
  auto dc = mem.Upload(t.c.data(), t.c.size() * 4);
  auto dd = mem.Upload(nullptr, t.c.size() * 4);
  if (!da.ok() || !db.ok() || !dc.ok() || !dd.ok()) return Fail(absl::InternalError("upload"));
  std::vector<std::vector<float>> results;
  for (const char* name : {"cake_qualify_mma_legacy", "cake_qualify_mma_unit_scale"}) {
    auto f = function(name);
    if (!f.ok()) return Fail(f.status());
    if (absl::Status s = d.Check(d.MemsetD32(*dd, 0x7FC00000u, t.c.size()), "poison"); !s.ok())
      return Fail(s);  // NaN: a value never written cannot pass
    int n = tiles;
    void* args[] = {&*da, &*db, &*dc, &*dd, &n};
    if (absl::Status s = d.Check(
            d.LaunchKernel(*f, (tiles + 3) / 4, 1, 1, 128, 1, 1, 0, nullptr, args, nullptr), name);
        !s.ok())
      return Fail(s);
    if (absl::Status s = d.Check(d.CtxSynchronize(), name); !s.ok()) return Fail(s);
    std::vector<float> host(t.c.size());
    if (absl::Status s = d.Check(d.MemcpyDtoH(host.data(), *dd, host.size() * 4), "cuMemcpyDtoH");
        !s.ok())
      return Fail(s);
    results.push_back(std::move(host));
  }
  const cake::workloads::MmaForm legacy = *cake::workloads::MakeMmaForm(
      cake::workloads::MmaKind::kLegacyF8, NarrowFormat::kE4M3, NarrowFormat::kE4M3);
  int64_t differ = 0, legacy_off = 0, scaled_off = 0, exact_legacy = 0;
  for (int tile = 0; tile < tiles; ++tile) {
    const std::vector<float> model = *cake::workloads::MmaReference(legacy, t.operands[tile]);
    const std::vector<double> tolerance = *cake::workloads::Tolerance(legacy, t.operands[tile]);
    for (int lane = 0; lane < 32; ++lane)
      for (int i = 0; i < 4; ++i) {
        const size_t at = (size_t(tile) * 32 + lane) * 4 + i;
        const bs::MatrixIndex e = bs::FragmentC(lane, i);
        const float want = model[e.row * 8 + e.col];
        const double tol = tolerance[e.row * 8 + e.col];
        differ += std::memcmp(&results[0][at], &results[1][at], 4) != 0;
        legacy_off += !(std::fabs(double(results[0][at]) - want) <= tol);
        scaled_off += !(std::fabs(double(results[1][at]) - want) <= tol);
        exact_legacy += results[0][at] == want;
      }
  }
  const int64_t outputs = int64_t(tiles) * 128;

  // 2. Issue rates, the two forms interleaved.
  int sms = 0;
  d.DeviceGetAttribute(&sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, (*ctx)->device());
  const int blocks = sms * 4, threads = 256;
  auto sink = mem.Upload(nullptr, size_t(blocks) * threads * 4);
  if (!sink.ok()) return Fail(sink.status());
  CUevent start, stop;
  d.EventCreate(&start, CU_EVENT_DEFAULT);
  d.EventCreate(&stop, CU_EVENT_DEFAULT);
  const char* rate_kernels[] = {"cake_qualify_rate_legacy", "cake_qualify_rate_unit_scale"};
  std::vector<double> best_ms(2, 1e30);
  for (int round = 0; round < rounds + 1; ++round)  // round 0 warms up
    for (int k = 0; k < 2; ++k) {
      auto f = function(rate_kernels[k]);
      if (!f.ok()) return Fail(f.status());
      uint32_t s32 = uint32_t(seed);
      void* args[] = {&*sink, &iterations, &s32};
      d.EventRecord(start, nullptr);
      if (absl::Status s =
              d.Check(d.LaunchKernel(*f, blocks, 1, 1, threads, 1, 1, 0, nullptr, args, nullptr),
                      rate_kernels[k]);
          !s.ok())
        return Fail(s);
      d.EventRecord(stop, nullptr);
      if (absl::Status s = d.Check(d.EventSynchronize(stop), rate_kernels[k]); !s.ok())
        return Fail(s);
      float ms = 0;
      d.EventElapsedTime(&ms, start, stop);
      if (round > 0) best_ms[k] = std::min(best_ms[k], double(ms));
    }
  const double flops = 2.0 * 16 * 8 * 32 * 4 * double(iterations) * blocks * (threads / 32);
  const double legacy_tflops = flops / (best_ms[0] * 1e-3) / 1e12;
  const double scaled_tflops = flops / (best_ms[1] * 1e-3) / 1e12;

  std::cout << absl::StrFormat("device: %s (sm_%d%d), %d SMs; seed %d\n", device, major, minor, sms,
                               seed);
  std::cout << absl::StrFormat(
      "identity: %d of %d outputs differ bitwise between legacy and unit-scale forms\n", differ,
      outputs);
  std::cout << absl::StrFormat(
      "CPU model (exact sum rounded once): legacy %d, unit-scale %d outside tolerance; legacy "
      "equals the model bitwise on %d\n",
      legacy_off, scaled_off, exact_legacy);
  std::cout << absl::StrFormat(
      "issue rate: legacy %.1f TFLOP/s, unit-scale block-scaled %.1f TFLOP/s, ratio %.3f (best "
      "of %d rounds)\n",
      legacy_tflops, scaled_tflops, scaled_tflops / legacy_tflops, rounds);
  if (!out.empty()) {
    const std::time_t now = std::time(nullptr);
    char date[32];
    std::strftime(date, sizeof(date), "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&now));
    nlohmann::json j = {
        {"device", device},
        {"compute_capability", absl::StrFormat("%d.%d", major, minor)},
        {"sm_count", sms},
        {"driver_version", d.driver_version},
        {"date", date},
        {"seed", seed},
        {"witness", "SM12x execution"},
        {"identity", {{"outputs", outputs}, {"differ_bitwise", differ}}},
        {"cpu_model",
         {{"legacy_outside_tolerance", legacy_off},
          {"unit_scale_outside_tolerance", scaled_off},
          {"legacy_bitwise_equal", exact_legacy}}},
        {"issue_rate_tflops", {{"legacy_e4m3", legacy_tflops}, {"unit_scale_e4m3", scaled_tflops}}},
        {"rounds", rounds},
        {"iterations", iterations}};
    std::ofstream(out) << j.dump(2) << "\n";
  }
  return differ == 0 && legacy_off == 0 && scaled_off == 0 ? 0 : kFailed;
}
