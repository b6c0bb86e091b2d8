// Which devices run an object of each target: what gates validation, timing and search on the
// contract's execution target (Orchestrator::ExecutionDeviceFor).
#include <gtest/gtest.h>

#include "compiler/targets.h"

namespace cake::compiler {
namespace {

bool Runs(const char* target, int major, int minor) {
  auto t = TargetByName(target);
  EXPECT_TRUE(t.ok()) << target;
  return t.ok() && RunsOn(**t, major, minor);
}

TEST(Targets, ArchSpecificObjectsRunOnlyOnTheirOwnComputeCapability) {
  EXPECT_TRUE(Runs("sm_90", 9, 0));
  EXPECT_FALSE(Runs("sm_90", 12, 0));
  EXPECT_FALSE(Runs("sm_90", 10, 0));
  EXPECT_TRUE(Runs("sm_120a", 12, 0));
  EXPECT_FALSE(Runs("sm_120a", 12, 1));
  EXPECT_TRUE(Runs("sm_121a", 12, 1));
  EXPECT_FALSE(Runs("sm_121a", 12, 0));
}

TEST(Targets, FamilyAndPlainSm120ObjectsRunOnEvery12x) {
  for (const char* t : {"sm_120f", "sm_120"}) {
    EXPECT_TRUE(Runs(t, 12, 0)) << t;
    EXPECT_TRUE(Runs(t, 12, 1)) << t;
    EXPECT_FALSE(Runs(t, 9, 0)) << t;
    EXPECT_FALSE(Runs(t, 10, 0)) << t;
    EXPECT_FALSE(Runs(t, 0, 0)) << t;  // a capability that was not read runs nothing
  }
}

TEST(Targets, EveryTargetRunsSomewhere) {
  for (const TargetInfo& t : AllTargets()) {
    bool somewhere = false;
    for (int major : {9, 12})
      for (int minor : {0, 1}) somewhere |= RunsOn(t, major, minor);
    EXPECT_TRUE(somewhere) << t.name;
  }
}

}  // namespace
}  // namespace cake::compiler
