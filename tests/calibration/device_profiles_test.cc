// The consumer Blackwell vendor profiles: present with their cited facts, consistent with the
// compiler's target limits, and uncalibrated: the search's model fitted on no row of such a
// device says so instead of predicting (no other device's rates are borrowed).
#include "calibration/device_profiles.h"

#include <gtest/gtest.h>

#include "compiler/targets.h"
#include "search/search_model.h"

namespace cake::calibration {
namespace {

TEST(VendorSpecs, EveryConsumerBlackwellDeviceIsDescribedAndUncalibrated) {
  const auto& specs = VendorSpecs();
  ASSERT_EQ(specs.size(), 3u);
  const auto rtx5090 = VendorSpecFor("NVIDIA GeForce RTX 5090");
  ASSERT_TRUE(rtx5090.has_value());
  EXPECT_EQ(rtx5090->sm_count, 170);
  EXPECT_EQ(VendorSpecFor("NVIDIA RTX PRO 6000 Blackwell Workstation Edition")->sm_count, 188);
  EXPECT_EQ(VendorSpecFor("NVIDIA GB10")->arch, "sm_121");
  EXPECT_FALSE(VendorSpecFor("NVIDIA H100 80GB HBM3").has_value());  // measured, not a spec
  const int64_t target_limit = (*compiler::TargetByName("sm_120f"))->shared_per_block_optin;
  for (const VendorSpec& s : specs) {
    SCOPED_TRACE(s.device);
    EXPECT_FALSE(s.calibrated);
    EXPECT_FALSE(s.source.empty());
    EXPECT_GT(s.sm_count, 0);
    EXPECT_GT(s.dram_gbytes_per_s, 0);
    EXPECT_EQ(s.shared_per_block_optin, target_limit);
    EXPECT_LE(s.shared_per_block_optin, s.shared_per_sm);
    EXPECT_FALSE(CeilingsFor(s.device).has_value());  // no measured ceiling either
  }
}

TEST(VendorSpecs, ASearchOnOneReportsMissingCalibration) {
  const VendorSpec s = *VendorSpecFor("NVIDIA GeForce RTX 5090");
  DeviceShape shape;
  shape.sm_count = s.sm_count;
  shape.registers_per_sm = s.registers_per_sm;
  shape.shared_per_sm = s.shared_per_sm;
  shape.threads_per_sm = s.threads_per_sm;
  search::ModelRow row;
  row.name = "8192x8192x8192";
  row.extents = {8192, 8192, 8192};
  const search::Calibration c = search::Calibrate({}, {row}, shape);
  EXPECT_FALSE(c.model.fitted);
  EXPECT_NE(c.note.find("uncalibrated: 0 schedule(s) measured on this device profile"),
            std::string::npos)
      << c.note;
}

}  // namespace
}  // namespace cake::calibration
