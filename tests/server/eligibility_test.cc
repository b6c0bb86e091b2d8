// Eligibility derivation (seed Appendix A.3): required records must pass; missing required
// evidence is not success; missing optional evidence is not failure; a failed record blocks.
#include <gtest/gtest.h>

#include "server/eligibility.h"
#include "workloads/gemm_bf16/gemm_bf16.h"

namespace cake {
namespace {

using evidence::EvidenceRecord;

contract::Contract WithPolicy() {
  contract::Contract c;
  auto* p = c.mutable_validation();
  auto add = [&](evidence::EvidenceKind k, const std::string& tool, bool required) {
    auto* e = p->add_evidence();
    e->set_kind(k);
    e->set_tool(tool);
    e->set_required(required);
  };
  add(evidence::NUMERICAL_CONTRACT, "", true);
  add(evidence::SANITIZER, "racecheck", true);
  add(evidence::FORMAL_PROOF, "", false);
  return c;
}

EvidenceRecord Rec(evidence::EvidenceKind k, evidence::EvidenceStatus s,
                   const std::string& tool = "", int64_t when = 1) {
  EvidenceRecord r;
  r.set_kind(k);
  r.set_tool(tool);
  r.set_status(s);
  r.set_created_unix_ms(when);
  if (s != evidence::PASSED) r.set_failure("why");
  return r;
}

TEST(Eligibility, RequiredRecordsPassingIsEligibleEvenWithOptionalMissing) {
  const auto e = server::DeriveEligibility(
      WithPolicy(), {Rec(evidence::NUMERICAL_CONTRACT, evidence::PASSED),
                     Rec(evidence::SANITIZER, evidence::PASSED, "racecheck")});
  EXPECT_TRUE(e.eligible()) << e.summary();
  ASSERT_EQ(e.optional_missing_size(), 1);
  EXPECT_EQ(e.optional_missing(0), "formal_proof");
  EXPECT_TRUE(e.missing().empty());
}

TEST(Eligibility, MissingRequiredEvidenceIsNotSuccess) {
  const auto none = server::DeriveEligibility(WithPolicy(), {});
  EXPECT_FALSE(none.eligible());
  EXPECT_EQ(none.missing_size(), 2);
  EXPECT_NE(none.summary().find("missing evidence: numerical_contract, sanitizer:racecheck"),
            std::string::npos)
      << none.summary();
  // NOT_RUN and INCONCLUSIVE count as missing, with their reason.
  const auto not_run = server::DeriveEligibility(
      WithPolicy(), {Rec(evidence::NUMERICAL_CONTRACT, evidence::PASSED),
                     Rec(evidence::SANITIZER, evidence::NOT_RUN, "racecheck")});
  EXPECT_FALSE(not_run.eligible());
  ASSERT_EQ(not_run.missing_size(), 1);
  EXPECT_EQ(not_run.missing(0), "sanitizer:racecheck (why)");
  EXPECT_TRUE(not_run.failed().empty());
  const auto inconclusive = server::DeriveEligibility(
      WithPolicy(), {Rec(evidence::NUMERICAL_CONTRACT, evidence::INCONCLUSIVE),
                     Rec(evidence::SANITIZER, evidence::PASSED, "racecheck")});
  EXPECT_FALSE(inconclusive.eligible());
}

TEST(Eligibility, AFailedRecordBlocksRequiredOrOptionalOrUnlisted) {
  const EvidenceRecord ok_num = Rec(evidence::NUMERICAL_CONTRACT, evidence::PASSED);
  const EvidenceRecord ok_race = Rec(evidence::SANITIZER, evidence::PASSED, "racecheck");
  for (const EvidenceRecord& bad :
       {Rec(evidence::FORMAL_PROOF, evidence::FAILED),           // optional, failed
        Rec(evidence::SANITIZER, evidence::FAILED, "memcheck"),  // not listed, failed
        Rec(evidence::REPEATED_EXECUTION_DETERMINISM, evidence::FAILED)}) {
    const auto e = server::DeriveEligibility(WithPolicy(), {ok_num, ok_race, bad});
    EXPECT_FALSE(e.eligible()) << evidence::EvidenceKind_Name(bad.kind());
    EXPECT_EQ(e.failed_size(), 1);
  }
}

TEST(Eligibility, TheLatestRecordOfAKindDecides) {
  const auto e = server::DeriveEligibility(
      WithPolicy(), {Rec(evidence::NUMERICAL_CONTRACT, evidence::FAILED, "", 1),
                     Rec(evidence::NUMERICAL_CONTRACT, evidence::PASSED, "", 2),
                     Rec(evidence::SANITIZER, evidence::PASSED, "racecheck", 2)});
  EXPECT_TRUE(e.eligible()) << e.summary();
  const auto later_failure = server::DeriveEligibility(
      WithPolicy(), {Rec(evidence::NUMERICAL_CONTRACT, evidence::PASSED, "", 1),
                     Rec(evidence::NUMERICAL_CONTRACT, evidence::FAILED, "", 5),
                     Rec(evidence::SANITIZER, evidence::PASSED, "racecheck", 2)});
  EXPECT_FALSE(later_failure.eligible());
}

TEST(Eligibility, DefaultPolicyRequiresNumericalLifecycleAndDeterminism) {
  contract::Contract c;  // no validation block
  EXPECT_TRUE(server::SanitizerTools(c).empty());
  const auto e = server::DeriveEligibility(c, {});
  ASSERT_EQ(e.missing_size(), 3);
  EXPECT_EQ(e.missing(0), "numerical_contract");
  EXPECT_EQ(e.missing(1), "mutation_and_lifecycle");
  EXPECT_EQ(e.missing(2), "repeated_execution_determinism");
}

const workloads::Workload& Gemm() { return workloads::gemm_bf16::GemmWorkload(); }

TEST(Eligibility, MalformedPoliciesAreRefusedWithAReason) {
  contract::ValidationPolicy p;
  EXPECT_EQ(server::CheckValidationPolicy(p, Gemm()), "");
  auto* e = p.add_evidence();
  e->set_kind(evidence::SANITIZER);
  e->set_tool("valgrind");
  EXPECT_NE(server::CheckValidationPolicy(p, Gemm()).find("unknown sanitizer tool 'valgrind'"),
            std::string::npos);
  e->set_tool("memcheck");
  EXPECT_EQ(server::CheckValidationPolicy(p, Gemm()), "");
  *p.add_evidence() = *e;
  EXPECT_NE(server::CheckValidationPolicy(p, Gemm()).find("listed twice"), std::string::npos);
  p.mutable_evidence()->RemoveLast();
  auto* timed = p.add_evidence();
  timed->set_kind(evidence::TIMED_OUTPUT);
  EXPECT_NE(server::CheckValidationPolicy(p, Gemm()), "");
  p.mutable_evidence()->RemoveLast();
  auto* big = p.add_cases();
  big->set_name("huge");
  *big->mutable_problem() = workloads::gemm_bf16::Problem(8192, 8192, 8192);
  EXPECT_NE(server::CheckValidationPolicy(p, Gemm()).find("too large"), std::string::npos);
  big->mutable_problem()->mutable_gemm_bf16()->set_k(12);
  EXPECT_NE(server::CheckValidationPolicy(p, Gemm()).find("multiple of 8"), std::string::npos);
  EXPECT_EQ(server::CheckValidationPolicy(Gemm().DefaultPolicy(), Gemm()), "");
}

}  // namespace
}  // namespace cake
