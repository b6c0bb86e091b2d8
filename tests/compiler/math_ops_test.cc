// Register math (scalar_math) and cross-warp reductions (cross_warp_reduce) in the sparse-MLA
// example's main loop: the visible online-softmax row max (a warp's row max, then across the
// role's warps through shared scratch) and the log2-domain rescale factor verify; each broken
// form is rejected with its diagnostic at its operation: a function's arity, an output type it
// does not compute, scratch too small or not shared F32, a reduction under a branch that may not
// reach every warp, and its scratch written by one warp while another reads it is counted as
// a shared write like any other.
#include <gtest/gtest.h>

#include <string>

#include "absl/strings/str_replace.h"
#include "compiler/analysis.h"
#include "compiler/parse.h"
#include "compiler/targets.h"
#include "tests/compiler/test_util.h"

namespace cake {
namespace {

// The example with a scratch buffer and, after the main loop's mask, `ops` (protobuf text of
// operation bodies).
std::string ExampleWith(
    const std::string& ops,
    const std::string& scratch =
        R"(buffers { name: "row_scratch" space: SHARED dtype: F32 alignment_bytes: 16 shape { dims { size: 4 } dims { size: 16 } } })") {
  std::string text =
      testing::ReadText(testing::SourceDir() / "examples/sparse_mla_decode.textproto");
  const std::string mask =
      R"(      body { id: "mask" results: "s_masked" attention_mask { scores: "s" kind: VALID_LENGTH } })";
  const std::string buffers = R"(  buffers {
    name: "p_smem")";
  EXPECT_NE(text.find(mask), std::string::npos);
  EXPECT_NE(text.find(buffers), std::string::npos);
  return absl::StrReplaceAll(
      text, {{mask, mask + "\n" + ops}, {buffers, "  " + scratch + "\n" + buffers}});
}

const char kLegal[] = R"(
      body { id: "warp_max" results: "m_warp" row_reduce { src: "s_masked" kind: MAX } }
      body { id: "row_max" results: "m_row" cross_warp_reduce { src: "m_warp" kind: MAX role: "compute" scratch: "row_scratch" rows: 16 } }
      body { id: "max_new" results: "m_new" scalar_math { fn: MAX inputs: "m_row" inputs: "m_warp" output: F32 } }
      body { id: "delta" results: "m_delta" scalar_math { fn: ADD inputs: "m_row" inputs: "m_new" output: F32 } }
      body { id: "factor" results: "alpha" scalar_math { fn: EXP2 inputs: "m_delta" output: F32 } }
      body { id: "inverse" results: "alpha_rcp" scalar_math { fn: RCP inputs: "alpha" output: F32 } }
      body { id: "narrow" results: "alpha_bf16" scalar_math { fn: CAST inputs: "alpha_rcp" output: BF16 } })";

struct Result {
  report::AnalysisReport report;
  bool HasError(report::DiagId id, const std::string& op) const {
    for (const auto& d : report.diagnostics())
      if (d.id() == id && d.severity() == report::ERROR && d.op_id() == op) return true;
    return false;
  }
  int Errors() const {
    int n = 0;
    for (const auto& d : report.diagnostics()) n += d.severity() == report::ERROR;
    return n;
  }
};

Result Analyze(const std::string& text) {
  auto parsed = compiler::ParseModuleText(text, "math.textproto");
  EXPECT_TRUE(parsed.ok()) << parsed.status();
  if (!parsed.ok()) return {};
  return {compiler::Analyze(*parsed, **compiler::TargetByName("sm_120f"))->report};
}

TEST(MathOps, TheVisibleRowMaxAndRescaleFactorVerify) {
  const Result r = Analyze(ExampleWith(kLegal));
  EXPECT_EQ(r.Errors(), 0) << r.report.DebugString();
  EXPECT_EQ(r.report.verdict(), report::UNDETERMINED);  // runtime indices and lowering: unknown
}

TEST(MathOps, BrokenFormsAreRejectedAtTheirOperation) {
  struct Case {
    const char* what;
    std::string from, to;
    report::DiagId id;
    const char* op;
  };
  const Case cases[] = {
      {"EXP2 takes one input", R"(fn: EXP2 inputs: "m_delta")",
       R"(fn: EXP2 inputs: "m_delta" inputs: "m_row")", report::DIAG_INVALID_VALUE, "factor"},
      {"MAX takes two", R"(fn: MAX inputs: "m_row" inputs: "m_warp")", R"(fn: MAX inputs: "m_row")",
       report::DIAG_INVALID_VALUE, "max_new"},
      {"only a CAST narrows", R"(fn: RCP inputs: "alpha" output: F32)",
       R"(fn: RCP inputs: "alpha" output: BF16)", report::DIAG_INVALID_VALUE, "inverse"},
      {"no function", R"(fn: ADD inputs)", R"(inputs)", report::DIAG_MISSING_FIELD, "delta"},
      {"no kind", R"(kind: MAX role: "compute")", R"(role: "compute")", report::DIAG_INVALID_VALUE,
       "row_max"},
      {"scratch for 4 warps x 16 rows", R"(rows: 16 })", R"(rows: 32 })",
       report::DIAG_REPRESENTATION_INCOMPATIBLE, "row_max"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.what);
    std::string ops = kLegal;
    ASSERT_NE(ops.find(c.from), std::string::npos);
    ops = absl::StrReplaceAll(ops, {{c.from, c.to}});
    const Result r = Analyze(ExampleWith(ops));
    EXPECT_TRUE(r.HasError(c.id, c.op)) << r.report.DebugString();
  }
  // Scratch that is not shared F32.
  const Result bf16 = Analyze(ExampleWith(
      kLegal,
      R"(buffers { name: "row_scratch" space: SHARED dtype: BF16 alignment_bytes: 16 shape { dims { size: 4 } dims { size: 16 } } })"));
  EXPECT_TRUE(bf16.HasError(report::DIAG_REPRESENTATION_INCOMPATIBLE, "row_max"))
      << bf16.report.DebugString();
  // Under a branch some warps may skip: the others would wait at its barrier forever.
  const std::string branch = absl::StrReplaceAll(
      kLegal,
      {{R"(      body { id: "row_max" results: "m_row" cross_warp_reduce { src: "m_warp" kind: MAX role: "compute" scratch: "row_scratch" rows: 16 } })",
        R"(      body { id: "guard" if_uniform { condition: "kv_len" uniformity: UNIFORM_WARP }
        body { id: "row_max" results: "m_row" cross_warp_reduce { src: "m_warp" kind: MAX role: "compute" scratch: "row_scratch" rows: 16 } } })"}});
  const Result divergent = Analyze(ExampleWith(branch));
  EXPECT_TRUE(divergent.HasError(report::DIAG_DIVERGENT_COLLECTIVE, "row_max"))
      << divergent.report.DebugString();
}

}  // namespace
}  // namespace cake
