// Noise-based stopping and the protocol's configurations, on synthetic series (no GPU).
#include <gtest/gtest.h>

#include <random>

#include "protocol/stopping.h"

namespace cake {
namespace {

protocol::StoppingParams Params() {
  protocol::StoppingParams p;
  p.min_pairs = 20;
  p.max_pairs = 200;
  p.max_noise = 0.005;
  p.min_gpu_seconds = 0.5;
  p.max_gpu_seconds = 20;
  return p;
}

TEST(Stopping, QuietSeriesStopsOnNoiseOnlyAfterMinimumPairsAndTime) {
  protocol::NoiseStopping s(Params());
  std::mt19937_64 rng(1);
  std::normal_distribution<double> n(1.0, 0.001);
  int pairs = 0;
  while (!s.Finished()) {
    s.Add(n(rng), true, 1.0 / 64);  // 15.6 ms of GPU time per pair (exact in binary)
    ++pairs;
  }
  EXPECT_EQ(s.reason(), "noise");
  EXPECT_EQ(pairs, 32) << "0.5 s at 1/64 s a pair, though the noise was low from the start";
  EXPECT_LT(s.rel_stddev(), 0.005);
}

TEST(Stopping, NoisySeriesStopsWhenItsNoiseIsStableOrAtTheCap) {
  protocol::NoiseStopping s(Params());
  std::mt19937_64 rng(2);
  std::normal_distribution<double> n(1.0, 0.02);  // 2 %: never under 0.5 %
  while (!s.Finished()) s.Add(n(rng), true, 0.05);
  EXPECT_TRUE(s.reason() == "stable" || s.reason() == "max_pairs") << s.reason();
  EXPECT_GE(s.pairs(), 20);
  EXPECT_GT(s.rel_stddev(), 0.01);
}

TEST(Stopping, HardCapsEndARunAndDiscardedPairsDoNotCount) {
  auto p = Params();
  p.max_pairs = 30;
  protocol::NoiseStopping capped(p);
  for (int i = 0; i < 100 && !capped.Finished(); ++i) capped.Add(1.0 + 0.1 * (i % 2), true, 0);
  EXPECT_EQ(capped.reason(), "max_pairs");
  EXPECT_EQ(capped.pairs(), 30);

  p = Params();
  p.max_gpu_seconds = 1;
  protocol::NoiseStopping timed(p);
  // Throttled pairs (kept = false) spend time but never satisfy the minimum of kept pairs.
  while (!timed.Finished()) timed.Add(1.0, false, 0.125);
  EXPECT_EQ(timed.reason(), "max_time");
  EXPECT_EQ(timed.pairs(), 8);
}

TEST(Stopping, ContractDefaultsAreDocumentedValues) {
  const auto p = protocol::StoppingFrom(contract::MeasurementProtocol());
  EXPECT_EQ(p.min_pairs, 20);
  EXPECT_EQ(p.max_pairs, 200);
  EXPECT_DOUBLE_EQ(p.max_noise, 0.005);
  EXPECT_DOUBLE_EQ(p.min_gpu_seconds, 0.5);
  EXPECT_NE(protocol::Describe(p).find("0.500%"), std::string::npos) << protocol::Describe(p);
}

TEST(TimingConfigs, DefaultAndExplicitAndBad) {
  auto d = protocol::TimingConfigs(contract::MeasurementProtocol());
  ASSERT_TRUE(d.ok());
  ASSERT_EQ(d->size(), 3u);
  EXPECT_EQ((*d)[0].Name(), "eager/cold");
  EXPECT_TRUE((*d)[0].primary);
  EXPECT_FALSE((*d)[1].primary);
  EXPECT_EQ((*d)[2].Name(), "graph/cold");
  contract::MeasurementProtocol p;
  p.add_configurations("graph/warm");
  auto one = protocol::TimingConfigs(p);
  ASSERT_TRUE(one.ok());
  EXPECT_EQ((*one)[0].mode, "graph");
  EXPECT_TRUE((*one)[0].primary);
  for (const char* bad : {"graph", "eager/hot", "cuda/cold", ""}) {
    contract::MeasurementProtocol q;
    q.add_configurations(bad);
    EXPECT_EQ(protocol::TimingConfigs(q).status().code(), absl::StatusCode::kInvalidArgument)
        << bad;
  }
  contract::MeasurementProtocol twice;
  twice.add_configurations("eager/cold");
  twice.add_configurations("eager/cold");
  EXPECT_FALSE(protocol::TimingConfigs(twice).ok());
}

}  // namespace
}  // namespace cake
