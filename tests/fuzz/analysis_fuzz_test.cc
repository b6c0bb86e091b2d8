// Generated-corpus fuzzing of parse -> analyze (every target) -> emit: thousands of mutants of
// the examples and the illegal corpus. Nothing may crash; every accepted input gets a verdict;
// every rejected input gets an error diagnostic; every emitted source passes the emission audit.
// The libFuzzer target (parse_analyze_fuzzer.cc, CAKE_FUZZ=ON with clang) explores the same entry
// point without a bound.
#include <gtest/gtest.h>

#include <filesystem>

#include "compiler/compiler.h"
#include "compiler/emission_audit.h"
#include "mutate.h"
#include "tests/compiler/test_util.h"

namespace cake {
namespace {

namespace fs = std::filesystem;

std::vector<std::string> Seeds() {
  std::vector<std::string> seeds;
  for (const char* dir : {"examples", "tests/corpus/illegal", "tests/fuzz/seeds"}) {
    const fs::path p = testing::SourceDir() / dir;
    if (!fs::exists(p)) continue;
    for (const auto& e : fs::directory_iterator(p))
      if (e.path().extension() == ".textproto") seeds.push_back(testing::ReadText(e.path()));
  }
  return seeds;
}

void CheckOne(const std::string& text, int* parsed_count, int* verified_count) {
  auto parsed = compiler::ParseModuleText(text, "mutant.textproto");
  if (!parsed.ok()) {
    EXPECT_EQ(parsed.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_EQ(std::string(parsed.status().message()).rfind("mutant.textproto:", 0), 0u);
    return;
  }
  ++*parsed_count;
  for (const compiler::TargetInfo& t : compiler::AllTargets()) {
    auto e = compiler::Emit(*parsed, t);
    const report::Verdict v = e.analysis.verdict();
    ASSERT_NE(v, report::VERDICT_UNSPECIFIED);
    bool error = false;
    for (const auto& d : e.analysis.diagnostics()) error |= d.severity() == report::ERROR;
    EXPECT_EQ(v == report::REJECTED, error);
    if (v == report::VERIFIED) {
      ++*verified_count;
      EXPECT_TRUE(e.source.has_value());
    }
    // The oracle the libFuzzer target applies: what a verified mutant emits passes the audit.
    if (e.source) {
      const auto problems = compiler::AuditEmittedSource(*parsed, t, {}, e.analysis, *e.source);
      EXPECT_TRUE(problems.empty()) << problems.front() << "\n" << text;
    }
  }
}

TEST(AnalysisFuzz, MutantsNeverCrash) {
  const auto seeds = Seeds();
  ASSERT_GE(seeds.size(), 40u);
  std::mt19937_64 rng(20261202);
  int parsed = 0, verified = 0, total = 0;
  for (int round = 0; round < 200; ++round)
    for (const std::string& seed : seeds) {
      std::string m = fuzz::Mutate(seed, rng);
      if (round % 3 == 2) m = fuzz::Mutate(m, rng);  // second-order mutants too
      CheckOne(m, &parsed, &verified);
      ++total;
    }
  // The mutator must exercise analysis, not only the parser.
  EXPECT_GT(parsed, total / 4);
  EXPECT_GT(verified, 0);
  std::printf("mutants: %d, parsed: %d, verified (target x mutant): %d\n", total, parsed, verified);
}

}  // namespace
}  // namespace cake
