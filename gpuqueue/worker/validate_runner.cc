#include "validate_runner.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <optional>
#include <random>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "workloads/numeric.h"
#include "workloads/workload.h"

namespace cake::gpuqueue {
namespace {

using evidence::EvidenceRecord;
using evidence::RowCheck;

constexpr size_t kGuardBytes = 4096;
constexpr uint8_t kCanary = 0xA5;
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

// One case's device tensors ([guard | payload | guard] each), its host inputs and its scalars.
struct CaseBuffers {
  contract::ProblemShape problem;
  std::vector<workloads::TensorSpec> specs;
  std::map<std::string, Guarded> tensors;
  workloads::TensorBytes inputs;
  KernelArgs args;
};

absl::StatusOr<CaseBuffers> MakeBuffers(const CudaDriver& d, const workloads::Workload& w,
                                        const contract::Contract& c,
                                        const contract::ProblemShape& p) {
  CaseBuffers cb;
  cb.problem = p;
  cb.specs = w.Tensors(p, c);
  for (const workloads::TensorSpec& t : cb.specs) {
    auto g = Guarded::Allocate(d, t.bytes);
    if (!g.ok()) return g.status();
    cb.args.tensors[t.name] = g->payload();
    cb.tensors.emplace(t.name, std::move(*g));
  }
  cb.args.scalars = w.Scalars(p);
  return cb;
}

absl::Status SetInputs(CaseBuffers* cb, workloads::TensorBytes in) {
  cb->inputs = std::move(in);
  for (const workloads::TensorSpec& t : cb->specs) {
    if (t.output) continue;
    auto it = cb->inputs.find(t.name);
    if (it == cb->inputs.end() || it->second.size() != t.bytes)
      return absl::InternalError(absl::StrCat("the workload made no input '", t.name, "'"));
    absl::Status s = cb->tensors.at(t.name).Upload(it->second.data());
    if (!s.ok()) return s;
  }
  return absl::OkStatus();
}

// What one launch left behind.
struct LaunchResult {
  workloads::TensorBytes outputs;
  int64_t unwritten = 0;
  int64_t input_bytes_changed = 0;
  int64_t guard_bytes_changed = 0;
};

int64_t BytesDiffering(const std::string& got, const std::string& want) {
  int64_t n = 0;
  for (size_t i = 0; i < got.size() && i < want.size(); ++i) n += got[i] != want[i];
  return n;
}

// Poison, launch, wait (watchdog), read back outputs, inputs and guards.
// `entry` < 0: the entry dispatch picks.
absl::StatusOr<LaunchResult> LaunchAndRead(const Gpu& g, CUstream stream, const Kernel& k,
                                           int entry, const CaseBuffers& cb,
                                           std::chrono::milliseconds deadline) {
  const CudaDriver& d = *g.driver;
  absl::Status s;
  for (const workloads::TensorSpec& t : cb.specs)
    if (t.output && s.ok()) s = cb.tensors.at(t.name).Poison(d);
  if (s.ok()) s = entry < 0 ? k.Launch(stream, cb.args) : k.LaunchEntry(stream, cb.args, entry);
  if (s.ok()) s = d.WaitStream(stream, deadline, "kernel execution");
  if (!s.ok()) return s;
  LaunchResult r;
  for (const workloads::TensorSpec& t : cb.specs) {
    std::string bytes(t.bytes, '\0');
    s = cb.tensors.at(t.name).Download(bytes.data());
    if (!s.ok()) return s;
    if (t.output) {
      r.unwritten += CountPoison(bytes, t.element_bytes);
      r.outputs[t.name] = std::move(bytes);
    } else {
      r.input_bytes_changed += BytesDiffering(bytes, cb.inputs.at(t.name));
    }
    auto changed = cb.tensors.at(t.name).GuardBytesChanged();
    if (!changed.ok()) return changed.status();
    r.guard_bytes_changed += *changed;
  }
  return r;
}

// The numbers of one launch against the workload's independent oracle.
RowCheck JudgeNumbers(const std::string& name, const LaunchResult& lr, const CaseBuffers& cb,
                      const workloads::Workload& w, const contract::Contract& c, uint64_t seed,
                      contract::InputDistribution dist = contract::UNIFORM) {
  RowCheck rc;
  rc.set_row(name);
  *rc.mutable_problem() = cb.problem;
  rc.set_seed(std::to_string(seed));
  w.Judge(cb.problem, c, dist, seed, cb.inputs, lr.outputs, lr.unwritten, &rc);
  return rc;
}

// Mutation verdict of one launch: inputs unchanged (unless the contract makes them mutable) and
// guards intact.
RowCheck JudgeMutation(const std::string& name, const std::string& role, const LaunchResult& lr,
                       const CaseBuffers& cb, bool inputs_mutable) {
  RowCheck rc;
  rc.set_row(name);
  rc.set_role(role);
  *rc.mutable_problem() = cb.problem;
  rc.set_input_bytes_changed(lr.input_bytes_changed);
  rc.set_guard_bytes_changed(lr.guard_bytes_changed);
  const bool inputs_ok = inputs_mutable || lr.input_bytes_changed == 0;
  rc.set_passed(inputs_ok && lr.guard_bytes_changed == 0);
  if (!inputs_ok)
    rc.set_failure(absl::StrCat(lr.input_bytes_changed, " input bytes changed by the call"));
  else if (lr.guard_bytes_changed > 0)
    rc.set_failure(absl::StrCat(lr.guard_bytes_changed,
                                " guard bytes around the tensors overwritten (write out of "
                                "bounds)"));
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

// The tile sizes of every kernel of the image (a portfolio's entries each have their own), so
// the derived boundary cases cover each member's tails.
std::vector<workloads::Tiles> TilesOfImage(const KernelImage& k) {
  if (k.entries.empty()) return {workloads::TilesOf(k.receipt.launch())};
  std::vector<workloads::Tiles> out;  // the entries include the fallback, whose receipt k's is
  for (const KernelEntryImage& e : k.entries) out.push_back(workloads::TilesOf(e.receipt.launch()));
  return out;
}

// `catalogue` for each tile set, merged by case name (the first of a name is kept).
template <typename Catalogue>
std::vector<workloads::Case> MergedCases(const KernelImage& k, Catalogue catalogue) {
  std::vector<workloads::Case> out;
  std::set<std::string> names;
  for (const workloads::Tiles& t : TilesOfImage(k))
    for (workloads::Case& c : catalogue(t))
      if (names.insert(c.name).second) out.push_back(std::move(c));
  return out;
}

}  // namespace

int64_t CountPoison(const std::string& raw, int element_bytes) {
  int64_t n = 0;
  const size_t w = static_cast<size_t>(std::max(element_bytes, 1));
  for (size_t e = 0; e + w <= raw.size(); e += w) {
    bool all = true;
    for (size_t b = 0; b < w && all; ++b) all = static_cast<uint8_t>(raw[e + b]) == 0xFF;
    n += all;
  }
  return n;
}

ValidationOutcome RunValidation(const Gpu& g, const KernelImage& kernel,
                                const contract::Contract& c, uint64_t seed) {
  const CudaDriver& d = *g.driver;
  ValidationOutcome out;
  const workloads::Workload* wp = workloads::FindWorkload(c.operation());
  if (wp == nullptr) {
    out.validation.set_failure(std::string(workloads::UnknownOperation(c.operation()).message()));
    return out;
  }
  const workloads::Workload& w = *wp;
  const contract::ValidationPolicy policy = workloads::EffectivePolicy(c, w);
  const auto deadline = std::chrono::milliseconds(
      int64_t(1000 * (policy.launch_timeout_s() > 0 ? policy.launch_timeout_s() : 10)));
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
  const auto cases = MergedCases(
      kernel, [&](const workloads::Tiles& t) { return workloads::CaseCatalogue(c, w, t); });
  int64_t launches = 0;
  for (size_t i = 0; i < cases.size() && lost.empty(); ++i) {
    const workloads::Case& gc = cases[i];
    const uint64_t case_seed = CaseSeed(seed, i + 1);
    numerical.mutable_coverage()->add_cases(gc.name);
    auto module = LoadImage(d, kernel);
    if (!module.ok()) {
      fail_case(&numerical, gc.name, module.status());
      continue;
    }
    auto cb = MakeBuffers(d, w, c, gc.problem);
    absl::Status s =
        cb.ok() ? SetInputs(&*cb, w.MakeInputs(gc.problem, gc.inputs, case_seed)) : cb.status();
    if (!s.ok()) {
      fail_case(&numerical, gc.name, s);
      continue;
    }
    // The entry dispatch picks runs the case under its own name (what a runtime runs); a
    // portfolio's other entries whose guards admit the case run it too, as "case @member": each
    // member is validated on every case its guard admits.
    auto dispatched = (*module)->Dispatch(cb->args.scalars);
    if (!dispatched.ok()) {
      fail_case(&numerical, gc.name, dispatched.status());
      continue;
    }
    std::vector<int> entries = {*dispatched};
    for (int e = *dispatched + 1; e < (*module)->entry_count(); ++e)
      if ((*module)->Admits(e, cb->args.scalars)) entries.push_back(e);
    for (int e : entries) {
      const std::string name =
          e == *dispatched ? gc.name : absl::StrCat(gc.name, " @", (*module)->entry_name(e));
      auto lr = LaunchAndRead(g, stream, **module, e, *cb, deadline);
      ++launches;
      if (!lr.ok()) {
        fail_case(&numerical, name, lr.status());
        if (!lost.empty()) break;
        continue;
      }
      RowCheck rc = JudgeNumbers(name, *lr, *cb, w, c, case_seed, gc.inputs);
      rc.set_role(gc.role);
      rc.set_distribution(contract::InputDistribution_Name(gc.inputs));
      if ((*module)->entry_count() > 1) rc.set_entry((*module)->entry_name(e));
      *numerical.add_cases() = rc;
      *mutation.add_cases() = JudgeMutation(name, gc.role, *lr, *cb, policy.inputs_mutable());
    }
  }
  numerical.mutable_coverage()->set_launches(launches);
  numerical.mutable_coverage()->set_scope(
      "every catalogue case once on a fresh module; outputs poisoned and checked written");
  numerical.mutable_coverage()->set_not_covered(
      "shapes outside the catalogue; very large rows compare sampled outputs (sampled_rows)");
  if (lost.empty() || numerical.cases_size() > 0) Finish(&numerical, "numerical contract");
  if (!lost.empty() && numerical.status() == evidence::PASSED) NotRun(&numerical, lost);

  // 2. Lifecycle on one module: buffer reuse with new contents, new buffers with the same
  // contents, a shape change, and the same call repeated.
  const bool lost_before_lifecycle = !lost.empty();
  if (lost.empty()) {
    auto module = LoadImage(d, kernel);
    const std::vector<contract::ProblemShape> shapes = w.LifecycleShapes();
    auto x = MakeBuffers(d, w, c, shapes.at(0));
    auto y = MakeBuffers(d, w, c, shapes.at(0));  // allocated while x lives: other addresses
    auto z = MakeBuffers(d, w, c, shapes.at(1));
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
                      w.MakeInputs(step.buffers->problem, contract::UNIFORM, step.contents));
        if (!s.ok()) {
          fail_case(&mutation, step.name, s);
          continue;
        }
      }
      auto lr = LaunchAndRead(g, stream, **module, -1, *step.buffers, deadline);
      ++launches;
      if (!lr.ok()) {
        fail_case(&mutation, step.name, lr.status());
        continue;
      }
      RowCheck num = JudgeNumbers(step.name, *lr, *step.buffers, w, c, step.contents);
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
      "input bytes and 4 KiB canary guards around every tensor after every launch; repeated calls "
      "on one module with buffer reuse, new buffers, a shape change and an identical repeat");
  mutation.mutable_coverage()->set_not_covered(
      "writes farther than 4 KiB outside the buffers (memcheck covers them); graph capture and "
      "multiple streams");
  Finish(&mutation, "mutation and lifecycle");
  if (lost_before_lifecycle && mutation.status() == evidence::PASSED) NotRun(&mutation, lost);

