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
      // Every example lowers but the two that show constructs no lowering covers yet.
      const std::string name = file.filename().string();
      const bool lowered =
          name != "fp8_gemm_pipelined.textproto" && name != "sparse_mla_decode.textproto";
      EXPECT_EQ(a->report.lowering_supported(), lowered);
      bool lowering_unknown = false;
      for (const auto& d : a->report.diagnostics())
        if (d.id() == report::DIAG_LOWERING_UNSUPPORTED) lowering_unknown = true;
      EXPECT_EQ(lowering_unknown, !lowered);
    }
  }
}

TEST(Examples, NonGemmExamplesAreLegalOnTheirTargetButNotLowered) {
  for (const char* name : {"fp8_gemm_pipelined.textproto", "sparse_mla_decode.textproto"}) {
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

// The legal twins of the rendezvous corpus files: both roles arrive once per tile (no
// mismatch), and the loader's arrival per k-tile matches the compute role's per tile only when
// K is declared to fit one k-tile.
TEST(Roles, RendezvousTwins) {
  const std::string base =
      testing::ReadText(testing::SourceDir() / "examples/fp8_gemm_pipelined.textproto");
  // Inserts `line` after the first line containing `anchor`.
  auto insert_after = [](std::string text, const std::string& anchor, const std::string& line) {
    const size_t found = text.find(anchor);
    EXPECT_NE(found, std::string::npos) << anchor;
    return text.insert(text.find('\n', found) + 1, line + "\n");
  };
  auto mismatch = [](const std::string& text) {
    auto parsed = compiler::ParseModuleText(text, "twin");
    EXPECT_TRUE(parsed.ok()) << parsed.status();
    if (!parsed.ok()) return report::ERROR;
    const auto a = compiler::Analyze(*parsed, **compiler::TargetByName("sm_120f"));
    for (const auto& d : a->report.diagnostics())
      if (d.id() == report::DIAG_RENDEZVOUS_MISMATCH) return d.severity();
    return report::SEVERITY_UNSPECIFIED;
  };
  const std::string both = "rendezvous { roles: [\"loader\", \"compute\"] } }";
  // The compute role after its store; the loader first in its tile loop (first for_each_tile).
  const std::string compute_per_tile = insert_after(base, "id: \"store\" store_accumulator",
                                                    "      body { id: \"tile_done\" " + both);
  const std::string per_tile = insert_after(compute_per_tile, "for_each_tile { work: \"tiles\" }",
                                            "      body { id: \"tile_start\" " + both);
  EXPECT_EQ(mismatch(per_tile), report::SEVERITY_UNSPECIFIED);
  // The loader inside its k loop instead (first for_k_tiles): a mismatch for K > 32 ...
  const std::string per_k = insert_after(compute_per_tile, "for_k_tiles { k: \"K\" extent: 32 }",
                                         "        body { id: \"k_start\" " + both);
  EXPECT_EQ(mismatch(per_k), report::ERROR);
  // ... and none when K is declared to be one k-tile at most.
  std::string one_k_tile = per_k;
  const std::string k_decl = "scalars { name: \"K\"";
  ASSERT_NE(one_k_tile.find(k_decl), std::string::npos);
  one_k_tile.insert(one_k_tile.find(k_decl) + k_decl.size(), " max: 32");
  EXPECT_EQ(mismatch(one_k_tile), report::SEVERITY_UNSPECIFIED);
}

}  // namespace
}  // namespace cake
