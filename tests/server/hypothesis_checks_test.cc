// Hypothesis hygiene without a daemon: each missing or vague field is refused by name; a specific
// hypothesis passes.
#include <gtest/gtest.h>

#include "server/hypothesis_checks.h"

namespace cake::server {
namespace {

evidence::Hypothesis Specific() {
  evidence::Hypothesis h;
  h.set_parent("c1-12345678");
  h.add_changed_decisions("tile");
  h.set_expected_effect("a 128x64 tile doubles the CTAs on N=1024 rows, 10% lower latency");
  h.set_falsification("the paired run on the skinny rows is not FASTER beyond the floor");
  return h;
}

void ExpectRefused(const evidence::Hypothesis& h, const std::string& field) {
  const absl::Status s = CheckHypothesis(h);
  ASSERT_FALSE(s.ok()) << field;
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("hypothesis." + field), std::string::npos) << s.message();
}

TEST(HypothesisChecks, ASpecificHypothesisPasses) { EXPECT_TRUE(CheckHypothesis(Specific()).ok()); }

TEST(HypothesisChecks, EachMissingFieldIsNamed) {
  auto h = Specific();
  h.clear_parent();
  ExpectRefused(h, "parent");
  h = Specific();
  h.clear_changed_decisions();
  ExpectRefused(h, "changed_decisions");
  h = Specific();
  h.set_changed_decisions(0, "  ");
  ExpectRefused(h, "changed_decisions[0]");
  h = Specific();
  h.clear_expected_effect();
  ExpectRefused(h, "expected_effect");
  h = Specific();
  h.clear_falsification();
  ExpectRefused(h, "falsification");
  ExpectRefused(evidence::Hypothesis(), "parent");
}

TEST(HypothesisChecks, VagueTextsAreRefused) {
  for (const char* vague : {"optimise memory", "make it faster", "improve the performance of it",
                            "Optimize memory, better speed!", "try to make it more efficient"}) {
    auto h = Specific();
    h.set_expected_effect(vague);
    ExpectRefused(h, "expected_effect");
    h = Specific();
    h.set_falsification(vague);
    ExpectRefused(h, "falsification");
  }
}

TEST(BranchChecks, NamesAreBoundedAndPlain) {
  for (const char* ok : {"main", "agent-7/tile.sweep", "A_1", "x"})
    EXPECT_TRUE(CheckBranchName(ok).ok()) << ok;
  for (const std::string& bad :
       {std::string(), std::string("-lead"), std::string("/root"), std::string("a b"),
        std::string("tab\t"), std::string("semi;colon"), std::string("a\0b", 3),
        std::string(kMaxBranchNameBytes + 1, 'a')}) {
    const absl::Status s = CheckBranchName(bad);
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << bad;
  }
  EXPECT_TRUE(CheckBranchName(std::string(kMaxBranchNameBytes, 'a')).ok());
}

TEST(BranchChecks, ABranchContinuesFromItsOwnLineOrASharedRoot) {
  // Own branch, shared root, or the first proposal of a new branch (a fork): allowed.
  EXPECT_TRUE(CheckParentBranch("c2", "b", "b", 3, false).ok());
  EXPECT_TRUE(CheckParentBranch("c2", "a", "b", 3, true).ok());
  EXPECT_TRUE(CheckParentBranch("c2", "a", "b", 0, false).ok());
  // Another line's candidate once the branch has a history of its own: refused by name.
  const absl::Status s = CheckParentBranch("c2", "a", "b", 1, false);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("hypothesis.parent 'c2' is on branch 'a'"), std::string::npos)
      << s.message();
}

}  // namespace
}  // namespace cake::server
