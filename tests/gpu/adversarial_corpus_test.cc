// The adversarial corpus against the evidence authority, through real cake-worker processes as
// the daemon runs them: each cheating or broken candidate is refused by the evidence record that
// names its defect, and a valid candidate run right after it (fresh worker) validates and times
// normally. Skips cleanly without an sm_90 device. Needs nvcc ($CAKE_NVCC) and, for the sanitizer
// expectations, compute-sanitizer.
#include <gtest/gtest.h>

#include <random>

#include <chrono>

#include "tests/gpu/gpu_test_util.h"

namespace cake {
namespace {

using evidence::EvidenceKind;
using evidence::EvidenceStatus;
using testing::FindRecord;
namespace fs = std::filesystem;

class AdversarialCorpus : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    skip_ = new std::string(testing::GpuSkipReason());
    if (!skip_->empty()) return;
    dir_ = new fs::path(fs::temp_directory_path() / "cake_adversarial");
    auto valid = testing::CorpusKernel("valid", 1, *dir_ / "valid");
    auto bundled = testing::BundledKernel();
    if (!valid.ok() || !bundled.ok()) {
      *skip_ = "cannot build the control kernels: " +
               std::string((valid.ok() ? bundled.status() : valid.status()).message());
      return;
    }
    valid_ = new worker::KernelRef(*valid);
    bundled_ = new worker::KernelRef(*bundled);
  }
  void SetUp() override {
    if (!skip_->empty()) GTEST_SKIP() << *skip_;
  }

  static worker::KernelRef Kernel(const std::string& name, int variant) {
    auto k = testing::CorpusKernel(name, variant, *dir_ / name);
    EXPECT_TRUE(k.ok()) << k.status();
    return k.ok() ? *k : worker::KernelRef();
  }

  static worker::Reply Validate(const worker::KernelRef& k, double* seconds = nullptr) {
    worker::Request r;
    r.set_job_id("validate-" + k.candidate());
    *r.mutable_validate()->mutable_contract() = testing::SmallContract();
    *r.mutable_validate()->mutable_kernel() = k;
    r.mutable_validate()->set_seed(std::random_device{}());
    const auto t0 = std::chrono::steady_clock::now();
    auto reply = testing::InWorker(r);
    if (seconds)
      *seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    EXPECT_TRUE(reply.ok()) << reply.status();
    EXPECT_TRUE(!reply.ok() || reply->ok()) << reply->error();
    return reply.ok() ? *reply : worker::Reply();
  }

  static worker::Reply Sanitize(const worker::KernelRef& k, std::vector<std::string> tools) {
    worker::Request r;
    r.set_job_id("sanitize-" + k.candidate());
    *r.mutable_sanitize()->mutable_contract() = testing::SmallContract();
    *r.mutable_sanitize()->mutable_kernel() = k;
    r.mutable_sanitize()->set_seed(std::random_device{}());
    for (auto& t : tools) r.mutable_sanitize()->add_tools(t);
    auto reply = testing::InWorker(r, 900);
    EXPECT_TRUE(reply.ok()) << reply.status();
    return reply.ok() ? *reply : worker::Reply();
  }

  static worker::Reply Measure(const worker::KernelRef& incumbent,
                               const worker::KernelRef& challenger,
                               const std::vector<std::string>& configs = {"eager/cold"}) {
    worker::Request r;
    r.set_job_id("measure-" + challenger.candidate());
    *r.mutable_measure()->mutable_contract() = testing::SmallContract(configs);
    *r.mutable_measure()->mutable_incumbent() = incumbent;
    *r.mutable_measure()->mutable_challenger() = challenger;
    r.mutable_measure()->set_seed(std::random_device{}());
    auto reply = testing::InWorker(r);
    EXPECT_TRUE(reply.ok()) << reply.status();
    EXPECT_TRUE(!reply.ok() || reply->ok()) << reply->error();
    return reply.ok() ? *reply : worker::Reply();
  }

  static EvidenceStatus StatusOf(const worker::Reply& r, EvidenceKind kind,
                                 const std::string& tool = "") {
    const evidence::EvidenceRecord* rec = FindRecord(r.validation(), kind, tool);
    return rec ? rec->status() : evidence::EVIDENCE_STATUS_UNSPECIFIED;
  }
  static std::string FailureOf(const worker::Reply& r, EvidenceKind kind,
                               const std::string& tool = "") {
    const evidence::EvidenceRecord* rec = FindRecord(r.validation(), kind, tool);
    return rec ? rec->failure() : "(no record)";
  }

