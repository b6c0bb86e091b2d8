// KMeans variants against the evidence authority, through real cake-worker processes: a naive
// valid assignment and the bundled fused schedule pass and time cleanly; a candidate that reuses
// its first output, one that replays a cached answer for the same buffers and one that skips
// points are each refused, by validation and by the timed-output check. Skips cleanly without an
// sm_90 device. Needs nvcc ($CAKE_NVCC).
#include <gtest/gtest.h>

#include <random>

#include "compiler/compiler.h"
#include "compiler/parse.h"
#include "tests/gpu/gpu_test_util.h"
#include "workloads/kmeans_assign/kmeans_assign.h"

namespace cake {
namespace {

namespace fs = std::filesystem;
using evidence::EvidenceKind;
using workloads::kmeans_assign::Problem;

contract::Contract KMeansContract() {
  contract::Contract c;
  c.set_name("kmeans_gpu_test");
  c.set_operation("kmeans_assign");
  c.set_output_dtype("s32");
  c.mutable_tolerance()->set_rtol(6e-5);
  c.mutable_tolerance()->set_atol(1e-6);
  contract::Row* row = c.add_rows();
  row->set_name("small");
  *row->mutable_problem() = Problem(2, 4096, 256, 64);
  row->set_weight(1);
  row->set_required(true);
  *c.mutable_validation() = workloads::FindWorkload("kmeans_assign")->DefaultPolicy();
  c.mutable_validation()->set_launch_timeout_s(10);
  contract::MeasurementProtocol* p = c.mutable_protocol();
  p->set_pairs(10);
  p->set_max_pairs(30);
  p->set_min_gpu_seconds(0.02);
  p->set_practical_floor(0.02);
  p->set_warmup_launches(2);
  p->add_configurations("eager/cold");
  return c;
}

// A variant of kmeans_variants.cu with the kmeans_argmin ABI: (X, C, idx, dist, B, N, K, D),
// grid ceil(N / 128) x B, 128 threads.
absl::StatusOr<worker::KernelRef> Variant(const std::string& name, int variant,
                                          const fs::path& dir) {
  auto ref = testing::CompileCorpusVariant(name, "tests/workloads/kmeans_assign/kmeans_variants.cu",
                                           "cake_corpus_kmeans", variant, 128, dir);
  if (!ref.ok()) return ref;
  report::LaunchSpec* l = ref->mutable_receipt()->mutable_launch();
  testing::AddLaunchArgs(l, {"X", "C", "idx", "dist"}, {"B", "N", "K", "D"});
  l->mutable_grid_x()->set_extent("N");
  l->mutable_grid_x()->set_divisor(128);
  l->mutable_grid_y()->set_extent("B");
  l->mutable_grid_y()->set_divisor(1);
  return ref;
}

absl::StatusOr<worker::KernelRef> Bundled() {
  auto parsed =
      compiler::ParseModuleFile(testing::SourceDir() + "/examples/kmeans_assign.textproto");
  if (!parsed.ok()) return parsed.status();
  compiler::CompileOptions opts;
  opts.store_root = (fs::temp_directory_path() / "cake_gpu_test_store").string();
  auto target = compiler::TargetByName("sm_90");
  if (!target.ok()) return target.status();
  auto c = compiler::Compile(*parsed, **target, opts);
  if (!c.ok()) return c.status();
  if (!c->receipt || c->receipt->outcome() != report::LoweringReceipt::PASS)
    return absl::InternalError("the bundled KMeans schedule did not lower");
  worker::KernelRef ref;
  ref.set_candidate("bundled_kmeans");
  *ref.mutable_receipt() = *c->receipt;
  return ref;
}

class KMeansAdversarial : public ::testing::Test {
 protected:
  void SetUp() override {
    const std::string skip = testing::GpuSkipReason();
    if (!skip.empty()) GTEST_SKIP() << skip;
    dir_ = fs::temp_directory_path() / "cake_kmeans_adversarial";
  }

  worker::KernelRef Kernel(const std::string& name, int variant) {
    auto k = Variant(name, variant, dir_ / name);
    EXPECT_TRUE(k.ok()) << k.status();
    return k.ok() ? *k : worker::KernelRef();
  }

