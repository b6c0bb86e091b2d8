// The illegal-schedule corpus: every tests/corpus/illegal/*.textproto names, in its header, the
// diagnostic it must produce (`# expect-diag: DIAG_X [@ op_id]`), optionally the target
// (`# target: sm_90`) and the verdict (`# expect-verdict: UNDETERMINED`, default REJECTED).
// Also: every bundled example parses and analyzes on every target without a crash, and only the
// warp GEMM is free of an unsupported-lowering unknown.
#include <gtest/gtest.h>

#include <filesystem>
#include <regex>
#include <set>

#include "compiler/analysis.h"
#include "compiler/parse.h"
#include "test_util.h"

namespace cake {
namespace {

namespace fs = std::filesystem;

struct Expectation {
  std::string diag, op, target = "sm_120f";
  report::Verdict verdict = report::REJECTED;
};

Expectation ReadHeader(const std::string& text) {
  Expectation e;
  std::smatch m;
  static const std::regex kDiag(R"(# expect-diag: (DIAG_\w+)(?: @ (\S+))?)");
  static const std::regex kTarget(R"(# target: (\S+))");
  static const std::regex kVerdict(R"(# expect-verdict: (\w+))");
  if (std::regex_search(text, m, kDiag)) {
    e.diag = m[1];
    e.op = m[2];
  }
  if (std::regex_search(text, m, kTarget)) e.target = m[1];
  if (std::regex_search(text, m, kVerdict)) {
    report::Verdict v;
    if (report::Verdict_Parse(m[1], &v)) e.verdict = v;
  }
  return e;
}

std::vector<fs::path> Files(const fs::path& dir) {
  std::vector<fs::path> out;
  for (const auto& entry : fs::directory_iterator(dir))
    if (entry.path().extension() == ".textproto") out.push_back(entry.path());
  std::sort(out.begin(), out.end());
  return out;
}

TEST(IllegalCorpus, EveryFileProducesItsDiagnostic) {
  const auto files = Files(testing::SourceDir() / "tests/corpus/illegal");
  std::set<std::string> codes;
  for (const fs::path& file : files) {
    SCOPED_TRACE(file.filename().string());
    const Expectation e = ReadHeader(testing::ReadText(file));
    ASSERT_FALSE(e.diag.empty()) << "missing `# expect-diag:` header";
    report::DiagId want;
    ASSERT_TRUE(report::DiagId_Parse(e.diag, &want)) << e.diag << " is not a DiagId";
    auto target = compiler::TargetByName(e.target);
    ASSERT_TRUE(target.ok());
    const auto parsed = testing::MustParse(file);
    const auto a = compiler::Analyze(parsed, **target);
    EXPECT_EQ(a->report.verdict(), e.verdict);
    bool found = false;
    for (const report::Diagnostic& d : a->report.diagnostics()) {
      if (d.id() != want) continue;
      if (!e.op.empty() && d.op_id() != e.op) continue;
      found = true;
      EXPECT_EQ(d.severity(), e.verdict == report::REJECTED ? report::ERROR : report::UNKNOWN);
      EXPECT_FALSE(d.message().empty());
      EXPECT_GT(d.span().line(), 0) << "diagnostic has no source span";
      EXPECT_EQ(d.span().file(), file.string());
    }
    EXPECT_TRUE(found) << "expected " << e.diag << (e.op.empty() ? "" : " @ " + e.op);
    codes.insert(e.diag);
  }
  EXPECT_GE(files.size(), 15u);
  EXPECT_GE(codes.size(), 15u) << "one file per rule";
}

TEST(IllegalCorpus, SharedBudgetNamesTheBufferAndTheBytes) {
  const auto parsed = testing::MustParse(testing::SourceDir() /
                                         "tests/corpus/illegal/shared_budget_exceeded.textproto");
  const auto a = compiler::Analyze(parsed, **compiler::TargetByName("sm_120f"));
  for (const report::Diagnostic& d : a->report.diagnostics())
    if (d.id() == report::DIAG_SHARED_BUDGET_EXCEEDED) {
      EXPECT_EQ(d.resource(), "a_stage");
      EXPECT_NE(d.evidence().find("278528 B needed"), std::string::npos) << d.evidence();
      EXPECT_NE(d.condition().find("101376"), std::string::npos);
      return;
    }
  FAIL() << "no DIAG_SHARED_BUDGET_EXCEEDED";
}

TEST(IllegalCorpus, SameScheduleFitsOnTheHopperWitness) {
  // 278,528 B exceeds SM120's 101,376 B and the H200's 232,448 B alike; a 3-stage variant would
  // fit only on Hopper. The limit is the target's, not a constant.
  std::string text = testing::ReadText(testing::SourceDir() /
                                       "tests/corpus/illegal/shared_budget_exceeded.textproto");
  text.replace(text.find("stages: 4"), 9, "stages: 3");
  auto parsed = compiler::ParseModuleText(text, "three_stages");
  ASSERT_TRUE(parsed.ok());
  auto has_budget_error = [&](const char* t) {
    const auto a = compiler::Analyze(*parsed, **compiler::TargetByName(t));
    for (const auto& d : a->report.diagnostics())
      if (d.id() == report::DIAG_SHARED_BUDGET_EXCEEDED) return true;
    return false;
  };
  EXPECT_TRUE(has_budget_error("sm_120f"));
  EXPECT_FALSE(has_budget_error("sm_90"));
}

TEST(Examples, EveryExampleAnalyzesOnEveryTarget) {
  for (const fs::path& file : Files(testing::SourceDir() / "examples")) {
    const auto parsed = testing::MustParse(file);
    for (const compiler::TargetInfo& t : compiler::AllTargets()) {
      SCOPED_TRACE(file.filename().string() + " on " + std::string(t.name));
      const auto a = compiler::Analyze(parsed, t);
      EXPECT_NE(a->report.verdict(), report::VERDICT_UNSPECIFIED);
      EXPECT_EQ(a->report.passes_size(), 11);
      // Every example lowers but the three that show constructs no lowering covers yet.
      const std::string name = file.filename().string();
      const bool lowered = name != "fp8_gemm_pipelined.textproto" &&
                           name != "nvfp4_gemm.textproto" && name != "sparse_mla_decode.textproto";
      EXPECT_EQ(a->report.lowering_supported(), lowered);
      bool lowering_unknown = false;
      for (const auto& d : a->report.diagnostics())
        if (d.id() == report::DIAG_LOWERING_UNSUPPORTED) lowering_unknown = true;
      EXPECT_EQ(lowering_unknown, !lowered);
    }
  }
}

TEST(Examples, NonGemmExamplesAreLegalOnTheirTargetButNotLowered) {
  for (const char* name :
       {"fp8_gemm_pipelined.textproto", "nvfp4_gemm.textproto", "sparse_mla_decode.textproto"}) {
    SCOPED_TRACE(name);
    const auto parsed = testing::MustParse(testing::SourceDir() / "examples" / name);
    const auto* target = compiler::FindTarget(parsed.module.target().arch());
    ASSERT_NE(target, nullptr);
    const auto a = compiler::Analyze(parsed, *target);
    EXPECT_EQ(a->report.verdict(), report::UNDETERMINED);
    for (const auto& d : a->report.diagnostics())
      EXPECT_NE(d.severity(), report::ERROR) << d.message();
  }
}

TEST(Examples, BlockScaledFp8IsRejectedOnTheHopperWitness) {
  const auto parsed =
      testing::MustParse(testing::SourceDir() / "examples/fp8_gemm_pipelined.textproto");
  const auto a = compiler::Analyze(parsed, **compiler::TargetByName("sm_90"));
  EXPECT_EQ(a->report.verdict(), report::REJECTED);
  std::set<std::string> rejected;
  for (const auto& d : a->report.diagnostics())
    if (d.id() == report::DIAG_INSTR_NOT_ADMITTED) rejected.insert(d.resource());
  EXPECT_TRUE(rejected.count("mma.block_scale.mxf8f6f4.m16n8k32.e4m3.ue8m0"));
  EXPECT_TRUE(rejected.count("ldmatrix.m16n16.x1.trans.b8"));
}

TEST(Examples, GemmVerifiesOnEveryTarget) {
  const auto parsed = testing::MustParse(testing::SourceDir() / "examples/gemm_bf16.textproto");
  for (const compiler::TargetInfo& t : compiler::AllTargets()) {
    const auto a = compiler::Analyze(parsed, t);
    EXPECT_EQ(a->report.verdict(), report::VERIFIED) << t.name;
    for (const auto& p : a->report.passes()) {
      EXPECT_EQ(p.verdict(), report::VERIFIED) << p.pass();
    }
    EXPECT_EQ(a->report.resources().shared_bytes(), 61440);
  }
}

}  // namespace
}  // namespace cake
