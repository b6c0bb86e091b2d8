// The Prometheus textfile: every family declared once before its samples, label values escaped,
// GPU lane seconds summed over the GPU job kinds only, and the file replaced whole.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <random>
#include <set>
#include <sstream>

#include "absl/strings/str_split.h"
#include "server/metrics.h"
#include "tests/compiler/test_util.h"

namespace cake::server {
namespace {

TEST(Metrics, FamiliesSamplesAndLabels) {
  std::mt19937 rng(std::random_device{}());
  std::uniform_int_distribution<int> n(1, 40);
  MetricsInput in;
  in.status.set_version("0.1.0");
  in.status.set_queued_jobs(n(rng));
  in.status.set_running_jobs(1);
  (*in.status.mutable_candidates_by_state())["MEASURED"] = 3;
  const int compile_s = n(rng), measure_s = n(rng), validate_s = n(rng);
  in.jobs = {{"compile", "DONE", 4, double(compile_s)},
             {"measure", "DONE", 2, double(measure_s)},
             {"validate", "FAILED", 1, double(validate_s)}};
  in.promotions = {{"ct-\"odd\"\\name", 2}};
  in.sm_mhz = {1980, std::nanf("")};
  v1::DeviceStatus* named = in.status.add_devices();
  named->set_name("0: NVIDIA H100 80GB HBM3 (9.0)");
  named->set_uuid("GPU-a1");
  named->set_busy_seconds(12.5);
  named->set_admitted_queued_jobs(3);
  v1::DeviceStatus* unnamed = in.status.add_devices();
  unnamed->set_name("1: old (9.0)");
  const std::string text = MetricsText(in);
  std::set<std::string> declared;
  for (absl::string_view line : absl::StrSplit(text, '\n', absl::SkipEmpty())) {
    if (absl::StartsWith(line, "# TYPE ")) {
      std::vector<std::string> parts = absl::StrSplit(line, ' ');
      ASSERT_EQ(parts.size(), 4u) << line;
      EXPECT_TRUE(declared.insert(parts[2]).second) << "declared twice: " << line;
      continue;
    }
    if (absl::StartsWith(line, "#")) continue;
    const std::string name(line.substr(0, line.find_first_of("{ ")));
    EXPECT_TRUE(declared.count(name)) << "sample before its TYPE: " << line;
  }
  EXPECT_NE(text.find(absl::StrCat("caked_queue_jobs{state=\"queued\"} ", in.status.queued_jobs())),
            std::string::npos);
  EXPECT_NE(text.find(absl::StrCat("caked_gpu_lane_busy_seconds_total ", measure_s + validate_s,
                                   ".000\n")),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("caked_jobs{kind=\"validate\",state=\"FAILED\"} 1\n"), std::string::npos);
  EXPECT_NE(text.find("caked_promotions_total{contract=\"ct-\\\"odd\\\"\\\\name\"} 2\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("caked_device_sm_clock_mhz{index=\"0\"} 1980\n"), std::string::npos);
  EXPECT_EQ(text.find("index=\"1\""), std::string::npos) << "an unknown clock is left out";
  // Devices by UUID, else by the probe's name.
  EXPECT_NE(text.find("caked_device_busy_seconds_total{device=\"GPU-a1\"} 12.500\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("caked_device_queued_jobs{device=\"GPU-a1\"} 3\n"), std::string::npos);
  EXPECT_NE(text.find("caked_device_busy_seconds_total{device=\"1: old (9.0)\"} 0.000\n"),
            std::string::npos);
}

TEST(Metrics, TheFileIsReplacedWhole) {
  const auto dir = testing::FreshDir("metrics");
  const std::string path = (dir / "caked.prom").string();
  ASSERT_TRUE(WriteFileAtomically(path, "a 1\n").ok());
  ASSERT_TRUE(WriteFileAtomically(path, "b 2\n").ok());
  std::ifstream f(path);
  std::stringstream s;
  s << f.rdbuf();
  EXPECT_EQ(s.str(), "b 2\n");
  EXPECT_FALSE(std::filesystem::exists(path + ".tmp"));
  EXPECT_FALSE(WriteFileAtomically((dir / "no" / "such" / "x.prom").string(), "x").ok());
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace cake::server
