#include "worker_jobs.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "compiler/canonical.h"
#include "compiler/compiler.h"
#include "cuda_driver.h"
#include "gemm_kernel.h"
#include "paired_verdict.h"
#include "workloads/gemm_oracle.h"

namespace cake::gpuqueue {
namespace {

namespace fs = std::filesystem;

worker::Reply Fail(const std::string& error) {
  worker::Reply r;
  r.set_ok(false);
  r.set_error(error);
  return r;
}

worker::Reply RunCompile(const worker::CompileJob& job) {
  auto parsed = compiler::ParseModuleText(job.schedule_text(), "schedule.textproto");
  if (!parsed.ok()) return Fail(std::string(parsed.status().message()));
  worker::Reply reply;
  reply.set_ok(true);
  for (const std::string& t : job.targets()) {
    auto target = compiler::TargetByName(t);
    if (!target.ok()) return Fail(std::string(target.status().message()));
    compiler::CompileOptions opts;
    opts.store_root = job.store_root();
    auto c = compiler::Compile(*parsed, **target, opts);
    if (!c.ok()) return Fail(std::string(c.status().message()));
    worker::TargetResult* r = reply.mutable_compile()->add_results();
    r->set_target(t);
    *r->mutable_analysis() = c->analysis;
    if (c->receipt) *r->mutable_receipt() = *c->receipt;
  }
  return reply;
}

std::string ReadFile(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

struct Gpu {
  std::unique_ptr<CudaDriver> driver;
  std::unique_ptr<ScopedContext> ctx;
};

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

struct RowBuffers {
  std::vector<uint16_t> a, b;
  std::optional<DeviceBuffer> da, db, dc;
  size_t out_bytes = 0;
};

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

worker::Reply RunValidate(const worker::ValidateJob& job) {
  auto g = OpenGpu();
  if (!g.ok()) return Fail(absl::StrCat("no execution device: ", g.status().message()));
  auto kernel = LoadKernel(*g, job.kernel());
  if (!kernel.ok()) return Fail(std::string(kernel.status().message()));
  const contract::Contract& c = job.contract();
  const bool bf16_out = c.output_dtype() != "f32";
  worker::Reply reply;
  reply.set_ok(true);
  evidence::Validation* v = reply.mutable_validation();
  v->set_device(g->ctx->name());
  bool all = true;
  for (int i = 0; i < c.rows_size(); ++i) {
    const contract::Row& row = c.rows(i);
    const uint64_t seed = job.seed() ^ (0x9e3779b97f4a7c15ull * (i + 1));
    RowBuffers rb;
    absl::Status st = PrepareRow(*g, row.shape(), bf16_out, seed, &rb);
    // Poison: all-ones is NaN in BF16 and FP32; an unwritten element fails the comparison.
    if (st.ok()) st = rb.dc->Fill32(0xFFFFFFFFu);
    if (st.ok())
      st = (*kernel)->Launch(nullptr, rb.da->ptr(), rb.db->ptr(), rb.dc->ptr(), row.shape().m(),
                             row.shape().n(), row.shape().k());
    if (st.ok()) st = g->driver->Check(g->driver->CtxSynchronize(), "kernel execution");
    if (!st.ok()) {
      v->set_passed(false);
      v->set_failure(absl::StrCat("row ", row.name(), ": ", st.message()));
      return reply;  // a sticky error poisons this process; the daemon starts a fresh one
    }
    const size_t elems = size_t(row.shape().m()) * row.shape().n();
    std::vector<double> out(elems);
    if (bf16_out) {
      std::vector<uint16_t> raw(elems);
      st = rb.dc->Download(raw.data(), rb.out_bytes);
      for (size_t e = 0; e < elems; ++e) out[e] = workloads::Bf16ToFloat(raw[e]);
    } else {
      std::vector<float> raw(elems);
      st = rb.dc->Download(raw.data(), rb.out_bytes);
      for (size_t e = 0; e < elems; ++e) out[e] = raw[e];
    }
    if (!st.ok()) return Fail(std::string(st.message()));
    // Every element must have been written (poison gone); the oracle covers all output rows,
    // or for very large shapes a random sample of kSampledRows whole rows.
    constexpr int kSampledRows = 96;
    const int64_t macs = int64_t(row.shape().m()) * row.shape().n() * row.shape().k();
    int64_t unwritten = 0;
    for (double x : out) unwritten += std::isfinite(x) ? 0 : 1;
    std::vector<double> ref, compared;
    int sampled = 0;
    if (macs <= (int64_t{1} << 31)) {
      ref = workloads::ReferenceGemm(rb.a, rb.b, row.shape().m(), row.shape().n(), row.shape().k());
      compared = out;
    } else {
      std::mt19937_64 pick(seed ^ 0x5eed);
      std::vector<int> rows;
      for (int r = 0; r < kSampledRows; ++r)
        rows.push_back(static_cast<int>(pick() % static_cast<uint64_t>(row.shape().m())));
      rows.push_back(row.shape().m() - 1);  // the tail row
      sampled = static_cast<int>(rows.size());
      ref = workloads::ReferenceGemmRows(rb.a, rb.b, row.shape().n(), row.shape().k(), rows);
      for (int r : rows)
        compared.insert(compared.end(), out.begin() + int64_t(r) * row.shape().n(),
                        out.begin() + int64_t(r + 1) * row.shape().n());
    }
    const auto& t = c.tolerance();
    auto cmp = workloads::Compare(compared, ref, t.rtol(), t.atol(), t.max_relative_l2());
    cmp.non_finite = std::max(cmp.non_finite, unwritten);
    cmp.passed = cmp.passed && unwritten == 0;
    evidence::RowCheck* rc = v->add_rows();
    rc->set_row(row.name());
    rc->set_m(row.shape().m());
    rc->set_n(row.shape().n());
    rc->set_k(row.shape().k());
    rc->set_seed(std::to_string(seed));
    rc->set_non_finite(cmp.non_finite);
    rc->set_out_of_tolerance(cmp.out_of_tolerance);
    rc->set_max_abs_error(cmp.max_abs_error);
    rc->set_relative_l2_error(cmp.relative_l2_error);
    rc->set_passed(cmp.passed);
    rc->set_sampled_rows(sampled);
    all = all && cmp.passed;
  }
  v->set_passed(all);
  if (!all) v->set_failure("numerical contract not met on at least one row");
  return reply;
}

// Times `launches` back-to-back launches between two events; microseconds per launch.
absl::StatusOr<double> TimeLaunches(const Gpu& g, const GemmKernel& k, const RowBuffers& rb,
                                    const contract::GemmShape& s, int launches, CUevent start,
                                    CUevent stop) {
  const CudaDriver& d = *g.driver;
  absl::Status st = d.Check(d.EventRecord(start, nullptr), "cuEventRecord");
  for (int i = 0; st.ok() && i < launches; ++i)
    st = k.Launch(nullptr, rb.da->ptr(), rb.db->ptr(), rb.dc->ptr(), s.m(), s.n(), s.k());
  if (st.ok()) st = d.Check(d.EventRecord(stop, nullptr), "cuEventRecord");
  if (st.ok()) st = d.Check(d.EventSynchronize(stop), "cuEventSynchronize");
  float ms = 0;
  if (st.ok()) st = d.Check(d.EventElapsedTime(&ms, start, stop), "cuEventElapsedTime");
  if (!st.ok()) return st;
  return 1000.0 * ms / launches;
}

worker::Reply RunMeasure(const worker::MeasureJob& job) {
  auto g = OpenGpu();
  if (!g.ok()) return Fail(absl::StrCat("no execution device: ", g.status().message()));
  auto inc = LoadKernel(*g, job.incumbent());
  auto cha = LoadKernel(*g, job.challenger());
  if (!inc.ok()) return Fail(std::string(inc.status().message()));
  if (!cha.ok()) return Fail(std::string(cha.status().message()));
  const contract::Contract& c = job.contract();
  const auto& proto = c.protocol();
  const int pairs = proto.pairs() > 0 ? proto.pairs() : 20;
  const int warmup = proto.warmup_launches() > 0 ? proto.warmup_launches() : 3;
  const bool bf16_out = c.output_dtype() != "f32";
  CUevent start, stop;
  g->driver->EventCreate(&start, CU_EVENT_DEFAULT);
  g->driver->EventCreate(&stop, CU_EVENT_DEFAULT);
  worker::Reply reply;
  reply.set_ok(true);
  evidence::Measurement* m = reply.mutable_measurement();
  m->set_candidate(job.challenger().candidate());
  m->set_incumbent(job.incumbent().candidate());
  m->set_run(job.run());
  m->set_device(g->ctx->name());
  m->set_mode("eager");
  for (int i = 0; i < c.rows_size(); ++i) {
    const contract::Row& row = c.rows(i);
    if (row.held_out()) continue;  // held-out rows gate correctness, not ranking
    RowBuffers rb;
    absl::Status st = PrepareRow(*g, row.shape(), bf16_out, job.seed() + i, &rb);
    if (!st.ok()) return Fail(std::string(st.message()));
    // Warm-up both kernels, then size a sample to >= ~200 us so launch jitter stays small.
    double probe_us = 0;
    for (const GemmKernel* k : {inc->get(), cha->get()}) {
      auto t = TimeLaunches(*g, *k, rb, row.shape(), warmup, start, stop);
      if (!t.ok()) return Fail(std::string(t.status().message()));
      probe_us = std::max(probe_us, *t);
    }
    const int launches = std::clamp(static_cast<int>(200.0 / std::max(probe_us, 1.0)) + 1,
                                    std::max(1, proto.launches_per_sample()), 200);
    evidence::RowTiming* rt = m->add_rows();
    rt->set_row(row.name());
    rt->set_required(row.required());
    for (int p = 0; p < pairs; ++p) {
      const bool challenger_first = p % 2 == 1;  // A B, B A, A B, ...
      double t_inc = 0, t_cha = 0;
      for (int half = 0; half < 2; ++half) {
        const bool run_challenger = (half == 0) == challenger_first;
        auto t = TimeLaunches(*g, run_challenger ? **cha : **inc, rb, row.shape(), launches, start,
                              stop);
        if (!t.ok()) return Fail(std::string(t.status().message()));
        (run_challenger ? t_cha : t_inc) = *t;
      }
      rt->add_incumbent_us(t_inc);
      rt->add_challenger_us(t_cha);
      rt->add_challenger_first(challenger_first);
    }
  }
  g->driver->EventDestroy(start);
  g->driver->EventDestroy(stop);
  JudgeMeasurement(m, c);
  return reply;
}

worker::Reply RunProbe() {
  worker::Reply reply;
  reply.set_ok(true);
  worker::ProbeResult* p = reply.mutable_probe();
  auto d = CudaDriver::Load();
  if (!d.ok()) {
    p->set_reason(std::string(d.status().message()));
    return reply;
  }
  p->set_driver_loaded(true);
  int count = 0;
  (*d)->DeviceGetCount(&count);
  p->set_device_count(count);
  for (int i = 0; i < count; ++i) {
    CUdevice dev;
    (*d)->DeviceGet(&dev, i);
    char name[256] = {};
    (*d)->DeviceGetName(name, sizeof(name), dev);
    int major = 0, minor = 0;
    (*d)->DeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev);
    (*d)->DeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev);
    p->add_devices(absl::StrCat(i, ": ", name, " (", major, ".", minor, ")"));
  }
  if (count == 0) p->set_reason("the driver reports no CUDA device");
  return reply;
}

}  // namespace

worker::Reply RunWorkerRequest(const worker::Request& request) {
  switch (request.job_case()) {
    case worker::Request::kCompile:
      return RunCompile(request.compile());
    case worker::Request::kValidate:
      return RunValidate(request.validate());
    case worker::Request::kMeasure:
      return RunMeasure(request.measure());
    case worker::Request::kProbe:
      return RunProbe();
    default:
      return Fail("request names no job");
  }
}

}  // namespace cake::gpuqueue