  static worker::Reply Validate(const worker::KernelRef& k) {
    worker::Request r;
    r.set_job_id("validate-" + k.candidate());
    *r.mutable_validate()->mutable_contract() = KMeansContract();
    *r.mutable_validate()->mutable_kernel() = k;
    r.mutable_validate()->set_seed(std::random_device{}());
    auto reply = testing::InWorker(r);
    EXPECT_TRUE(reply.ok()) << reply.status();
    return reply.ok() ? *reply : worker::Reply();
  }

  static worker::Reply Measure(const worker::KernelRef& incumbent,
                               const worker::KernelRef& challenger) {
    worker::Request r;
    r.set_job_id("measure-" + challenger.candidate());
    *r.mutable_measure()->mutable_contract() = KMeansContract();
    *r.mutable_measure()->mutable_incumbent() = incumbent;
    *r.mutable_measure()->mutable_challenger() = challenger;
    r.mutable_measure()->set_seed(std::random_device{}());
    auto reply = testing::InWorker(r);
    EXPECT_TRUE(reply.ok()) << reply.status();
    return reply.ok() ? *reply : worker::Reply();
  }

  static int64_t Mismatches(const worker::Reply& m) {
    int64_t n = 0;
    for (const auto& chk : m.measurement().output_checks()) n += chk.mismatches();
    return n;
  }

  // Refused by validation (the record named) and, timed against the valid one, by the check.
  void ExpectRefused(const worker::KernelRef& bad, EvidenceKind record) {
    worker::Reply v = Validate(bad);
    EXPECT_FALSE(v.validation().passed()) << bad.candidate();
    const evidence::EvidenceRecord* rec = testing::FindRecord(v.validation(), record);
    ASSERT_NE(rec, nullptr);
    EXPECT_EQ(rec->status(), evidence::FAILED) << bad.candidate() << ": " << rec->failure();
    worker::Reply m = Measure(Kernel("valid", 1), bad);
    EXPECT_TRUE(m.measurement().invalid() || Mismatches(m) > 0)
        << bad.candidate() << " timed without a failed output check";
    std::printf("%s: %s; timed: %s (%lld mismatches)\n", bad.candidate().c_str(),
                rec->failure().c_str(), m.measurement().invalid_reason().c_str(),
                static_cast<long long>(Mismatches(m)));
  }

  fs::path dir_;
};

TEST_F(KMeansAdversarial, ValidAndBundledPassEveryRecordAndTimeCleanly) {
  const worker::KernelRef valid = Kernel("valid", 1);
  auto bundled = Bundled();
  ASSERT_TRUE(bundled.ok()) << bundled.status();
  for (const worker::KernelRef* k : {&valid, static_cast<const worker::KernelRef*>(&*bundled)}) {
    worker::Reply v = Validate(*k);
    for (const auto& r : v.validation().records())
      EXPECT_EQ(r.status(), evidence::PASSED)
          << k->candidate() << " " << r.summary() << ": " << r.failure();
  }
  worker::Reply m = Measure(valid, *bundled);
  EXPECT_FALSE(m.measurement().invalid()) << m.measurement().invalid_reason();
  ASSERT_GT(m.measurement().output_checks_size(), 0);
  for (const auto& chk : m.measurement().output_checks()) {
    EXPECT_GT(chk.launches_checked(), 0);
    EXPECT_EQ(chk.mismatches(), 0) << chk.first_failure();
  }
  std::printf("bundled vs naive valid: %s, geomean ratio %.3f\n",
              evidence::TimingVerdict_Name(m.measurement().verdict()).c_str(),
              m.measurement().weighted_geomean_ratio());
}

TEST_F(KMeansAdversarial, ReusedOutputIsRefused) {
  // Every numerical case runs on a fresh module, where its first call is honest: the second
  // call on one module (lifecycle) leaves the poison in place.
  ExpectRefused(Kernel("stale_output", 2), evidence::MUTATION_AND_LIFECYCLE);
}

TEST_F(KMeansAdversarial, CachedResultIsRefused) {
  ExpectRefused(Kernel("cached_result", 3), evidence::MUTATION_AND_LIFECYCLE);
}

TEST_F(KMeansAdversarial, SkippedPointsAreRefused) {
  ExpectRefused(Kernel("skipped_points", 4), evidence::NUMERICAL_CONTRACT);
}

}  // namespace
}  // namespace cake
