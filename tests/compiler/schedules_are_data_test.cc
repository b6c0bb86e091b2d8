// Schedules are data, never code. Names: every form of injection in every name field is
// refused at construction, naming the field, and no source is emitted; names the lowering uses
// for its own locals change nothing. Sizes: a buffer of 2^60 elements or a product past 2^63 is
// refused, never wrapped into a small or negative figure. Emission: every schedule we ship
// passes the audit, and the audit catches each thing a lowering must not write. Toolchain logs:
// only lines about the generated source are shown.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <random>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "compiler/artifact_store.h"
#include "base/checked_int.h"
#include "compiler/compiler.h"
#include "compiler/emission_audit.h"
#include "compiler/schedule_names.h"
#include "google/protobuf/text_format.h"
#include "name_fields.h"
#include "test_util.h"
#include "workloads/gemm_bf16/space.h"
#include "workloads/workload.h"

namespace cake {
namespace {

namespace fs = std::filesystem;
using base::CheckedInt;

const compiler::TargetInfo& Target(const char* name) { return **compiler::TargetByName(name); }

compiler::ParsedModule Parsed(const ir::Module& m) {
  compiler::ParsedModule p;
  p.module = m;
  p.file = "test.textproto";
  return p;
}

bool PrintableAscii(const std::string& s) {
  for (char c : s)
    if (static_cast<unsigned char>(c) < 0x20 || static_cast<unsigned char>(c) > 0x7e) return false;
  return true;
}

TEST(NameRule, IdentifiersPassAndEverythingElseSaysWhich) {
  for (const char* ok : {"A", "a_stage", "_x", "gemm_bf16", "k2", "Threads", "x1_y2"})
    EXPECT_FALSE(compiler::NameRuleBroken(ok).has_value()) << ok;
  EXPECT_FALSE(compiler::NameRuleBroken(std::string(64, 'a')).has_value());
  const std::pair<std::string, std::string> bad[] = {
      {"", "empty"},
      {std::string(65, 'a'), "65 bytes"},
      {"1abc", "digit"},
      {"a b", "character"},
      {"A/*x*/", "character"},
      {"x\n#error", "character"},
      {"na\xc3\xafve", "character"},
      {"int", "keyword"},
      {"xor_eq", "keyword"},
      {"alignas", "keyword"},
      {"__x", "__"},
      {"a__b", "__"},
      {"_X", "capital"},
      {"x_", "ends with"},
  };
  for (const auto& [name, why] : bad) {
    const auto rule = compiler::NameRuleBroken(name);
    ASSERT_TRUE(rule.has_value()) << name;
    EXPECT_NE(rule->find(why), std::string::npos) << name << ": " << *rule;
  }
}

// Each form in each name field of every bundled example: rejected by construction with
// DIAG_INVALID_NAME at exactly that field, nothing else said (no other message quotes the bytes),
// and no source emitted.
TEST(NameRule, EveryInjectionFormInEveryNameFieldIsRejectedAtConstruction) {
  int tried = 0;
  for (const auto& example : fs::directory_iterator(testing::SourceDir() / "examples")) {
    if (example.path().extension() != ".textproto") continue;
    const ir::Module base = testing::MustParse(example.path()).module;
    const auto fields = testing::NameField::Of(base);
    ASSERT_GT(fields.size(), 20u) << example.path();
    for (const testing::NameField& f : fields)
      for (const std::string& form : testing::InjectionForms("/etc/hostname")) {
        const compiler::EmitResult e = compiler::Emit(Parsed(f.With(base, form)), Target("sm_90"));
        ++tried;
        EXPECT_EQ(e.analysis.verdict(), report::REJECTED) << f.path() << " = " << form;
        EXPECT_FALSE(e.source.has_value()) << f.path();
        bool at_field = false;
        for (const auto& d : e.analysis.diagnostics()) {
          EXPECT_EQ(d.id(), report::DIAG_INVALID_NAME) << f.path() << ": " << d.message();
          at_field |= d.path() == f.path();
          EXPECT_TRUE(PrintableAscii(d.message()) && PrintableAscii(d.evidence())) << d.message();
        }
        EXPECT_TRUE(at_field) << f.path() << " = " << form;
      }
  }
  EXPECT_GT(tried, 1000);
}

// The lowerings write their own parameter identifiers: scalars and tensors named after the
// lowering's locals, constants and CUDA's built-ins lower to the same code as the bundled names.
TEST(NameRule, NamesThatLookLikeTheLoweringsOwnChangeNoCode) {
  const std::string text = testing::ReadText(testing::SourceDir() / "examples/gemm_bf16.textproto");
  const std::string renamed = absl::StrReplaceAll(text, {{"\"M\"", "\"kTileK\""},
                                                         {"\"N\"", "\"tid\""},
                                                         {"\"K\"", "\"n0\""},
                                                         {"\"A\"", "\"smem\""},
                                                         {"\"B\"", "\"threadIdx\""},
                                                         {"\"C\"", "\"workspace\""}});
  ASSERT_NE(renamed, text);
  auto original = compiler::ParseModuleText(text, "a.textproto");
  auto shadowing = compiler::ParseModuleText(renamed, "b.textproto");
  ASSERT_TRUE(original.ok() && shadowing.ok());
  for (const char* t : {"sm_90", "sm_120f"}) {
    const auto a = compiler::Emit(*original, Target(t));
    const auto b = compiler::Emit(*shadowing, Target(t));
    ASSERT_TRUE(a.source && b.source) << compiler::ToJson(b.analysis);
    auto normalized = [](const compiler::EmitResult& e) {
      return absl::StrReplaceAll(e.source->text, {{e.source->kernel_symbol, "SYMBOL"},
                                                  {e.analysis.schedule_hash(), "HASH"}});
    };
    EXPECT_EQ(normalized(a), normalized(b)) << t;
    EXPECT_TRUE(
        compiler::AuditEmittedSource(*shadowing, Target(t), {}, b.analysis, *b.source).empty());
  }
}

TEST(CheckedInt, OverflowIsStickyAndExceedsEveryLimit) {
  const CheckedInt big = CheckedInt(int64_t{1} << 62) * 2;
  EXPECT_FALSE(big.ok());
  EXPECT_FALSE((big * 0).ok()) << "an overflow does not come back as 0";
  EXPECT_FALSE((big + 1 - 1).ok());
  EXPECT_TRUE(big.Exceeds(std::numeric_limits<int64_t>::max()));
  EXPECT_FALSE(big == big) << "an unknown figure equals nothing";
  EXPECT_EQ((CheckedInt(4444444444444445120) * 16).ToString(), "overflow (> 2^63)");
  EXPECT_FALSE((CheckedInt(std::numeric_limits<int64_t>::min()) - 1).ok());
  EXPECT_FALSE((CheckedInt(7) / 0).ok());
  EXPECT_FALSE((CheckedInt(7) % -2).ok());
  EXPECT_EQ(base::AlignUp(CheckedInt(129), 128).value(), 256);
  EXPECT_FALSE(base::AlignUp(CheckedInt(std::numeric_limits<int64_t>::max() - 3), 128).ok());
  EXPECT_EQ((CheckedInt(3) * 5 + 1).value(), 16);
  EXPECT_FALSE(CheckedInt(16).Exceeds(16));
  EXPECT_TRUE(CheckedInt(17).Exceeds(16));
}

// The bundled GEMM with one more shared buffer of `dims` BF16 elements.
compiler::EmitResult WithExtraBuffer(const std::vector<int64_t>& dims, const char* target) {
  ir::Module m = testing::MustParse(testing::SourceDir() / "examples/gemm_bf16.textproto").module;
  ir::Buffer* b = m.mutable_kernels(0)->add_buffers();
  b->set_name("extra");
  b->set_space(ir::SHARED);
  b->set_dtype(ir::BF16);
  b->mutable_representation()->set_kind(ir::Representation::ROW_MAJOR);
  for (int64_t d : dims) b->mutable_shape()->add_dims()->set_size(d);
  return compiler::Emit(Parsed(m), Target(target));
}

bool Has(const report::AnalysisReport& r, report::DiagId id, const std::string& path = "") {
  for (const auto& d : r.diagnostics())
    if (d.id() == id && (path.empty() || d.path() == path)) return true;
  return false;
}

TEST(CheckedSizes, ABufferOfTwoToTheSixtyElementsIsRefusedNotCountedAsZero) {
  for (const char* t : {"sm_90", "sm_120f"}) {
    const auto e = WithExtraBuffer({int64_t{1} << 60}, t);
    EXPECT_EQ(e.analysis.verdict(), report::REJECTED) << t;
    EXPECT_TRUE(Has(e.analysis, report::DIAG_INVALID_VALUE, "kernels[0].buffers[2]"))
        << compiler::ToJson(e.analysis);
    EXPECT_GE(e.analysis.resources().shared_bytes(), 0);
  }
}

TEST(CheckedSizes, AProductPastTwoToTheSixtyThreeIsRefused) {
  // Each dimension within bounds; the product (2^93 elements) is not.
  const int64_t d = int64_t{1} << 31;
  const auto e = WithExtraBuffer({d, d, d}, "sm_120f");
  EXPECT_EQ(e.analysis.verdict(), report::REJECTED);
  bool overflow_said = false;
  for (const auto& diag : e.analysis.diagnostics())
    overflow_said |= diag.id() == report::DIAG_INVALID_VALUE &&
                     diag.evidence().find("overflow") != std::string::npos;
  EXPECT_TRUE(overflow_said) << compiler::ToJson(e.analysis);
  // A rank past the bound, and a dimension past 2^31, are refused at construction too.
  EXPECT_TRUE(Has(WithExtraBuffer({1, 1, 1, 1, 1, 1, 1, 1, 1}, "sm_90").analysis,
                  report::DIAG_INVALID_VALUE, "kernels[0].buffers[2]"));
  EXPECT_TRUE(Has(WithExtraBuffer({d + 1}, "sm_90").analysis, report::DIAG_INVALID_VALUE));
}

TEST(CheckedSizes, ABufferWithinTheIrsBoundsStillFailsTheSharedBudgetWithTheTrueFigure) {
  // 2^19 x 2^19 BF16 = 2^39 bytes: a legal size for the IR, far over any SM's shared memory.
  const auto e = WithExtraBuffer({int64_t{1} << 19, int64_t{1} << 19}, "sm_120f");
  EXPECT_EQ(e.analysis.verdict(), report::REJECTED);
  bool said = false;
  for (const auto& d : e.analysis.diagnostics())
    said |= d.id() == report::DIAG_SHARED_BUDGET_EXCEEDED &&
            d.message().find("549755813888") != std::string::npos;
  EXPECT_TRUE(said) << compiler::ToJson(e.analysis);
}

TEST(CheckedSizes, AnAccumulatorOrWarpGridPastItsBoundIsRefused) {
  ir::Module m = testing::MustParse(testing::SourceDir() / "examples/gemm_bf16.textproto").module;
  ir::Module wide = m;
  wide.mutable_kernels(0)->mutable_accumulators(0)->mutable_partition()->set_rows(1 << 30);
  EXPECT_TRUE(Has(compiler::Emit(Parsed(wide), Target("sm_90")).analysis,
                  report::DIAG_INVALID_VALUE, "kernels[0].accumulators[0]"));
  ir::Module huge = m;
  auto* dims = huge.mutable_kernels(0)->mutable_accumulators(0)->mutable_shape();
  dims->mutable_dims(0)->set_size(int64_t{1} << 31);
  dims->mutable_dims(1)->set_size(int64_t{1} << 31);
  EXPECT_TRUE(Has(compiler::Emit(Parsed(huge), Target("sm_90")).analysis,
                  report::DIAG_INVALID_VALUE, "kernels[0].accumulators[0]"));
}

// Every schedule shipped (the examples, every workload's proposer space, the GEMM family with its
// sm_90-only points) passes the emission audit on every target it verifies for.
TEST(EmissionAudit, EveryShippedSchedulePasses) {
  std::vector<std::pair<std::string, ir::Module>> modules;
  for (const auto& e : fs::directory_iterator(testing::SourceDir() / "examples"))
    if (e.path().extension() == ".textproto")
      modules.emplace_back(e.path().filename().string(), testing::MustParse(e.path()).module);
  for (const std::string& op : workloads::RegisteredOperations())
    for (const workloads::Proposal& p : workloads::FindWorkload(op)->ScheduleSpace()) {
      auto parsed = compiler::ParseModuleText(p.schedule_text, p.label);
      ASSERT_TRUE(parsed.ok()) << p.label;
      modules.emplace_back(absl::StrCat(op, " ", p.label), parsed->module);
    }
  for (const auto& p : workloads::gemm_bf16::WarpGemmFamily())
    modules.emplace_back(p.Describe(), workloads::gemm_bf16::MakeWarpGemm(p));
  for (auto p : workloads::gemm_bf16::WarpGemmFamily()) {
    p.arch = ir::SM_90;
    modules.emplace_back(absl::StrCat(p.Describe(), " sm_90"),
                         workloads::gemm_bf16::MakeWarpGemm(p));
  }
  int audited = 0;
  for (const auto& [label, module] : modules)
    for (const compiler::TargetInfo& t : compiler::AllTargets()) {
      const compiler::ParsedModule parsed = Parsed(module);
      const compiler::EmitResult e = compiler::Emit(parsed, t);
      if (!e.source) continue;
      ++audited;
      const auto problems = compiler::AuditEmittedSource(parsed, t, {}, e.analysis, *e.source);
      EXPECT_TRUE(problems.empty()) << label << " on " << t.name << ": " << problems.front();
    }
  EXPECT_GT(audited, 100);
}

// Each thing a lowering must not write, planted in a real lowering's output, is found.
TEST(EmissionAudit, FindsWhatALoweringMustNotWrite) {
  const compiler::ParsedModule parsed =
      testing::MustParse(testing::SourceDir() / "examples/gemm_bf16.textproto");
  const compiler::EmitResult e = compiler::Emit(parsed, Target("sm_90"));
  ASSERT_TRUE(e.source);
  auto audit = [&](const std::string& text, int64_t shared) {
    compiler::LoweredKernel k = *e.source;
    k.text = text;
    k.dynamic_shared_bytes = shared;
    return compiler::AuditEmittedSource(parsed, Target("sm_90"), {}, e.analysis, k);
  };
  const std::string& good = e.source->text;
  const int64_t shared = e.source->dynamic_shared_bytes;
  EXPECT_TRUE(audit(good, shared).empty());
  const auto first = [](const std::vector<std::string>& p) { return p.empty() ? "" : p.front(); };
  // A directive beyond the fixed header.
  EXPECT_NE(first(audit(absl::StrCat("#include \"/etc/hostname\"\n", good), shared))
                .find("preprocessor line"),
            std::string::npos);
  // A line continued into the next (a comment swallowing code, or code made of a comment).
  EXPECT_NE(
      first(audit(absl::StrReplaceAll(good, {{"namespace {\n", "namespace { // \\\n"}}), shared))
          .find("continues"),
      std::string::npos);
  // A schedule name used as an identifier: the twin under fresh names writes something else.
  const std::string pasted = absl::StrReplaceAll(good, {{"int M,", "int a_stage,"}});
  ASSERT_NE(pasted, good);
  EXPECT_NE(first(audit(pasted, shared)).find("depends on the schedule's names"),
            std::string::npos);
  // A byte that is not printable ASCII.
  EXPECT_NE(first(audit(absl::StrCat(good, "// \xc3\xa9\n"), shared)).find("printable ASCII"),
            std::string::npos);
  // A launch whose dynamic shared memory is not analysis' figure.
  EXPECT_NE(first(audit(good, shared + 16)).find("dynamic shared memory"), std::string::npos);
}

TEST(ToolchainLog, OnlyLinesAboutTheGeneratedSourceAreShown) {
  const std::string log =
      "/store/tmp/k1/kernel.cu(32): error: identifier \"x\" is undefined\n"
      "      x = 1;\n"
      "      ^\n"
      "/etc/hostname(1): error: identifier \"SECRET\" is undefined\n"
      "/tmp/evil/kernel.cu(1): error: SECRET2\n"
      "In file included from /store/tmp/k1/kernel.cu(3): SECRET3\n"
      "/store/tmp/k1/kernel.cu(x): error: SECRET4\n"
      "2 errors detected in the compilation of \"/store/tmp/k1/kernel.cu\".\n";
  const compiler::ToolchainDiagnostics d = compiler::FilterNvccLog(log, "/store/tmp/k1/kernel.cu");
  ASSERT_EQ(d.errors.size(), 1u);
  EXPECT_EQ(d.errors[0].line, 32);
  EXPECT_EQ(d.errors[0].text, "kernel.cu(32): error: identifier \"x\" is undefined");
  EXPECT_EQ(d.withheld_lines, 7);
  // ptxas reads only the PTX made from the generated source: its errors are shown, path dropped.
  const compiler::ToolchainDiagnostics p = compiler::FilterNvccLog(
      "ptxas /store/tmp/k1/kernel.ptx, line 5; error   : Entry function uses too much shared "
      "data\nptxas info    : 0 bytes gmem\n",
      "/store/tmp/k1/kernel.cu");
  ASSERT_EQ(p.errors.size(), 1u);
  EXPECT_EQ(p.errors[0].text,
            "ptxas kernel.ptx, line 5; error   : Entry function uses too much shared data");
  EXPECT_EQ(p.withheld_lines, 1);
}

// The real nvcc, made to read a file: whatever the file holds, no shown line carries it.
TEST(ToolchainLog, AnIncludedFilesContentNeverReachesTheDiagnostics) {
  auto tc = compiler::DetectToolchain();
  if (!tc.ok()) GTEST_SKIP() << tc.status();
  const fs::path dir = testing::FreshDir("cake_toolchain_log");
  std::mt19937_64 rng(std::random_device{}());
  const std::string token = absl::StrCat("PLANTED", rng());
  std::ofstream(dir / "secret.txt") << token << " = " << token << " + 1;\n";
  const std::string source =
      absl::StrCat("#include \"", (dir / "secret.txt").string(), "\"\n__global__ void k() {}\n");
  auto nv = compiler::RunNvcc(*tc, Target("sm_90"), source, (dir / "build").string());
  ASSERT_TRUE(nv.ok()) << nv.status();
  ASSERT_FALSE(nv->ok);
  ASSERT_NE(nv->log.find(token), std::string::npos) << "nvcc did read the file: " << nv->log;
  const compiler::ToolchainDiagnostics d =
      compiler::FilterNvccLog(nv->log, (dir / "build" / "kernel.cu").string());
  for (const auto& e : d.errors) EXPECT_EQ(e.text.find(token), std::string::npos) << e.text;
  EXPECT_GT(d.withheld_lines, 0);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace cake
