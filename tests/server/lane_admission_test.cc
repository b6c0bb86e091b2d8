// The lanes' admission rule as a pure function: the target table decides which devices execute a
// contract; timing jobs stay on the first admitting device's profile; repeats get one lane.
#include "server/lane_admission.h"

#include <gtest/gtest.h>

#include "absl/strings/str_cat.h"

namespace cake::server {
namespace {

using ledger::JobKind;

const compiler::TargetInfo& Target(const char* name) { return **compiler::TargetByName(name); }

gpuqueue::Device Dev(int ordinal, const std::string& model, int major, int minor, int sms,
                     const std::string& uuid) {
  return {ordinal, absl::StrCat(ordinal, ": ", model, " (", major, ".", minor, ")"),
          uuid,    sms,
          major,   minor};
}

TEST(LaneAdmission, TheTargetTableDecidesWhichDevicesExecute) {
  const std::vector<gpuqueue::Device> host = {
      Dev(0, "NVIDIA H100 80GB HBM3", 9, 0, 132, "GPU-0"),
      Dev(1, "NVIDIA GeForce RTX 5090", 12, 0, 170, "GPU-1"),
      Dev(2, "NVIDIA GB10", 12, 1, 48, "GPU-2")};
  struct Case {
    const char* target;
    std::vector<bool> admits;  // per device, for a validate job
  } cases[] = {{"sm_90", {true, false, false}},
               {"sm_120a", {false, true, false}},
               {"sm_121a", {false, false, true}},
               {"sm_120f", {false, true, true}}};
  for (const Case& c : cases)
    for (size_t i = 0; i < host.size(); ++i)
      EXPECT_EQ(LaneAdmits(host[i], JobKind::kValidate, Target(c.target), host), c.admits[i])
          << c.target << " on " << host[i].name;
  EXPECT_EQ(NoDeviceForTarget(Target("sm_90"), host), "");
  const std::vector<gpuqueue::Device> consumer = {host[1], host[2]};
  EXPECT_EQ(NoDeviceForTarget(Target("sm_90"), consumer),
            "no device for target sm_90 on this host: GPU-1 is sm_120 (NVIDIA GeForce RTX 5090 "
            "(12.0)); GPU-2 is sm_121 (NVIDIA GB10 (12.1))");
  EXPECT_EQ(NoDeviceForTarget(Target("sm_120a"), {}),
            "no device for target sm_120a on this host: it has none");
}

TEST(LaneAdmission, TimingJobsStayOnTheFirstAdmittingDevicesProfile) {
  // Two H100s and an H200: all execute sm_90; correctness runs anywhere, timings on the H100s.
  const std::vector<gpuqueue::Device> host = {Dev(0, "NVIDIA H100 80GB HBM3", 9, 0, 132, "GPU-a"),
                                              Dev(1, "NVIDIA H200", 9, 0, 132, "GPU-b"),
                                              Dev(2, "NVIDIA H100 80GB HBM3", 9, 0, 132, "GPU-c")};
  EXPECT_EQ(DeviceProfile(host[0]), "NVIDIA H100 80GB HBM3 (9.0), 132 SMs");
  EXPECT_EQ(DeviceProfile(host[0]), DeviceProfile(host[2]));
  for (JobKind kind : {JobKind::kValidate, JobKind::kSanitize})
    for (const gpuqueue::Device& d : host) EXPECT_TRUE(LaneAdmits(d, kind, Target("sm_90"), host));
  for (JobKind kind : {JobKind::kMeasure, JobKind::kRegress}) {
    EXPECT_TRUE(LaneAdmits(host[0], kind, Target("sm_90"), host));
    EXPECT_FALSE(LaneAdmits(host[1], kind, Target("sm_90"), host)) << "an H200 sample ranked "
                                                                      "with H100 samples";
    EXPECT_TRUE(LaneAdmits(host[2], kind, Target("sm_90"), host));
  }
  // With the first H100 not answering, timing anchors on the next admitting device that does:
  // the H200 (its profile) when it comes first.
  const std::vector<gpuqueue::Device> h200_first = {host[1], host[0]};
  EXPECT_FALSE(LaneAdmits(host[0], JobKind::kMeasure, Target("sm_90"), h200_first));
  EXPECT_TRUE(LaneAdmits(host[0], JobKind::kMeasure, Target("sm_90"), h200_first, {"GPU-b"}));
  EXPECT_FALSE(LaneAdmits(host[1], JobKind::kMeasure, Target("sm_90"), h200_first, {"GPU-b"}));
  // None answering: the first admitting device's profile (timing waits for it).
  EXPECT_TRUE(
      LaneAdmits(host[1], JobKind::kMeasure, Target("sm_90"), h200_first, {"GPU-a", "GPU-b"}));
  // A binned part of the same name is another profile.
  gpuqueue::Device binned = host[2];
  binned.sm_count = 114;
  EXPECT_FALSE(LaneAdmits(binned, JobKind::kMeasure, Target("sm_90"), {host[0], binned}));
}

TEST(LaneAdmission, ADeviceListedTwiceGetsOneLane) {
  const gpuqueue::Device a = Dev(0, "NVIDIA GeForce RTX 5090", 12, 0, 170, "GPU-x");
  const gpuqueue::Device again = Dev(1, "NVIDIA GeForce RTX 5090", 12, 0, 170, "GPU-x");
  const gpuqueue::Device other = Dev(2, "NVIDIA GeForce RTX 5090", 12, 0, 170, "GPU-y");
  const gpuqueue::Device unnamed1 = Dev(3, "old", 9, 0, 132, ""),
                         unnamed2 = Dev(4, "old", 9, 0, 132, "");
  std::vector<std::string> dropped;
  const auto lanes = OneLanePerDevice({a, again, other, unnamed1, unnamed2}, &dropped);
  ASSERT_EQ(lanes.size(), 4u);
  EXPECT_EQ(lanes[0].ordinal, 0);
  EXPECT_EQ(lanes[1].ordinal, 2);
  ASSERT_EQ(dropped.size(), 1u);
  EXPECT_NE(dropped[0].find("GPU-x is listed twice"), std::string::npos) << dropped[0];
  EXPECT_EQ(DeviceLabel(a), "GPU-x");
  EXPECT_EQ(DeviceLabel(unnamed1), "3: old (9.0)");
}

}  // namespace
}  // namespace cake::server
