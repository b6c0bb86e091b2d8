#include "measure_runner.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "workloads/numeric.h"

namespace cake::gpuqueue {
namespace {

constexpr double kTargetSampleUs = 200;  // launches per sample until a sample lasts this long
constexpr int kMaxLaunches = 200;
constexpr auto kSampleDeadline = std::chrono::seconds(60);

}  // namespace

struct MeasureRunner::Row {
  explicit Row(const CudaDriver& driver) : d(driver) {}
  ~Row() {
    if (d.context_lost) return;
    for (CUevent e : start) d.EventDestroy(e);
    for (CUevent e : stop) d.EventDestroy(e);
    for (int i = 0; i < 2; ++i) {
      if (exec[i]) d.GraphExecDestroy(exec[i]);
      if (graph[i]) d.GraphDestroy(graph[i]);
    }
  }
  const CudaDriver& d;
  std::unique_ptr<TimedSet> set;
  std::vector<CUevent> start, stop;
  CUgraph graph[2] = {nullptr, nullptr};
  CUgraphExec exec[2] = {nullptr, nullptr};
  int launches = 1;
};

absl::StatusOr<std::unique_ptr<MeasureRunner>> MeasureRunner::Create(const Gpu& g,
                                                                     const MeasureOptions& o,
                                                                     const Nvml* nvml,
                                                                     CuptiSpans* cupti) {
  const CudaDriver& d = *g.driver;
  std::unique_ptr<MeasureRunner> r(new MeasureRunner(g, o));
  r->nvml_ = nvml;
  r->cupti_ = cupti;
  auto h = HelperKernels::Load(d);
  if (!h.ok()) return h.status();
  r->helpers_ = std::move(*h);
  absl::Status s = d.Check(d.StreamCreate(&r->stream_, CU_STREAM_NON_BLOCKING), "cuStreamCreate");
  if (!s.ok()) return s;
  int l2 = 0;
  d.DeviceGetAttribute(&l2, CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE, g.ctx->device());
  auto flush = DeviceBuffer::Allocate(d, std::max<size_t>(size_t(l2) / 4 * 4, 4 << 20));
  if (!flush.ok()) return flush.status();
  r->flush_.emplace(std::move(*flush));
  void* host = nullptr;
  s = d.Check(d.MemHostAlloc(&host, 64, CU_MEMHOSTALLOC_DEVICEMAP | CU_MEMHOSTALLOC_PORTABLE),
              "cuMemHostAlloc");
  if (!s.ok()) return s;
  r->flags_host_ = static_cast<int*>(host);
  std::memset(host, 0, 64);
  s = d.Check(d.MemHostGetDevicePointer(&r->flags_dev_, host, 0), "cuMemHostGetDevicePointer");
  if (!s.ok()) return s;
  if (nvml == nullptr) {
    r->notes_ = "SM clock not read (no NVML): throttle filter not applied";
  } else if (auto mhz = nvml->DefaultSmMhz(o.nvml_index); mhz.ok()) {
    r->default_mhz_ = *mhz;
  } else {
    r->notes_ = absl::StrCat("no default SM clock (", mhz.status().message(),
                             "): throttle filter not applied");
  }
  return r;
}

MeasureRunner::~MeasureRunner() {
  const CudaDriver& d = *g_.driver;
  if (d.context_lost) return;
  if (flags_host_) d.MemFreeHost(flags_host_);
  if (stream_) d.StreamDestroy(stream_);
}

absl::Status MeasureRunner::PrepareRow(Row& row, int slots) const {
  const CudaDriver& d = *g_.driver;
  for (int i = 0; i < slots; ++i) {
    CUevent e1, e2;
    absl::Status st = d.Check(d.EventCreate(&e1, CU_EVENT_DEFAULT), "cuEventCreate");
    if (!st.ok()) return st;
    row.start.push_back(e1);
    st = d.Check(d.EventCreate(&e2, CU_EVENT_DEFAULT), "cuEventCreate");
    if (!st.ok()) return st;
    row.stop.push_back(e2);
  }
  return absl::OkStatus();
}

// The timed part of one arm's sample: per launch, poison its output, flush L2 (cold) or run the
// same launch once first (warm), then events around the launch.
absl::Status MeasureRunner::EnqueueTimed(Row& row, const Arm& arm, int launches,
                                         const protocol::TimingConfig& c, bool capturing) const {
  const CudaDriver& d = *g_.driver;
  absl::Status st;
  for (int i = 0; i < launches && st.ok(); ++i) {
    auto launch = [&] { return arm.kernel->Launch(stream_, row.set->Args(i)); };
    auto poison = [&] { return row.set->Poison(stream_, i); };
    st = poison();
    if (st.ok() && c.cache == "cold")
      st = d.Check(
          d.MemsetD32Async(flush_->ptr(), 0x5A5A0000u + unsigned(i), flush_->bytes() / 4, stream_),
          "cuMemsetD32Async(L2 flush)");
    if (st.ok() && c.cache == "warm") {
      st = launch();
      if (st.ok()) st = poison();
    }
    auto record = [&](CUevent e) {
      return capturing ? d.Check(d.EventRecordWithFlags(e, stream_, CU_EVENT_RECORD_EXTERNAL),
                                 "cuEventRecordWithFlags(EXTERNAL)")
                       : d.Check(d.EventRecord(e, stream_), "cuEventRecord");
    };
    if (st.ok()) st = record(row.start[i]);
    if (st.ok()) st = launch();
    if (st.ok()) st = record(row.stop[i]);
  }
  return st;
}

absl::StatusOr<MeasureRunner::ArmSample> MeasureRunner::RunArm(Row& row, int arm_index,
                                                               const Arm& arm,
                                                               const protocol::TimingConfig& c,
                                                               uint64_t salt) {
  const CudaDriver& d = *g_.driver;
  const HelperKernels& h = *helpers_;
  const int n = row.launches + arm.extra_launches;
  if (cupti_) cupti_->Collect();  // drop records of earlier work
  // Fresh inputs for every launch and the oracle side of the check, before the clock runs.
  absl::Status st = row.set->Prepare(stream_, salt, n);
  // The blocking kernel holds the stream while the timed launches are queued.
  __atomic_store_n(&flags_host_[0], 0, __ATOMIC_SEQ_CST);
  __atomic_store_n(&flags_host_[1], 0, __ATOMIC_SEQ_CST);
  if (st.ok())
    st = h.BlockStream(stream_, flags_dev_, flags_dev_ + sizeof(int),
                       uint64_t(o_.blocker_timeout_s * 1e9));
  if (st.ok())
    st = c.mode == "graph" ? d.Check(d.GraphLaunch(row.exec[arm_index], stream_), "cuGraphLaunch")
                           : EnqueueTimed(row, arm, n, c, /*capturing=*/false);
  __atomic_store_n(&flags_host_[0], 1, __ATOMIC_SEQ_CST);
  // The candidate side of the check: its outputs against the oracle, its inputs again.
  if (st.ok()) st = row.set->Check(stream_, salt, n);
  if (st.ok()) st = d.WaitStream(stream_, kSampleDeadline, "timed sample");
  if (!st.ok()) return st;
  auto verdicts = row.set->Collect(n);
  if (!verdicts.ok()) return verdicts.status();

  ArmSample out;
  out.blocker_timed_out = __atomic_load_n(&flags_host_[1], __ATOMIC_SEQ_CST) != 0;
  double total_ms = 0;
  for (int i = 0; i < n; ++i) {
    float ms = 0;
    st = d.Check(d.EventElapsedTime(&ms, row.start[i], row.stop[i]), "cuEventElapsedTime");
    if (!st.ok()) return st;
    total_ms += ms;
  }
  out.event_us = 1000.0 * total_ms / row.launches;
  out.gpu_seconds = total_ms / 1000.0;
  out.sm_mhz = nvml_ ? nvml_->Read(o_.nvml_index).sm_mhz : NAN;
  out.span_us = NAN;
  if (cupti_) {
    const bool warm = c.cache == "warm";
    std::vector<uint64_t> durations;
    for (const CuptiSpans::Span& sp : cupti_->Collect())
      if (arm.kernel->HasSymbol(sp.name)) durations.push_back(sp.end_ns - sp.start_ns);
    if (durations.size() == size_t(n) * (warm ? 2 : 1)) {
      double ns = 0;
      for (size_t i = warm ? 1 : 0; i < durations.size(); i += warm ? 2 : 1)
        ns += double(durations[i]);
      out.span_us = ns / 1000.0 / row.launches;
    }
  }

  // Every launch's outputs against the oracle; inputs unchanged.
  evidence::TimedOutputCheck& check = checks_[arm_index];
  for (int i = 0; i < n; ++i) {
    std::string why = (*verdicts)[i].failure;
    const bool modified = (*verdicts)[i].inputs_modified;
    check.set_launches_checked(check.launches_checked() + 1);
    if (!why.empty()) check.set_mismatches(check.mismatches() + 1);
    if (modified) check.set_inputs_modified(check.inputs_modified() + 1);
    if (modified && !o_.inputs_mutable && why.empty()) why = "inputs modified by the call";
    if (!why.empty() && check.first_failure().empty())
      check.set_first_failure(absl::StrCat(c.Name(), " launch ", i, " of a sample: ", why));
  }
  if (check.mismatches() > 0 || (!o_.inputs_mutable && check.inputs_modified() > 0))
    return absl::FailedPreconditionError(absl::StrCat("timed output check failed for the ",
                                                      arm_index ? "challenger" : "incumbent", ": ",
                                                      check.first_failure()));
  return out;
}

absl::StatusOr<evidence::RowTiming> MeasureRunner::TimeRow(const DeviceWorkload& workload,
                                                           const contract::Contract& contract,
                                                           const contract::ProblemShape& shape,
                                                           const protocol::TimingConfig& config,
                                                           const Arm& incumbent,
                                                           const Arm& challenger, uint64_t seed) {
  const CudaDriver& d = *g_.driver;
  checks_[0].set_arm("incumbent");
  checks_[1].set_arm("challenger");
  for (evidence::TimedOutputCheck& c : checks_) c.set_scope(workload.check_scope());
  const int max_extra = std::max(incumbent.extra_launches, challenger.extra_launches);

  // Launches per sample: enough for ~200 us, from a probe of each arm on one fresh input set.
  double probe_us = 1;
  {
    Row probe(d);
    absl::Status st = PrepareRow(probe, 1);
    auto set = st.ok() ? workload.Prepare(g_, *helpers_, shape, contract, 1)
                       : absl::StatusOr<std::unique_ptr<TimedSet>>(st);
    if (!set.ok()) return set.status();
    probe.set = *std::move(set);
    st = probe.set->Prepare(stream_, seed, 1);
    for (const Arm* arm : {&incumbent, &challenger}) {
      for (int i = 0; i < 3 && st.ok(); ++i) {
        st = d.Check(d.EventRecord(probe.start[0], stream_), "cuEventRecord");
        if (st.ok()) st = arm->kernel->Launch(stream_, probe.set->Args(0));
        if (st.ok()) st = d.Check(d.EventRecord(probe.stop[0], stream_), "cuEventRecord");
        if (st.ok()) st = d.WaitStream(stream_, kSampleDeadline, "probe launch");
        float ms = 0;
        if (st.ok())
          st = d.Check(d.EventElapsedTime(&ms, probe.start[0], probe.stop[0]), "elapsed");
        if (st.ok() && i > 0) probe_us = std::max(probe_us, 1000.0 * ms);
      }
    }
    if (!st.ok()) return st;
  }
  int launches = std::clamp(int(std::ceil(kTargetSampleUs / probe_us)),
                            std::max(1, o_.min_launches), kMaxLaunches);
  size_t free_bytes = 0, total_bytes = 0;
  d.MemGetInfo(&free_bytes, &total_bytes);
  const size_t slot_bytes = workload.SlotBytes(shape, contract);
  const size_t budget = std::min<size_t>(free_bytes / 2, size_t(32) << 30);
  const int fit = int(budget / std::max<size_t>(slot_bytes, 1)) - max_extra;
  if (fit < launches) {
    if (fit < 1) return absl::ResourceExhaustedError("device memory too small for one input set");
    absl::StrAppend(&notes_, notes_.empty() ? "" : "; ", "launches per sample capped at ", fit,
                    " by device memory");
    launches = fit;
  }

  Row row(d);
  row.launches = launches;
  absl::Status st = PrepareRow(row, launches + max_extra);
  if (!st.ok()) return st;
  auto set = workload.Prepare(g_, *helpers_, shape, contract, launches + max_extra);
  if (!set.ok()) return set.status();
  row.set = *std::move(set);
  if (config.mode == "graph") {
    int i = 0;
    for (const Arm* arm : {&incumbent, &challenger}) {
      st = d.Check(d.StreamBeginCapture(stream_, CU_STREAM_CAPTURE_MODE_RELAXED),
                   "cuStreamBeginCapture");
      if (st.ok()) {
        absl::Status enq =
            EnqueueTimed(row, *arm, launches + arm->extra_launches, config, /*capturing=*/true);
        st = d.Check(d.StreamEndCapture(stream_, &row.graph[i]), "cuStreamEndCapture");
        if (st.ok()) st = enq;
      }
      if (st.ok())
        st = d.Check(d.GraphInstantiateWithFlags(&row.exec[i], row.graph[i], 0),
                     "cuGraphInstantiate");
      if (!st.ok()) return st;
      ++i;
    }
  }

  const Arm* arms[2] = {&incumbent, &challenger};
  uint64_t sample = 0;
  auto salt = [&]() { return workloads::Mix64(seed ^ workloads::Mix64(++sample)); };
  for (int w = 0; w < o_.warmup_samples; ++w)
    for (int a = 0; a < 2; ++a) {
      auto r = RunArm(row, a, *arms[a], config, salt());
      if (!r.ok()) return r.status();
    }

  evidence::RowTiming rt;
  rt.set_mode(config.mode);
  rt.set_cache(config.cache);
  rt.set_primary(config.primary);
  rt.set_launches_per_sample(launches);
  protocol::NoiseStopping stop(o_.stopping);
  const float floor_mhz = float(o_.throttle_fraction) * default_mhz_;
  int64_t input_sets = 0;
  for (int p = 0; !stop.Finished(); ++p) {
    const bool challenger_first = p % 2 == 1;  // A B, B A, A B, ...
    ArmSample got[2];
    for (int half = 0; half < 2; ++half) {
      const int a = (half == 0) == challenger_first ? 1 : 0;
      auto r = RunArm(row, a, *arms[a], config, salt());
      if (!r.ok()) return r.status();
      got[a] = *r;
      input_sets += launches + arms[a]->extra_launches;
    }
    const Nvml::Reading env = nvml_ ? nvml_->Read(o_.nvml_index) : Nvml::Reading{NAN, NAN, NAN};
    const bool throttled = default_mhz_ > 0 && ((got[0].sm_mhz > 0 && got[0].sm_mhz < floor_mhz) ||
                                                (got[1].sm_mhz > 0 && got[1].sm_mhz < floor_mhz));
    const bool discarded = throttled || got[0].blocker_timed_out || got[1].blocker_timed_out;
    rt.add_incumbent_us(got[0].event_us);
    rt.add_challenger_us(got[1].event_us);
    rt.add_challenger_first(challenger_first);
    rt.add_incumbent_span_us(got[0].span_us);
    rt.add_challenger_span_us(got[1].span_us);
    rt.add_incumbent_sm_mhz(got[0].sm_mhz);
    rt.add_challenger_sm_mhz(got[1].sm_mhz);
    rt.add_temperature_c(env.temperature_c);
    rt.add_power_w(env.power_w);
    rt.add_discarded(discarded);
    if (got[0].blocker_timed_out || got[1].blocker_timed_out)
      absl::StrAppend(&notes_, notes_.empty() ? "" : "; ",
                      "a blocking kernel timed out before its release (sample kept out)");
    stop.Add(got[1].event_us / got[0].event_us, !discarded,
             got[0].gpu_seconds + got[1].gpu_seconds);
  }
  rt.set_stop_reason(stop.reason());
  rt.set_rel_stddev(stop.rel_stddev());
  rt.set_gpu_seconds(stop.gpu_seconds());
  rt.set_distinct_input_sets(static_cast<int32_t>(std::min<int64_t>(input_sets, INT32_MAX)));
  return rt;
}

}  // namespace cake::gpuqueue