  // The valid control, in fresh workers right after whatever ran before: validated and timed.
  static void ExpectValidCandidateStillWorks() {
    worker::Reply v = Validate(*valid_);
    EXPECT_TRUE(v.validation().passed()) << v.validation().failure();
    EXPECT_FALSE(v.device_fault());
    worker::Reply m = Measure(*valid_, *valid_);
    EXPECT_FALSE(m.measurement().invalid()) << m.measurement().invalid_reason();
    EXPECT_NE(m.measurement().verdict(), evidence::INVALID);
    ASSERT_EQ(m.measurement().output_checks_size(), 2);
    for (const auto& chk : m.measurement().output_checks()) {
      EXPECT_GT(chk.launches_checked(), 0);
      EXPECT_EQ(chk.mismatches(), 0) << chk.first_failure();
    }
    ASSERT_GT(m.measurement().rows_size(), 0);
    EXPECT_GT(m.measurement().rows(0).incumbent_us_size(), 0);
  }

  static inline std::string* skip_ = nullptr;
  static inline fs::path* dir_ = nullptr;
  static inline worker::KernelRef* valid_ = nullptr;
  static inline worker::KernelRef* bundled_ = nullptr;
};

TEST_F(AdversarialCorpus, ValidControlPassesEveryRecordAndTimesCleanly) {
  worker::Reply v = Validate(*valid_);
  for (const auto& r : v.validation().records())
    EXPECT_EQ(r.status(), evidence::PASSED) << r.summary() << ": " << r.failure();
  worker::Reply s = Sanitize(*valid_, {"memcheck", "racecheck", "initcheck", "synccheck"});
  for (const auto& r : s.validation().records())
    EXPECT_EQ(r.status(), evidence::PASSED) << r.tool() << ": " << r.failure();
  // The generated kernel vs the corpus control, in every configuration.
  worker::Reply m = Measure(*bundled_, *valid_, {"eager/cold", "eager/warm", "graph/cold"});
  EXPECT_FALSE(m.measurement().invalid()) << m.measurement().invalid_reason();
  EXPECT_EQ(m.measurement().rows_size(), 3);
  for (const auto& chk : m.measurement().output_checks()) EXPECT_EQ(chk.mismatches(), 0);
  std::printf("control vs bundled: %s, geomean ratio %.3f (%s)\n",
              evidence::TimingVerdict_Name(m.measurement().verdict()).c_str(),
              m.measurement().weighted_geomean_ratio(), m.measurement().cupti().c_str());
}

TEST_F(AdversarialCorpus, OutputReusedFromAPreviousCallFailsLifecycleAndTimedOutputs) {
  const auto k = Kernel("stale_output", 2);
  worker::Reply v = Validate(k);
  // Every numerical case runs on a fresh module, where the first call is honest...
  EXPECT_EQ(StatusOf(v, evidence::NUMERICAL_CONTRACT), evidence::PASSED)
      << FailureOf(v, evidence::NUMERICAL_CONTRACT);
  // ...the second call on one module leaves the poison in place.
  EXPECT_EQ(StatusOf(v, evidence::MUTATION_AND_LIFECYCLE), evidence::FAILED);
  EXPECT_NE(FailureOf(v, evidence::MUTATION_AND_LIFECYCLE).find("never written"), std::string::npos)
      << FailureOf(v, evidence::MUTATION_AND_LIFECYCLE);
  worker::Reply m = Measure(*valid_, k);
  EXPECT_TRUE(m.measurement().invalid());
  EXPECT_EQ(m.measurement().verdict(), evidence::INVALID);
  ASSERT_EQ(m.measurement().output_checks_size(), 2);
  EXPECT_GT(m.measurement().output_checks(1).mismatches(), 0);
  EXPECT_EQ(m.measurement().output_checks(0).mismatches(), 0);
  ExpectValidCandidateStillWorks();
}

TEST_F(AdversarialCorpus, ResultCachedAcrossCallsFailsLifecycleAndTimedOutputs) {
  const auto k = Kernel("cached_result", 3);
  worker::Reply v = Validate(k);
  EXPECT_EQ(StatusOf(v, evidence::MUTATION_AND_LIFECYCLE), evidence::FAILED);
  // Warm samples repeat each launch (output re-poisoned in between): the cache answers the
  // repeat and leaves the poison.
  worker::Reply m = Measure(*valid_, k, {"eager/warm"});
  EXPECT_TRUE(m.measurement().invalid());
  ASSERT_EQ(m.measurement().output_checks_size(), 2);
  EXPECT_GT(m.measurement().output_checks(1).mismatches(), 0);
  ExpectValidCandidateStillWorks();
}

TEST_F(AdversarialCorpus, WorkSkippedForRepeatedInputsFailsLifecycleAndDeterminism) {
  const auto k = Kernel("skip_repeated", 4);
  worker::Reply v = Validate(k);
  EXPECT_EQ(StatusOf(v, evidence::MUTATION_AND_LIFECYCLE), evidence::FAILED);
  EXPECT_EQ(StatusOf(v, evidence::REPEATED_EXECUTION_DETERMINISM), evidence::FAILED);
  ExpectValidCandidateStillWorks();
}

