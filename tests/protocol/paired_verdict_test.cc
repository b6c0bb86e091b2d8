// The paired-timing decision logic on recorded sample fixtures (no GPU).
#include <gtest/gtest.h>

#include <sqlite3.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <random>

#include "protocol/paired_verdict.h"
#include "tests/compiler/test_util.h"

namespace cake {
namespace {

evidence::RowTiming Row(const std::string& name, double incumbent, double challenger, double noise,
                        int pairs, uint64_t seed, bool required = true) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> n(0, noise);
  evidence::RowTiming r;
  r.set_row(name);
  r.set_required(required);
  for (int i = 0; i < pairs; ++i) {
    r.add_incumbent_us(incumbent * (1 + n(rng)));
    r.add_challenger_us(challenger * (1 + n(rng)));
    r.add_challenger_first(i % 2);
  }
  return r;
}

contract::Contract Contract() {
  contract::Contract c;
  c.mutable_protocol()->set_practical_floor(0.02);
  for (const char* n : {"a", "b"}) {
    auto* r = c.add_rows();
    r->set_name(n);
    r->set_weight(1);
    r->set_required(true);
  }
  return c;
}

TEST(PairedVerdict, SignTestIntervalBracketsTheMedian) {
  std::vector<double> v;
  for (int i = 1; i <= 20; ++i) v.push_back(i);
  auto s = protocol::SummarizeRatios(v);
  EXPECT_DOUBLE_EQ(s.median, 10.5);
  EXPECT_DOUBLE_EQ(s.low, 6);  // rank 5 (0-based) for n = 20: P(X <= 5) = 0.0207
  EXPECT_DOUBLE_EQ(s.high, 15);
  auto few = protocol::SummarizeRatios({1, 2, 3});
  EXPECT_TRUE(std::isinf(few.high)) << "too few pairs cannot bound the median";
}

TEST(PairedVerdict, IdenticalKernelsAreATieNotAWin) {
  int decisive = 0;
  for (uint64_t seed = 0; seed < 200; ++seed) {
    auto r = Row("a", 500, 500, 0.004, 20, seed);
    protocol::JudgeRow(&r, 0.02);
    decisive += r.verdict() == evidence::FASTER || r.verdict() == evidence::SLOWER;
  }
  EXPECT_EQ(decisive, 0);
}

TEST(PairedVerdict, ClearSpeedupIsFasterAndSlowdownIsSlower) {
  auto fast = Row("a", 500, 450, 0.004, 20, 1);
  protocol::JudgeRow(&fast, 0.02);
  EXPECT_EQ(fast.verdict(), evidence::FASTER);
  EXPECT_NEAR(fast.median_ratio(), 0.9, 0.01);
  auto slow = Row("a", 500, 550, 0.004, 20, 2);
  protocol::JudgeRow(&slow, 0.02);
  EXPECT_EQ(slow.verdict(), evidence::SLOWER);
}

TEST(PairedVerdict, NoisyRowIsAmbiguousAndNeverPromotes) {
  auto r = Row("a", 500, 485, 0.08, 20, 3);
  protocol::JudgeRow(&r, 0.02);
  EXPECT_EQ(r.verdict(), evidence::AMBIGUOUS);
  evidence::Measurement m;
  *m.add_rows() = Row("a", 500, 400, 0.004, 20, 4);
  *m.add_rows() = r;
  m.mutable_rows(1)->set_row("b");
  protocol::JudgeMeasurement(&m, Contract());
  EXPECT_EQ(m.verdict(), evidence::AMBIGUOUS);
}

TEST(PairedVerdict, RequiredRowRegressionBlocksWhateverTheMean) {
  evidence::Measurement m;
  *m.add_rows() = Row("a", 500, 250, 0.004, 20, 5);  // twice as fast
  *m.add_rows() = Row("b", 500, 540, 0.004, 20, 6);  // 8 % slower
  protocol::JudgeMeasurement(&m, Contract());
  EXPECT_LT(m.weighted_geomean_ratio(), 0.8) << "the mean looks great";
  EXPECT_EQ(m.verdict(), evidence::SLOWER);
  EXPECT_EQ(m.worst_row(), "b");
}

TEST(PairedVerdict, AllRequiredFasterIsFasterAndMixedTieIsTie) {
  evidence::Measurement fast;
  *fast.add_rows() = Row("a", 500, 450, 0.004, 20, 7);
  *fast.add_rows() = Row("b", 500, 460, 0.004, 20, 8);
  protocol::JudgeMeasurement(&fast, Contract());
  EXPECT_EQ(fast.verdict(), evidence::FASTER);
  evidence::Measurement tie;
  *tie.add_rows() = Row("a", 500, 450, 0.004, 20, 9);
  *tie.add_rows() = Row("b", 500, 500, 0.004, 20, 10);
  protocol::JudgeMeasurement(&tie, Contract());
  EXPECT_EQ(tie.verdict(), evidence::TIE) << "ties keep the incumbent";
}

TEST(PairedVerdict, DiscardedPairsAreKeptOutOfTheVerdictButCounted) {
  auto r = Row("a", 500, 500, 0.002, 20, 11);
  // Five throttled pairs that would make the challenger look 30 % faster.
  for (int i = 0; i < 5; ++i) {
    r.add_incumbent_us(500);
    r.add_challenger_us(350);
    r.add_challenger_first(false);
  }
  for (int i = 0; i < 25; ++i) r.add_discarded(i >= 20);
  protocol::JudgeRow(&r, 0.02);
  EXPECT_EQ(r.verdict(), evidence::TIE);
  EXPECT_EQ(r.discarded_pairs(), 5);
  EXPECT_NEAR(r.challenger_median_us(), 500, 5);
  r.clear_discarded();
  protocol::JudgeRow(&r, 0.02);
  EXPECT_LT(r.challenger_median_us(), 500) << "the same pairs kept would move the median";
}

TEST(PairedVerdict, OnlyThePrimaryConfigurationDecidesAndRegressionsAreNamed) {
  evidence::Measurement m;
  auto primary = Row("a", 500, 450, 0.004, 20, 12);
  primary.set_mode("eager");
  primary.set_cache("cold");
  primary.set_primary(true);
  auto warm = Row("a", 500, 600, 0.004, 20, 13);  // slower, but descriptive only
  warm.set_mode("eager");
  warm.set_cache("warm");
  auto b = Row("b", 500, 440, 0.004, 20, 14);
  b.set_mode("eager");
  b.set_cache("cold");
  b.set_primary(true);
  *m.add_rows() = primary;
  *m.add_rows() = warm;
  *m.add_rows() = b;
  protocol::JudgeMeasurement(&m, Contract());
  EXPECT_EQ(m.verdict(), evidence::FASTER);
  EXPECT_EQ(m.rows(1).verdict(), evidence::SLOWER) << "still judged and reported";
  EXPECT_TRUE(m.required_regression().empty());
  EXPECT_NEAR(m.weighted_total_incumbent_us(), 1000, 10);
  m.mutable_rows(2)->CopyFrom(Row("b", 500, 560, 0.004, 20, 15));
  m.mutable_rows(2)->set_mode("eager");
  m.mutable_rows(2)->set_primary(true);
  protocol::JudgeMeasurement(&m, Contract());
  EXPECT_EQ(m.verdict(), evidence::SLOWER);
  EXPECT_NE(m.required_regression().find("required row b is slower"), std::string::npos)
      << m.required_regression();
  m.set_invalid(true);
  protocol::JudgeMeasurement(&m, Contract());
  EXPECT_EQ(m.verdict(), evidence::INVALID) << "an invalid run is never judged";
}

// Recorded on the H200 by cake-protocol-bench (evidence/protocol_bench/run_fresh_inputs_20 and
// evidence/evidence_authority): every comparison's raw pairs re-judged here give the verdicts
// recorded there, the A/A comparisons are never called different, and the planted 3 % slowdown
// is always found.
TEST(PairedVerdict, RecordedH200BenchSamplesReplayToTheRecordedRates) {
  for (const char* file : {"evidence/protocol_bench/run_fresh_inputs_20/protocol_bench.json",
                           "evidence/evidence_authority/protocol_bench.json"}) {
    std::ifstream in(testing::SourceDir() / file);
    ASSERT_TRUE(in.good()) << file;
    const nlohmann::json doc = nlohmann::json::parse(in);
    const double floor = doc["floor"].get<double>();
    std::map<std::string, std::map<std::string, int>> counts;
    int comparisons = 0;
    for (const char* experiment : {"a_a", "planted_slowdown"}) {
      comparisons = 0;
      for (const auto& c : doc[experiment]["comparisons"]) {
        evidence::RowTiming r;
        for (double v : c["incumbent_us"]) r.add_incumbent_us(v);
        for (double v : c["challenger_us"]) r.add_challenger_us(v);
        for (bool d : c["discarded"]) r.add_discarded(d);
        ASSERT_GE(r.incumbent_us_size(), 20);
        protocol::JudgeRow(&r, floor);
        EXPECT_EQ(evidence::TimingVerdict_Name(r.verdict()), c["verdict"].get<std::string>());
        ++counts[experiment][evidence::TimingVerdict_Name(r.verdict())];
        ++comparisons;
      }
    }
    EXPECT_GE(comparisons, 20) << file;
    EXPECT_EQ(counts["a_a"]["FASTER"] + counts["a_a"]["SLOWER"], 0) << file;
    EXPECT_EQ(counts["planted_slowdown"]["SLOWER"], comparisons) << file;
    // The same samples judged with no practical floor call A/A pairs different: the floor is
    // what keeps identical kernels tied.
    int decisive_without_floor = 0;
    for (const auto& c : doc["a_a"]["comparisons"]) {
      evidence::RowTiming r;
      for (double v : c["incumbent_us"]) r.add_incumbent_us(v);
      for (double v : c["challenger_us"]) r.add_challenger_us(v);
      protocol::JudgeRow(&r, 0.0);
      decisive_without_floor += r.verdict() == evidence::FASTER || r.verdict() == evidence::SLOWER;
    }
    EXPECT_GT(decisive_without_floor, 0) << file;
  }
}

// The measurements of the H200 demo round (evidence/demo_round/ledger.db, schema v1) re-judged
// from their raw samples give the verdicts the daemon recorded then.
TEST(PairedVerdict, RecordedDemoRoundMeasurementsReplayToTheirVerdicts) {
  const auto db = std::filesystem::temp_directory_path() / "cake_demo_replay.db";
  std::filesystem::copy_file(testing::SourceDir() / "evidence/demo_round/ledger.db", db,
                             std::filesystem::copy_options::overwrite_existing);
  sqlite3* raw = nullptr;
  ASSERT_EQ(sqlite3_open_v2(db.c_str(), &raw, SQLITE_OPEN_READONLY, nullptr), SQLITE_OK);
  sqlite3_stmt* s = nullptr;
  ASSERT_EQ(sqlite3_prepare_v2(raw, "SELECT body FROM measurements", -1, &s, nullptr), SQLITE_OK);
  contract::Contract c = Contract();
  c.clear_rows();
  for (const char* n : {"square_4k", "tall_8k", "tails"}) {
    auto* r = c.add_rows();
    r->set_name(n);
    r->set_weight(std::string(n) == "square_4k" ? 2 : 1);
    r->set_required(true);
  }
  int n = 0;
  while (sqlite3_step(s) == SQLITE_ROW) {
    evidence::Measurement m;
    ASSERT_TRUE(m.ParseFromArray(sqlite3_column_blob(s, 0), sqlite3_column_bytes(s, 0)));
    const evidence::TimingVerdict recorded = m.verdict();
    const double geomean = m.weighted_geomean_ratio();
    protocol::JudgeMeasurement(&m, c);
    EXPECT_EQ(m.verdict(), recorded) << m.candidate() << " run " << m.run();
    EXPECT_NEAR(m.weighted_geomean_ratio(), geomean, 1e-12);
    ++n;
  }
  sqlite3_finalize(s);
  sqlite3_close(raw);
  std::filesystem::remove(db);
  EXPECT_GE(n, 5);
}

}  // namespace
}  // namespace cake
