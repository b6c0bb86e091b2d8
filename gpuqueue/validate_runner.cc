#include "validate_runner.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <optional>
#include <random>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "workloads/gemm_cases.h"

namespace cake::gpuqueue {
namespace {

using evidence::EvidenceRecord;
using evidence::RowCheck;
using workloads::GemmCase;

constexpr size_t kGuardBytes = 4096;
constexpr uint8_t kCanary = 0xA5;
constexpr int kSampledRows = 96;  // oracle rows compared for shapes too large for a full oracle
// Instrumented runs are slow (racecheck reports every hazard): small cases only.
constexpr int64_t kSanitizerMaxMacs = int64_t{16} << 20;

uint64_t CaseSeed(uint64_t seed, uint64_t salt) {
  return workloads::Mix64(seed ^ workloads::Mix64(salt));
}

// [guard | payload | guard]: the kernel gets payload(); the guards hold a canary.
class Guarded {
 public:
  static absl::StatusOr<Guarded> Allocate(const CudaDriver& d, size_t payload_bytes) {
    const size_t padded = (payload_bytes + 3) / 4 * 4;
    auto b = DeviceBuffer::Allocate(d, padded + 2 * kGuardBytes);
    if (!b.ok()) return b.status();
    Guarded g(std::move(*b), payload_bytes);
    absl::Status s = d.Check(d.MemsetD8(g.buf_.ptr(), kCanary, g.buf_.bytes()), "cuMemsetD8");
    if (!s.ok()) return s;
    return g;
  }
  CUdeviceptr payload() const { return buf_.ptr() + kGuardBytes; }
  size_t bytes() const { return payload_bytes_; }
  absl::Status Poison(const CudaDriver& d) const {
    return d.Check(d.MemsetD32(payload(), 0xFFFFFFFFu, (payload_bytes_ + 3) / 4), "cuMemsetD32");
  }
  // Bytes of either guard that no longer hold the canary.
  absl::StatusOr<int64_t> GuardBytesChanged() const {
    std::string head(kGuardBytes, '\0'), tail(kGuardBytes, '\0');
    absl::Status s = buf_.DownloadRange(head.data(), 0, kGuardBytes);
    const size_t tail_at = buf_.bytes() - kGuardBytes;
    if (s.ok()) s = buf_.DownloadRange(tail.data(), tail_at, kGuardBytes);
    if (!s.ok()) return s;
    int64_t changed = 0;
    for (char c : head) changed += static_cast<uint8_t>(c) != kCanary;
    for (char c : tail) changed += static_cast<uint8_t>(c) != kCanary;
    // Padding between the payload's end and the tail guard is the kernel's to leave alone too.
    const size_t pad = tail_at - kGuardBytes - payload_bytes_;
    if (pad > 0) {
      std::string p(pad, '\0');
      s = buf_.DownloadRange(p.data(), kGuardBytes + payload_bytes_, pad);
      if (!s.ok()) return s;
      for (char c : p) changed += static_cast<uint8_t>(c) != 0xFF;  // poison fills the padding
    }
    return changed;
  }
  absl::Status Upload(const void* host) const {
    return buf_.UploadRange(host, kGuardBytes, payload_bytes_);
  }
  absl::Status Download(void* host) const {
    return buf_.DownloadRange(host, kGuardBytes, payload_bytes_);
  }