TEST_F(AdversarialCorpus, ModifiedInputsFailMutationAndTimedChecksums) {
  const auto k = Kernel("inputs_modified", 5);
  worker::Reply v = Validate(k);
  EXPECT_EQ(StatusOf(v, evidence::MUTATION_AND_LIFECYCLE), evidence::FAILED);
  EXPECT_NE(FailureOf(v, evidence::MUTATION_AND_LIFECYCLE).find("input bytes changed"),
            std::string::npos)
      << FailureOf(v, evidence::MUTATION_AND_LIFECYCLE);
  worker::Reply m = Measure(*valid_, k);
  EXPECT_TRUE(m.measurement().invalid());
  ASSERT_EQ(m.measurement().output_checks_size(), 2);
  EXPECT_GT(m.measurement().output_checks(1).inputs_modified(), 0);
  ExpectValidCandidateStillWorks();
}

TEST_F(AdversarialCorpus, RacingPipelineFailsRacecheck) {
  const auto k = Kernel("racing_pipeline", 6);
  worker::Reply s = Sanitize(k, {"racecheck"});
  EXPECT_EQ(StatusOf(s, evidence::SANITIZER, "racecheck"), evidence::FAILED)
      << FailureOf(s, evidence::SANITIZER, "racecheck");
  ExpectValidCandidateStillWorks();
}

TEST_F(AdversarialCorpus, OutOfBoundsWriteFailsGuardsAndMemcheck) {
  const auto k = Kernel("oob_write", 7);
  worker::Reply v = Validate(k);
  EXPECT_EQ(StatusOf(v, evidence::MUTATION_AND_LIFECYCLE), evidence::FAILED);
  EXPECT_NE(FailureOf(v, evidence::MUTATION_AND_LIFECYCLE).find("guard bytes"), std::string::npos)
      << FailureOf(v, evidence::MUTATION_AND_LIFECYCLE);
  worker::Reply s = Sanitize(k, {"memcheck"});
  EXPECT_EQ(StatusOf(s, evidence::SANITIZER, "memcheck"), evidence::FAILED)
      << FailureOf(s, evidence::SANITIZER, "memcheck");
  ExpectValidCandidateStillWorks();
}

TEST_F(AdversarialCorpus, CorrectOnlyOnZerosFailsNumerical) {
  const auto k = Kernel("zeros_only", 8);
  worker::Reply v = Validate(k);
  EXPECT_EQ(StatusOf(v, evidence::NUMERICAL_CONTRACT), evidence::FAILED);
  EXPECT_FALSE(v.validation().passed());
  ExpectValidCandidateStillWorks();
}

TEST_F(AdversarialCorpus, HangIsStoppedByTheLaunchWatchdog) {
  const auto k = Kernel("hang", 9);
  double seconds = 0;
  worker::Reply v = Validate(k, &seconds);
  EXPECT_EQ(StatusOf(v, evidence::NUMERICAL_CONTRACT), evidence::FAILED);
  EXPECT_NE(FailureOf(v, evidence::NUMERICAL_CONTRACT).find("hang"), std::string::npos)
      << FailureOf(v, evidence::NUMERICAL_CONTRACT);
  EXPECT_EQ(StatusOf(v, evidence::MUTATION_AND_LIFECYCLE), evidence::NOT_RUN);
  EXPECT_TRUE(v.device_fault());
  EXPECT_LT(seconds, 60) << "the 5 s launch watchdog, not the job timeout, ended it";
  ExpectValidCandidateStillWorks();
}

TEST_F(AdversarialCorpus, StickyFaultIsContainedInItsWorker) {
  const auto k = Kernel("sticky_fault", 10);
  worker::Reply v = Validate(k);
  EXPECT_EQ(StatusOf(v, evidence::NUMERICAL_CONTRACT), evidence::FAILED);
  EXPECT_NE(FailureOf(v, evidence::NUMERICAL_CONTRACT).find("ILLEGAL_ADDRESS"), std::string::npos)
      << FailureOf(v, evidence::NUMERICAL_CONTRACT);
  EXPECT_TRUE(v.device_fault());
  ExpectValidCandidateStillWorks();
}

TEST_F(AdversarialCorpus, DeviceErrorMidMeasurementInvalidatesTheRun) {
  const auto k = Kernel("fault_after_calls", 11);
  worker::Reply v = Validate(k);
  EXPECT_TRUE(v.validation().passed()) << v.validation().failure();
  worker::Reply m = Measure(*valid_, k);
  EXPECT_TRUE(m.measurement().invalid());
  EXPECT_EQ(m.measurement().verdict(), evidence::INVALID);
  EXPECT_NE(m.measurement().invalid_reason().find("ILLEGAL_ADDRESS"), std::string::npos)
      << m.measurement().invalid_reason();
  EXPECT_TRUE(m.device_fault());
  ExpectValidCandidateStillWorks();
}

}  // namespace
}  // namespace cake
