#include "gemm_timing.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "compiler/canonical.h"
#include "workloads/gemm_oracle.h"

namespace cake::gpuqueue {
namespace {

namespace fs = std::filesystem;

std::string ReadFile(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// Times `launches` back-to-back launches between two events; microseconds per launch.
absl::StatusOr<double> TimeLaunches(const Gpu& g, const GemmKernel& k, const RowBuffers& rb,
                                    const contract::GemmShape& s, int launches, CUevent start,
                                    CUevent stop, int extra = 0) {
  const CudaDriver& d = *g.driver;
  absl::Status st = d.Check(d.EventRecord(start, nullptr), "cuEventRecord");
  for (int i = 0; st.ok() && i < launches + extra; ++i)
    st = k.Launch(nullptr, rb.da->ptr(), rb.db->ptr(), rb.dc->ptr(), s.m(), s.n(), s.k());
  if (st.ok()) st = d.Check(d.EventRecord(stop, nullptr), "cuEventRecord");
  if (st.ok()) st = d.Check(d.EventSynchronize(stop), "cuEventSynchronize");
  float ms = 0;
  if (st.ok()) st = d.Check(d.EventElapsedTime(&ms, start, stop), "cuEventElapsedTime");
  if (!st.ok()) return st;
  return 1000.0 * ms / launches;
}

}  // namespace

absl::StatusOr<Gpu> OpenGpu() {
  Gpu g;
  auto d = CudaDriver::Load();
  if (!d.ok()) return d.status();
  g.driver = std::move(*d);
  auto c = ScopedContext::Open(*g.driver, 0);
  if (!c.ok()) return c.status();
  g.ctx = std::move(*c);
  return g;
}

absl::StatusOr<std::unique_ptr<GemmKernel>> LoadKernel(const Gpu& g, const worker::KernelRef& ref) {
  const std::string cubin = ReadFile(fs::path(ref.receipt().artifact_dir()) / "kernel.cubin");
  if (cubin.empty() || compiler::Sha256Hex(cubin) != ref.receipt().cubin_sha256())
    return absl::DataLossError(
        absl::StrCat("artifact of ", ref.candidate(), " does not match its receipt's cubin hash"));
  return GemmKernel::Load(*g.driver, cubin, ref.receipt());
}

absl::Status PrepareRow(const Gpu& g, const contract::GemmShape& s, bool bf16_out, uint64_t seed,
                        RowBuffers* rb) {
  std::mt19937_64 rng(seed);
  rb->a = workloads::RandomBf16(size_t(s.m()) * s.k(), rng);
  rb->b = workloads::RandomBf16(size_t(s.n()) * s.k(), rng);
  rb->out_bytes = size_t(s.m()) * s.n() * (bf16_out ? 2 : 4);
  auto da = DeviceBuffer::Allocate(*g.driver, rb->a.size() * 2);
  auto db = DeviceBuffer::Allocate(*g.driver, rb->b.size() * 2);
  auto dc = DeviceBuffer::Allocate(*g.driver, (rb->out_bytes + 3) / 4 * 4);
  if (!da.ok()) return da.status();
  if (!db.ok()) return db.status();
  if (!dc.ok()) return dc.status();
  rb->da.emplace(std::move(*da));
  rb->db.emplace(std::move(*db));
  rb->dc.emplace(std::move(*dc));
  absl::Status st = rb->da->Upload(rb->a.data(), rb->a.size() * 2);
  if (st.ok()) st = rb->db->Upload(rb->b.data(), rb->b.size() * 2);
  return st;
}

absl::StatusOr<evidence::RowTiming> TimePairs(const Gpu& g, const GemmKernel& inc,
                                              const RowBuffers& inc_rb,
                                              const contract::GemmShape& inc_shape,
                                              const GemmKernel& cha, const RowBuffers& cha_rb,
                                              const contract::GemmShape& cha_shape, int pairs,
                                              int warmup, int min_launches, CUevent start,
                                              CUevent stop, int challenger_extra_launches) {
  double probe_us = 0;
  auto w1 = TimeLaunches(g, inc, inc_rb, inc_shape, warmup, start, stop);
  if (!w1.ok()) return w1.status();
  auto w2 = TimeLaunches(g, cha, cha_rb, cha_shape, warmup, start, stop);
  if (!w2.ok()) return w2.status();
  probe_us = std::max(*w1, *w2);
  const int launches = std::clamp(static_cast<int>(200.0 / std::max(probe_us, 1.0)) + 1,
                                  std::max(1, min_launches), 200);
  evidence::RowTiming rt;
  for (int p = 0; p < pairs; ++p) {
    const bool challenger_first = p % 2 == 1;  // A B, B A, A B, ...
    double t_inc = 0, t_cha = 0;
    for (int half = 0; half < 2; ++half) {
      const bool run_challenger = (half == 0) == challenger_first;
      auto t = run_challenger ? TimeLaunches(g, cha, cha_rb, cha_shape, launches, start, stop,
                                             challenger_extra_launches)
                              : TimeLaunches(g, inc, inc_rb, inc_shape, launches, start, stop);
      if (!t.ok()) return t.status();
      (run_challenger ? t_cha : t_inc) = *t;
    }
    rt.add_incumbent_us(t_inc);
    rt.add_challenger_us(t_cha);
    rt.add_challenger_first(challenger_first);
  }
  return rt;
}

}  // namespace cake::gpuqueue
