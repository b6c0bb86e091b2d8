// The tile cost model's pieces: Kendall's tau-b, the occupancy and work terms, and a fit that
// recovers known rates from fresh random data.
#include "calibration/tile_cost_model.h"

#include <random>

#include <gtest/gtest.h>

namespace cake::calibration {
namespace {

TEST(KendallTau, OrderAgreementTiesAndLength) {
  EXPECT_DOUBLE_EQ(KendallTau({1, 2, 3, 4}, {10, 20, 30, 40}), 1.0);
  EXPECT_DOUBLE_EQ(KendallTau({1, 2, 3, 4}, {40, 30, 20, 10}), -1.0);
  // One discordant pair of six: (6 - 2 * 1) / 6.
  EXPECT_NEAR(KendallTau({1, 2, 3, 4}, {1, 3, 2, 4}), 4.0 / 6.0, 1e-12);
  // tau-b with ties in one sequence: concordant 2, discordant 0, ties_a 1 -> 2/sqrt(3*2).
  EXPECT_NEAR(KendallTau({1, 1, 2}, {1, 2, 3}), 2.0 / std::sqrt(6.0), 1e-12);
  EXPECT_EQ(KendallTau({1, 2}, {1}), 0.0);
  EXPECT_EQ(KendallTau({5, 5, 5}, {1, 2, 3}), 0.0);
}

TEST(TileTerms, ScaleWithTheWorkAndTheTiling) {
  DeviceShape h100;
  h100.sm_count = 132;
  TileSchedule s;  // 128x128x32 w2x2 s3, cp.async
  s.registers = 128;
  s.shared_bytes = 3 * (128 + 128) * 40 * 2;
  EXPECT_EQ(ResidentCtas(s, h100), 3);  // shared memory: 233472 / (61440 + 1024)
  const Terms base = TileTerms(s, {8192, 8192, 4096}, h100);
  const Terms twice_k = TileTerms(s, {8192, 8192, 8192}, h100);
  EXPECT_NEAR(twice_k[0], 2 * base[0], 1e-9);  // multiply-adds
  EXPECT_NEAR(twice_k[1], 2 * base[1], 1e-9);  // ring bytes
  EXPECT_EQ(base[10], 1.0);                    // one launch
  EXPECT_GT(base[9], 0.0);                     // cp.async issues what TMA does not
  TileSchedule tma = s;
  tma.tma = true;
  EXPECT_EQ(TileTerms(tma, {8192, 8192, 4096}, h100)[9], 0.0);
  // A larger warp tile reads less shared memory per multiply-add.
  TileSchedule wide = s;
  wide.warps_m = 1;
  EXPECT_LT(TileTerms(wide, {8192, 8192, 4096}, h100)[2], base[2]);
  // Raster bands read fewer operand panels per wave than row-major order on a wide problem.
  TileSchedule banded = s;
  banded.raster_group_m = 8;
  EXPECT_LT(TileTerms(banded, {16384, 16384, 4096}, h100)[4],
            TileTerms(s, {16384, 16384, 4096}, h100)[4]);
  // Split-K adds its workspace to the compulsory traffic.
  TileSchedule split = s;
  split.k_slices = 4;
  EXPECT_GT(TileTerms(split, {64, 8192, 8192}, h100)[3], TileTerms(s, {64, 8192, 8192}, h100)[3]);
  // A row walk (KMeans: 2M points, 1024 centroids, D 128) loads its A tile once when the ring's
  // stages hold all of k: ring bytes per tile fall from (128 + 128) to (128 / 8 + 128) rows.
  TileSchedule walk = s;
  walk.row_walk = true;
  walk.stages = 4;
  TileSchedule streamed = walk;
  streamed.row_walk = false;
  const GemmExtents kmeans{2097152, 1024, 128};
  EXPECT_NEAR(TileTerms(walk, kmeans, h100)[1],
              TileTerms(streamed, kmeans, h100)[1] * (16.0 + 128) / 256, 1e-9);
  // ... and streams it like any tile when k outgrows the ring (4 x 32 < 136).
  EXPECT_EQ(TileTerms(walk, {2097152, 1024, 136}, h100)[1],
            TileTerms(streamed, {2097152, 1024, 136}, h100)[1]);
}

TEST(Fit, RecoversKnownRatesAndRanksHeldOutGroups) {
  std::mt19937_64 rng(std::random_device{}());
  std::uniform_real_distribution<double> term(0.1, 10.0), noise(0.995, 1.005);
  Terms truth{};
  truth[0] = 0.5;
  truth[3] = 2.0;
  truth[5] = 0.25;
  truth[10] = 0.01;
  std::vector<Sample> samples;
  for (int g = 0; g < 4; ++g)
    for (int i = 0; i < 60; ++i) {
      Sample s;
      for (double& t : s.terms) t = term(rng);
      s.terms[10] = 1;
      double ms = 0;
      for (int k = 0; k < kTermCount; ++k) ms += truth[k] * s.terms[k];
      s.ms = ms * noise(rng);
      s.group = "g" + std::to_string(g);
      s.label = std::to_string(i);
      samples.push_back(s);
    }
  const FittedModel m = Fit(samples);
  ASSERT_TRUE(m.fitted);
  for (int k = 0; k < kTermCount; ++k) {
    EXPECT_GE(m.rates[k], 0.0) << TermNames()[k];
    EXPECT_NEAR(m.rates[k], truth[k], 0.05 * std::max(truth[k], 0.2)) << TermNames()[k];
  }
  for (const HeldOutGroup& h : LeaveOneGroupOut(samples)) {
    EXPECT_EQ(h.samples, 60);
    EXPECT_GT(h.tau, 0.9) << h.group;
  }
  EXPECT_FALSE(Fit({}).fitted);
  EXPECT_TRUE(std::isnan(Fit({}).PredictMs(Terms{})));
}

}  // namespace
}  // namespace cake::calibration
