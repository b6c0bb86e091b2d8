#include "worker_jobs.h"

#include <algorithm>
#include <cmath>
#include <random>

#include "absl/strings/str_cat.h"
#include "compiler/canonical.h"
#include "compiler/compiler.h"
#include "cuda_driver.h"
#include "gemm_kernel.h"
#include "gemm_timing.h"
#include "paired_verdict.h"
#include "workloads/gemm_oracle.h"

namespace cake::gpuqueue {
namespace {

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
    auto rt = TimePairs(*g, **inc, rb, row.shape(), **cha, rb, row.shape(), pairs, warmup,
                        proto.launches_per_sample(), start, stop);
    if (!rt.ok()) return Fail(std::string(rt.status().message()));
    rt->set_row(row.name());
    rt->set_required(row.required());
    *m->add_rows() = *rt;
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