 private:
  Guarded(DeviceBuffer b, size_t bytes) : buf_(std::move(b)), payload_bytes_(bytes) {}
  DeviceBuffer buf_;
  size_t payload_bytes_;
};

struct CaseBuffers {
  std::optional<Guarded> a, b, c;
  workloads::GemmInputs host;
  contract::GemmShape shape;
};

absl::StatusOr<CaseBuffers> MakeBuffers(const CudaDriver& d, const contract::GemmShape& s,
                                        bool bf16_out) {
  CaseBuffers cb;
  cb.shape = s;
  auto a = Guarded::Allocate(d, size_t(s.m()) * s.k() * 2);
  auto b = Guarded::Allocate(d, size_t(s.n()) * s.k() * 2);
  auto c = Guarded::Allocate(d, size_t(s.m()) * s.n() * (bf16_out ? 2 : 4));
  if (!a.ok()) return a.status();
  if (!b.ok()) return b.status();
  if (!c.ok()) return c.status();
  cb.a.emplace(std::move(*a));
  cb.b.emplace(std::move(*b));
  cb.c.emplace(std::move(*c));
  return cb;
}

absl::Status SetInputs(CaseBuffers* cb, workloads::GemmInputs in) {
  cb->host = std::move(in);
  absl::Status s = cb->a->Upload(cb->host.a.data());
  if (s.ok()) s = cb->b->Upload(cb->host.b.data());
  return s;
}

// What one launch left behind.
struct LaunchResult {
  std::string raw_out;
  int64_t unwritten = 0;
  int64_t input_bytes_changed = 0;
  int64_t guard_bytes_changed = 0;
};

int64_t BytesDiffering(const std::string& got, const std::vector<uint16_t>& want) {
  int64_t n = 0;
  const char* w = reinterpret_cast<const char*>(want.data());
  for (size_t i = 0; i < got.size(); ++i) n += got[i] != w[i];
  return n;
}

// Poison, launch, wait (watchdog), read back output, inputs and guards.
absl::StatusOr<LaunchResult> LaunchAndRead(const Gpu& g, CUstream stream, const GemmKernel& k,
                                           const CaseBuffers& cb, bool bf16_out,
                                           std::chrono::milliseconds deadline) {
  const CudaDriver& d = *g.driver;
  absl::Status s = cb.c->Poison(d);
  if (!s.ok()) return s;
  s = k.Launch(stream, cb.a->payload(), cb.b->payload(), cb.c->payload(), cb.shape.m(),
               cb.shape.n(), cb.shape.k());
  if (s.ok()) s = d.WaitStream(stream, deadline, "kernel execution");
  if (!s.ok()) return s;
  LaunchResult r;
  r.raw_out.resize(cb.c->bytes());
  std::string a(cb.a->bytes(), '\0'), b(cb.b->bytes(), '\0');
  s = cb.c->Download(r.raw_out.data());
  if (s.ok()) s = cb.a->Download(a.data());
  if (s.ok()) s = cb.b->Download(b.data());
  if (!s.ok()) return s;
  r.unwritten = CountPoison(r.raw_out, bf16_out);
  r.input_bytes_changed = BytesDiffering(a, cb.host.a) + BytesDiffering(b, cb.host.b);
  for (const Guarded* gb : {&*cb.a, &*cb.b, &*cb.c}) {
    auto changed = gb->GuardBytesChanged();
    if (!changed.ok()) return changed.status();
    r.guard_bytes_changed += *changed;
  }
  return r;
}

std::vector<double> Decode(const std::string& raw, bool bf16_out) {
  std::vector<double> out;
  if (bf16_out) {
    out.resize(raw.size() / 2);
    for (size_t e = 0; e < out.size(); ++e) {
      uint16_t v;
      std::memcpy(&v, raw.data() + 2 * e, 2);
      out[e] = workloads::Bf16ToFloat(v);
    }
  } else {
    out.resize(raw.size() / 4);
    for (size_t e = 0; e < out.size(); ++e) {
      float v;
      std::memcpy(&v, raw.data() + 4 * e, 4);
      out[e] = v;
    }
  }
  return out;
}

// The numerical verdict of one launch against the float64 oracle (all output rows, or a random
// sample of whole rows plus the last one for very large shapes).
RowCheck JudgeNumbers(const std::string& name, const LaunchResult& lr, const CaseBuffers& cb,
                      bool bf16_out, const contract::Tolerance& t, uint64_t seed,
                      contract::InputDistribution dist = contract::UNIFORM) {
  const contract::GemmShape& s = cb.shape;
  const std::vector<double> out = Decode(lr.raw_out, bf16_out);
  std::vector<double> ref, compared;
  int sampled = 0;
  if (int64_t(s.m()) * s.n() * s.k() <= (int64_t{1} << 31)) {
    ref = workloads::ReferenceGemm(cb.host.a, cb.host.b, s.m(), s.n(), s.k());
    compared = out;
  } else {
    std::mt19937_64 pick(seed ^ 0x5eed);
    std::vector<int> rows;
    for (int r = 0; r < kSampledRows; ++r)
      rows.push_back(static_cast<int>(pick() % static_cast<uint64_t>(s.m())));
    rows.push_back(s.m() - 1);
    sampled = static_cast<int>(rows.size());
    ref = workloads::ReferenceGemmRows(cb.host.a, cb.host.b, s.n(), s.k(), rows);
    for (int r : rows)
      compared.insert(compared.end(), out.begin() + int64_t(r) * s.n(),
                      out.begin() + int64_t(r + 1) * s.n());
  }
  // The tolerance is stated for unit-scale inputs: scaled inputs scale its absolute part exactly.
  const double atol = t.atol() * workloads::AbsoluteToleranceScale(dist);
  const auto cmp =
      workloads::CompareUnderPolicy(compared, ref, t.rtol(), atol, t.max_relative_l2());
  RowCheck rc;
  rc.set_row(name);
  rc.set_m(s.m());
  rc.set_n(s.n());
  rc.set_k(s.k());
  rc.set_seed(std::to_string(seed));
  rc.set_non_finite(std::max(cmp.numbers.non_finite, lr.unwritten));
  rc.set_out_of_tolerance(cmp.numbers.out_of_tolerance);
  rc.set_max_abs_error(cmp.numbers.max_abs_error);
  rc.set_relative_l2_error(cmp.numbers.relative_l2_error);
  rc.set_nonfinite_policy_violations(cmp.policy_violations);
  rc.set_sampled_rows(sampled);
  rc.set_passed(cmp.passed && lr.unwritten == 0);
  if (lr.unwritten > 0)
    rc.set_failure(absl::StrCat(lr.unwritten, " output elements never written (poison left)"));
  else if (cmp.policy_violations > 0)
    rc.set_failure(absl::StrCat(cmp.policy_violations,
                                " outputs break the NaN/Inf policy (non-finite where the oracle is "
                                "finite, or the wrong non-finite value)"));
  else if (!cmp.passed)
    rc.set_failure(absl::StrFormat(
        "%d elements out of tolerance; relative L2 error %.3g (limit %.3g)",
        cmp.numbers.out_of_tolerance, cmp.numbers.relative_l2_error, t.max_relative_l2()));
  return rc;
}

// Mutation verdict of one launch: inputs unchanged (unless the contract makes them mutable) and
// guards intact.
RowCheck JudgeMutation(const std::string& name, const std::string& role, const LaunchResult& lr,
                       const CaseBuffers& cb, bool inputs_mutable) {
  RowCheck rc;
  rc.set_row(name);
  rc.set_role(role);
  rc.set_m(cb.shape.m());
  rc.set_n(cb.shape.n());
  rc.set_k(cb.shape.k());
  rc.set_input_bytes_changed(lr.input_bytes_changed);
  rc.set_guard_bytes_changed(lr.guard_bytes_changed);
  const bool inputs_ok = inputs_mutable || lr.input_bytes_changed == 0;
  rc.set_passed(inputs_ok && lr.guard_bytes_changed == 0);
  if (!inputs_ok)
    rc.set_failure(absl::StrCat(lr.input_bytes_changed, " input bytes changed by the call"));
  else if (lr.guard_bytes_changed > 0)
    rc.set_failure(absl::StrCat(lr.guard_bytes_changed,
                                " guard bytes around A/B/C overwritten (write out of bounds)"));
  return rc;
}

EvidenceRecord Record(evidence::EvidenceKind kind, const std::string& device, uint64_t seed) {
  EvidenceRecord r;
  r.set_kind(kind);
  r.set_device(device);
  r.set_seed(seed);
  return r;
}

void Finish(EvidenceRecord* r, const std::string& what) {
  int failed = 0, total = r->cases_size();
  std::string first;
  for (const RowCheck& c : r->cases())
    if (!c.passed()) {
      if (failed++ == 0) first = absl::StrCat(c.row(), ": ", c.failure());
    }
  r->set_status(failed == 0 ? evidence::PASSED : evidence::FAILED);
  if (failed > 0) r->set_failure(first);
  r->set_summary(absl::StrCat(what, ": ", total - failed, "/", total, " cases pass"));
}

void NotRun(EvidenceRecord* r, const std::string& why) {
  r->set_status(evidence::NOT_RUN);
  r->set_failure(why);
  r->set_summary(absl::StrCat("not run: ", why));
}

}  // namespace

int64_t CountPoison(const std::string& raw, bool bf16_out) {
  int64_t n = 0;
  if (bf16_out) {
    for (size_t e = 0; e + 1 < raw.size(); e += 2)
      n += static_cast<uint8_t>(raw[e]) == 0xFF && static_cast<uint8_t>(raw[e + 1]) == 0xFF;
  } else {
    for (size_t e = 0; e + 3 < raw.size(); e += 4) {
      uint32_t v;
      std::memcpy(&v, raw.data() + e, 4);
      n += v == 0xFFFFFFFFu;
    }
  }
  return n;
}

ValidationOutcome RunValidation(const Gpu& g, const KernelImage& kernel,
                                const contract::Contract& c, uint64_t seed) {
  const CudaDriver& d = *g.driver;
  const bool bf16_out = c.output_dtype() != "f32";
  const contract::ValidationPolicy policy = workloads::EffectivePolicy(c);
  const auto deadline = std::chrono::milliseconds(
      int64_t(1000 * (policy.launch_timeout_s() > 0 ? policy.launch_timeout_s() : 10)));
  ValidationOutcome out;
  evidence::Validation& v = out.validation;
  v.set_device(g.ctx->name());
  v.set_seed(seed);
  EvidenceRecord numerical = Record(evidence::NUMERICAL_CONTRACT, v.device(), seed);
  EvidenceRecord mutation = Record(evidence::MUTATION_AND_LIFECYCLE, v.device(), seed);
  EvidenceRecord determinism = Record(evidence::REPEATED_EXECUTION_DETERMINISM, v.device(), seed);
  std::string lost;  // why the context is gone, once it is

  CUstream stream = nullptr;
  absl::Status st = d.Check(d.StreamCreate(&stream, CU_STREAM_NON_BLOCKING), "cuStreamCreate");
  if (!st.ok()) lost = std::string(st.message());

  // Any failure of a launch or a read-back: a sticky error or a hang loses the context; another
  // error (an allocation) fails the case but keeps going.
  auto fail_case = [&](EvidenceRecord* r, const std::string& name, const absl::Status& s) {
    RowCheck* rc = r->add_cases();
    rc->set_row(name);
    rc->set_passed(false);
    rc->set_failure(std::string(s.message()));
    if (d.context_lost) {
      lost = absl::StrCat("the context was lost in case ", name, ": ", s.message());
      out.device_fault = true;
    }
  };

  // 1. Numerical contract: each case on a freshly loaded module.
  const auto cases = workloads::CaseCatalogue(c, kernel.receipt.tile_m(), kernel.receipt.tile_n());
  int64_t launches = 0;
  for (size_t i = 0; i < cases.size() && lost.empty(); ++i) {
    const GemmCase& gc = cases[i];
    const uint64_t case_seed = CaseSeed(seed, i + 1);
    numerical.mutable_coverage()->add_cases(gc.name);
    auto module = GemmKernel::Load(d, kernel.cubin, kernel.receipt);
    if (!module.ok()) {
      fail_case(&numerical, gc.name, module.status());
      continue;
    }
    auto cb = MakeBuffers(d, gc.shape, bf16_out);
    absl::Status s = cb.ok()
                         ? SetInputs(&*cb, workloads::MakeInputs(gc.shape, gc.inputs, case_seed))
                         : cb.status();
    if (!s.ok()) {
      fail_case(&numerical, gc.name, s);
      continue;
    }
    auto lr = LaunchAndRead(g, stream, **module, *cb, bf16_out, deadline);
    ++launches;
    if (!lr.ok()) {
      fail_case(&numerical, gc.name, lr.status());
      continue;
    }
    RowCheck rc = JudgeNumbers(gc.name, *lr, *cb, bf16_out, c.tolerance(), case_seed, gc.inputs);
    rc.set_role(gc.role);
    rc.set_distribution(contract::InputDistribution_Name(gc.inputs));
    *numerical.add_cases() = rc;
    *mutation.add_cases() = JudgeMutation(gc.name, gc.role, *lr, *cb, policy.inputs_mutable());
  }
  numerical.mutable_coverage()->set_launches(launches);
  numerical.mutable_coverage()->set_scope(
      "every catalogue case once on a fresh module; outputs poisoned and checked written");
  numerical.mutable_coverage()->set_not_covered(
      "shapes outside the catalogue; rows above 2^31 MACs compare 97 sampled output rows");
  if (lost.empty() || numerical.cases_size() > 0) Finish(&numerical, "numerical contract");
  if (!lost.empty() && numerical.status() == evidence::PASSED) NotRun(&numerical, lost);

  // 2. Lifecycle on one module: buffer reuse with new contents, new buffers with the same
  // contents, a shape change, and the same call repeated.
  const bool lost_before_lifecycle = !lost.empty();
  if (lost.empty()) {
    auto module = GemmKernel::Load(d, kernel.cubin, kernel.receipt);
    contract::GemmShape small, other;
    small.set_m(256), small.set_n(192), small.set_k(264);
    other.set_m(392), other.set_n(264), other.set_k(136);
    auto x = MakeBuffers(d, small, bf16_out);
    auto y = MakeBuffers(d, small, bf16_out);  // allocated while x lives: other addresses
    auto z = MakeBuffers(d, other, bf16_out);
    absl::Status s = !module.ok() ? module.status()
                     : !x.ok()    ? x.status()
                     : !y.ok()    ? y.status()
                                  : z.status();
    struct Step {
      const char* name;
      CaseBuffers* buffers;
      uint64_t contents;  // 0 = keep the buffers' contents
    };
    const uint64_t s1 = CaseSeed(seed, 1001), s2 = CaseSeed(seed, 1002), s3 = CaseSeed(seed, 1003),
                   s4 = CaseSeed(seed, 1004);
    std::vector<Step> steps;
    if (s.ok())
      steps = {{"lifecycle_first_call", &*x, s1},
               {"lifecycle_same_buffers_new_contents", &*x, s2},
               {"lifecycle_new_buffers_same_contents", &*y, s2},
               {"lifecycle_shape_change", &*z, s3},
               {"lifecycle_back_to_first_buffers", &*x, s4},
               {"lifecycle_identical_call_repeated", &*x, 0}};
    else
      fail_case(&mutation, "lifecycle", s);
    for (const Step& step : steps) {
      if (!lost.empty()) break;
      if (step.contents != 0) {
        s = SetInputs(step.buffers,
                      workloads::MakeInputs(step.buffers->shape, contract::UNIFORM, step.contents));
        if (!s.ok()) {
          fail_case(&mutation, step.name, s);
          continue;
        }
      }
      auto lr = LaunchAndRead(g, stream, **module, *step.buffers, bf16_out, deadline);
      ++launches;
      if (!lr.ok()) {
        fail_case(&mutation, step.name, lr.status());
        continue;
      }
      RowCheck num =
          JudgeNumbers(step.name, *lr, *step.buffers, bf16_out, c.tolerance(), step.contents);
      RowCheck mut =
          JudgeMutation(step.name, "lifecycle", *lr, *step.buffers, policy.inputs_mutable());
      // One row per step: numbers and mutation together.
      mut.set_non_finite(num.non_finite());
      mut.set_out_of_tolerance(num.out_of_tolerance());
      mut.set_max_abs_error(num.max_abs_error());
      mut.set_relative_l2_error(num.relative_l2_error());
      mut.set_seed(num.seed());
      if (!num.passed()) {
        mut.set_passed(false);
        mut.set_failure(absl::StrCat("wrong result after earlier calls: ", num.failure()));
      }
      *mutation.add_cases() = mut;
      mutation.mutable_coverage()->add_cases(step.name);
    }
  }
  mutation.mutable_coverage()->set_launches(launches);
  mutation.mutable_coverage()->set_scope(
      "input bytes and 4 KiB canary guards around A, B and C after every launch; repeated calls "
      "on one module with buffer reuse, new buffers, a shape change and an identical repeat");
  mutation.mutable_coverage()->set_not_covered(
      "writes farther than 4 KiB outside the buffers (memcheck covers them); graph capture and "
      "multiple streams");
  Finish(&mutation, "mutation and lifecycle");
  if (lost_before_lifecycle && mutation.status() == evidence::PASSED) NotRun(&mutation, lost);

  // 3. Determinism: the same inputs twice, bitwise.
  const bool lost_before_determinism = !lost.empty();
  if (lost.empty()) {
    contract::GemmShape ds;
    ds.set_m(1032), ds.set_n(1000), ds.set_k(1000);
    auto module = GemmKernel::Load(d, kernel.cubin, kernel.receipt);
    auto cb = MakeBuffers(d, ds, bf16_out);
    const uint64_t ds_seed = CaseSeed(seed, 2001);
    absl::Status s = !module.ok() ? module.status()
                     : !cb.ok()
                         ? cb.status()
                         : SetInputs(&*cb, workloads::MakeInputs(ds, contract::UNIFORM, ds_seed));
    std::optional<LaunchResult> first;
    for (int run = 0; run < 2 && s.ok() && lost.empty(); ++run) {
      auto lr = LaunchAndRead(g, stream, **module, *cb, bf16_out, deadline);
      if (!lr.ok()) {
        s = lr.status();
        break;
      }
      if (run == 0) {
        first = std::move(*lr);
        continue;
      }
      RowCheck rc;
      rc.set_row("determinism_1032x1000x1000");
      rc.set_m(ds.m()), rc.set_n(ds.n()), rc.set_k(ds.k());
      rc.set_seed(std::to_string(ds_seed));
      int64_t differing = 0;
      const size_t width = bf16_out ? 2 : 4;
      for (size_t e = 0; e < lr->raw_out.size(); e += width)
        differing += std::memcmp(lr->raw_out.data() + e, first->raw_out.data() + e, width) != 0;
      const int64_t unwritten = std::max(first->unwritten, lr->unwritten);
      rc.set_non_finite(unwritten);
      rc.set_passed(differing == 0 && unwritten == 0);
      if (unwritten > 0)
        rc.set_failure(absl::StrCat(unwritten, " output elements left unwritten in a repeat"));
      else if (differing > 0)
        rc.set_failure(absl::StrCat(differing, " of ", lr->raw_out.size() / width,
                                    " outputs differ bitwise between two runs on the same inputs"));
      *determinism.add_cases() = rc;
      determinism.mutable_coverage()->add_cases(rc.row());
      determinism.mutable_coverage()->set_launches(2);
    }
    if (!s.ok()) fail_case(&determinism, "determinism", s);
  }
  determinism.mutable_coverage()->set_scope("two launches on identical inputs, bitwise");
  determinism.mutable_coverage()->set_not_covered(
      "scheduling perturbation (no timing-perturbation instrumentation here)");
  if (lost_before_determinism)
    NotRun(&determinism, lost);
  else
    Finish(&determinism, "repeated-execution determinism");

  if (stream != nullptr && !d.context_lost) d.StreamDestroy(stream);
  bool all = true;
  std::string failure;
  for (EvidenceRecord* r : {&numerical, &mutation, &determinism}) {
    if (r->status() != evidence::PASSED) {
      all = false;
      if (failure.empty())
        failure = absl::StrCat(evidence::EvidenceKind_Name(r->kind()), " ",
                               evidence::EvidenceStatus_Name(r->status()), ": ", r->failure());
    }
    *v.add_records() = *r;
  }
  *v.mutable_rows() = numerical.cases();
  v.set_passed(all);
  v.set_failure(failure);
  out.device_fault = out.device_fault || d.context_lost;
  return out;
}

absl::StatusOr<std::vector<std::string>> RunForSanitizer(const Gpu& g, const KernelImage& kernel,
                                                         const contract::Contract& c,
                                                         uint64_t seed) {
  const CudaDriver& d = *g.driver;
  const bool bf16_out = c.output_dtype() != "f32";
  auto module = GemmKernel::Load(d, kernel.cubin, kernel.receipt);
  if (!module.ok()) return module.status();
  std::vector<std::string> ran;
  const auto cases =
      workloads::SmallCases(c, kernel.receipt.tile_m(), kernel.receipt.tile_n(), kSanitizerMaxMacs);
  for (size_t i = 0; i < cases.size(); ++i) {
    const GemmCase& gc = cases[i];
    const auto in = workloads::MakeInputs(gc.shape, gc.inputs, CaseSeed(seed, i + 1));
    auto a = DeviceBuffer::Allocate(d, in.a.size() * 2);
    auto b = DeviceBuffer::Allocate(d, in.b.size() * 2);
    auto out = DeviceBuffer::Allocate(d, size_t(gc.shape.m()) * gc.shape.n() * (bf16_out ? 2 : 4));
    if (!a.ok()) return a.status();
    if (!b.ok()) return b.status();
    if (!out.ok()) return out.status();
    absl::Status s = a->Upload(in.a.data(), in.a.size() * 2);
    if (s.ok()) s = b->Upload(in.b.data(), in.b.size() * 2);
    if (s.ok()) s = d.Check(d.MemsetD8(out->ptr(), 0xFF, out->bytes()), "cuMemsetD8");
    if (s.ok())
      s = (*module)->Launch(nullptr, a->ptr(), b->ptr(), out->ptr(), gc.shape.m(), gc.shape.n(),
                            gc.shape.k());
    if (s.ok()) s = d.Check(d.CtxSynchronize(), "kernel execution");
    if (!s.ok()) return s;
    ran.push_back(absl::StrCat(gc.name, " ", gc.shape.m(), "x", gc.shape.n(), "x", gc.shape.k()));
  }
  return ran;
}

}  // namespace cake::gpuqueue