  // 3. Determinism: the same inputs twice, bitwise.
  const bool lost_before_determinism = !lost.empty();
  if (lost.empty()) {
    const contract::ProblemShape ds = w.DeterminismShape();
    auto module = LoadImage(d, kernel);
    auto cb = MakeBuffers(d, w, c, ds);
    const uint64_t ds_seed = CaseSeed(seed, 2001);
    absl::Status s = !module.ok() ? module.status()
                     : !cb.ok()   ? cb.status()
                                  : SetInputs(&*cb, w.MakeInputs(ds, contract::UNIFORM, ds_seed));
    std::optional<LaunchResult> first;
    for (int run = 0; run < 2 && s.ok() && lost.empty(); ++run) {
      auto lr = LaunchAndRead(g, stream, **module, -1, *cb, deadline);
      if (!lr.ok()) {
        s = lr.status();
        break;
      }
      if (run == 0) {
        first = std::move(*lr);
        continue;
      }
      RowCheck rc;
      rc.set_row(absl::StrCat("determinism_", w.ShapeText(ds)));
      *rc.mutable_problem() = ds;
      rc.set_seed(std::to_string(ds_seed));
      int64_t differing = 0, elements = 0;
      for (const workloads::TensorSpec& t : cb->specs) {
        if (!t.output) continue;
        const std::string &now = lr->outputs.at(t.name), &before = first->outputs.at(t.name);
        const size_t width = static_cast<size_t>(std::max(t.element_bytes, 1));
        for (size_t e = 0; e + width <= now.size(); e += width, ++elements)
          differing += std::memcmp(now.data() + e, before.data() + e, width) != 0;
      }
      const int64_t unwritten = std::max(first->unwritten, lr->unwritten);
      rc.set_non_finite(unwritten);
      rc.set_passed(differing == 0 && unwritten == 0);
      if (unwritten > 0)
        rc.set_failure(absl::StrCat(unwritten, " output elements left unwritten in a repeat"));
      else if (differing > 0)
        rc.set_failure(absl::StrCat(differing, " of ", elements,
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
  const workloads::Workload* w = workloads::FindWorkload(c.operation());
  if (w == nullptr) return workloads::UnknownOperation(c.operation());
  auto module = LoadImage(d, kernel);
  if (!module.ok()) return module.status();
  std::vector<std::string> ran;
  const auto cases = MergedCases(kernel, [&](const workloads::Tiles& t) {
    return workloads::SmallCases(c, *w, t, kSanitizerMaxMacs);
  });
  for (size_t i = 0; i < cases.size(); ++i) {
    const workloads::Case& gc = cases[i];
    const workloads::TensorBytes in = w->MakeInputs(gc.problem, gc.inputs, CaseSeed(seed, i + 1));
    // Exact-size allocations: one element past a tensor is outside every allocation.
    std::vector<DeviceBuffer> buffers;
    KernelArgs args;
    args.scalars = w->Scalars(gc.problem);
    for (const workloads::TensorSpec& t : w->Tensors(gc.problem, c)) {
      auto b = DeviceBuffer::Allocate(d, t.bytes);
      if (!b.ok()) return b.status();
      absl::Status s = t.output ? d.Check(d.MemsetD8(b->ptr(), 0xFF, b->bytes()), "cuMemsetD8")
                                : b->Upload(in.at(t.name).data(), t.bytes);
      if (!s.ok()) return s;
      args.tensors[t.name] = b->ptr();
      buffers.push_back(std::move(*b));
    }
    absl::Status s = (*module)->Launch(nullptr, args);
    if (s.ok()) s = d.Check(d.CtxSynchronize(), "kernel execution");
    if (!s.ok()) return s;
    ran.push_back(absl::StrCat(gc.name, " ", w->ShapeText(gc.problem)));
  }
  return ran;
}

}  // namespace cake::gpuqueue
