// cakec as a user runs it: exit codes (0 verified/compiled, 1 rejected or unknown, 2 usage or
// input error), messages on stderr, data on stdout.
#include <gtest/gtest.h>

#include <fstream>
#include <map>

#include "base/subprocess.h"
#include "test_util.h"

namespace cake {
namespace {

struct CliRun {
  int code;
  std::string out, err;
};

CliRun Cakec(std::vector<std::string> args, std::map<std::string, std::string> env = {}) {
  std::vector<std::string> argv = {CAKEC_PATH};
  argv.insert(argv.end(), args.begin(), args.end());
  base::SubprocessOptions opts;
  opts.env = std::move(env);
  auto r = base::RunSubprocess(argv, opts);
  EXPECT_TRUE(r.ok()) << r.status();
  return {r->exit_code, r->stdout_bytes, r->stderr_bytes};
}

std::string Src(const char* rel) { return (testing::SourceDir() / rel).string(); }

TEST(Cakec, HelpAndTargets) {
  CliRun help = Cakec({"--help"});
  EXPECT_EQ(help.code, 0);
  EXPECT_NE(help.out.find("analyze"), std::string::npos);
  CliRun sub = Cakec({"compile", "--help"});
  EXPECT_EQ(sub.code, 0);
  EXPECT_NE(sub.out.find("--target"), std::string::npos);
  CliRun t = Cakec({"targets"});
  EXPECT_EQ(t.code, 0);
  for (const char* name : {"sm_120a", "sm_121a", "sm_120f", "sm_90"})
    EXPECT_NE(t.out.find(name), std::string::npos);
}

TEST(Cakec, AnalyzeVerifiedExitsZero) {
  CliRun r = Cakec({"analyze", Src("examples/gemm_bf16.textproto"), "--target", "sm_120f"});
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("verdict  verified"), std::string::npos) << r.out;
}

TEST(Cakec, VersionAndOutputFormat) {
  CliRun v = Cakec({"--version"});
  EXPECT_EQ(v.code, 0);
  EXPECT_EQ(v.out.rfind("cakec ", 0), 0u) << v.out;
  // -o json, the convention of cakectl, and --json, kept as its alias, print the same report.
  CliRun o = Cakec({"analyze", Src("examples/gemm_bf16.textproto"), "-o", "json"});
  CliRun j = Cakec({"analyze", Src("examples/gemm_bf16.textproto"), "--json"});
  EXPECT_EQ(o.code, 0) << o.err;
  EXPECT_EQ(o.out, j.out);
  EXPECT_NE(o.out.find("\"verdict\": \"VERIFIED\""), std::string::npos) << o.out;
  EXPECT_EQ(Cakec({"analyze", Src("examples/gemm_bf16.textproto"), "-o", "yaml"}).code, 2);
}

TEST(Cakec, AnalyzeJsonCarriesStableCodes) {
  CliRun r = Cakec({"analyze", Src("tests/corpus/illegal/forbidden_tmem.textproto"), "--json"});
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.out.find("\"DIAG_FORBIDDEN_TMEM\""), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("\"REJECTED\""), std::string::npos);
}

TEST(Cakec, RejectionExitsOneWithPositionedDiagnostics) {
  const std::string file = Src("tests/corpus/illegal/pipe_reuse_before_release.textproto");
  CliRun r = Cakec({"analyze", file});
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find(file + ":"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("error: DIAG_PIPE_REUSE_BEFORE_RELEASE"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("^"), std::string::npos);
  EXPECT_NE(r.err.find("repair: move the release after the final shared read"), std::string::npos);
}

TEST(Cakec, UnknownVerdictExitsOne) {
  CliRun r = Cakec({"analyze", Src("examples/sparse_mla_decode.textproto")});
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("unknown: DIAG_LOWERING_UNSUPPORTED"), std::string::npos);
}

TEST(Cakec, MalformedInputExitsTwoWithFileLineColumn) {
  const auto dir = testing::FreshDir("cakec_cli");
  const std::string bad = (dir / "bad.textproto").string();
  std::ofstream(bad) << "name: \"x\"\nkernels { name: \"k\" launch { threads_per_cta: } }\n";
  CliRun r = Cakec({"analyze", bad});
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(r.err.rfind(bad + ":2:", 0), 0u) << r.err;
  EXPECT_TRUE(r.out.empty());
}

TEST(Cakec, UnknownTargetListsTheAdmittedOnes) {
  CliRun r = Cakec({"analyze", Src("examples/gemm_bf16.textproto"), "--target", "sm_100a"});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(
      r.err.find(
          "unknown target 'sm_100a'; admitted targets: sm_120a, sm_121a, sm_120f, sm_120, sm_90"),
      std::string::npos)
      << r.err;
}

TEST(Cakec, MissingFileAndUsageErrorsExitTwo) {
  EXPECT_EQ(Cakec({"analyze", "/nonexistent.textproto"}).code, 2);
  EXPECT_EQ(Cakec({"analyze"}).code, 2);
  EXPECT_EQ(Cakec({"frobnicate"}).code, 2);
}

TEST(Cakec, MissingToolchainIsOneClearLine) {
  CliRun r =
      Cakec({"compile", Src("examples/gemm_bf16.textproto")}, {{"CAKE_NVCC", "/nonexistent/nvcc"}});
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  EXPECT_NE(r.err.find("nvcc not found"), std::string::npos);
  EXPECT_NE(r.err.find("make bootstrap"), std::string::npos);
  CliRun c = Cakec({"compile", Src("examples/gemm_bf16.textproto")},
                   {{"CAKE_CUOBJDUMP", "/nonexistent/cuobjdump"}});
  EXPECT_EQ(c.code, 2);
  EXPECT_NE(c.err.find("cuobjdump not found"), std::string::npos) << c.err;
}

TEST(Cakec, CompileTwiceReportsACacheHit) {
  const auto dir = testing::FreshDir("cakec_store");
  const std::vector<std::string> args = {
      "compile",   Src("examples/gemm_bf16.textproto"), "--target", "sm_120f", "--json", "--store",
      dir.string()};
  CliRun first = Cakec(args);
  ASSERT_EQ(first.code, 0) << first.err;
  EXPECT_NE(first.out.find("\"cache\": \"MISS\""), std::string::npos);
  EXPECT_NE(first.out.find("\"expected_sass\": \"HMMA.16816.F32.BF16\""), std::string::npos);
  EXPECT_NE(first.out.find("\"spill_store_bytes\": \"0\""), std::string::npos) << first.out;
  CliRun second = Cakec(args);
  EXPECT_EQ(second.code, 0);
  EXPECT_NE(second.out.find("\"cache\": \"HIT\""), std::string::npos);
  // --repeat: the cache path benchmarked in one process; the receipt is the last call's.
  std::vector<std::string> repeated = args;
  repeated.insert(repeated.end(), {"--repeat", "4"});
  CliRun bench = Cakec(repeated);
  EXPECT_EQ(bench.code, 0) << bench.err;
  EXPECT_NE(bench.err.find("compile x4: first "), std::string::npos) << bench.err;
  EXPECT_NE(bench.err.find("over 3 calls (artifact-cache hits)"), std::string::npos) << bench.err;
  EXPECT_NE(bench.out.find("\"cache\": \"HIT\""), std::string::npos);
  EXPECT_EQ(Cakec({"compile", Src("examples/gemm_bf16.textproto"), "--repeat", "0"}).code, 2);
  std::filesystem::remove_all(dir);
}

TEST(Cakec, EmitPrintsDeterministicSource) {
  CliRun a = Cakec({"emit", Src("examples/gemm_bf16.textproto")});
  CliRun b = Cakec({"emit", Src("examples/gemm_bf16.textproto")});
  EXPECT_EQ(a.code, 0);
  EXPECT_EQ(a.out, b.out);
  EXPECT_NE(a.out.find("extern \"C\" __global__"), std::string::npos);
}

TEST(Cakec, PortfolioPrintsTheManifestAndNamesFailingMembers) {
  const auto dir = testing::FreshDir("cakec_portfolio");
  CliRun ok = Cakec({"portfolio", Src("portfolios/gemm_bf16.textproto"), "--target", "sm_120f",
                     "--store", (dir / "store").string()});
  ASSERT_EQ(ok.code, 0) << ok.err;
  for (const char* name : {"\"full_tiles\"", "\"skinny_split_k\"", "\"general\""})
    EXPECT_NE(ok.out.find(name), std::string::npos) << name;
  EXPECT_NE(ok.out.find("\"cubin_sha256\""), std::string::npos);

  // The unmasked member without its guard: rejected, named with its diagnostic; exit 1.
  std::ofstream(dir / "full_tiles.textproto")
      << testing::ReadText(Src("portfolios/gemm_bf16/full_tiles.textproto"));
  std::ofstream(dir / "general.textproto")
      << testing::ReadText(Src("examples/gemm_bf16.textproto"));
  std::ofstream(dir / "p.textproto")
      << "name: \"unguarded\"\n"
      << "members { name: \"full_tiles\" schedule_file: \"full_tiles.textproto\" }\n"
      << "fallback { name: \"general\" schedule_file: \"general.textproto\" }\n";
  CliRun bad = Cakec({"portfolio", (dir / "p.textproto").string(), "-t", "sm_120f", "--store",
                      (dir / "store").string()});
  EXPECT_EQ(bad.code, 1) << bad.err;
  EXPECT_NE(bad.err.find("member full_tiles"), std::string::npos) << bad.err;
  EXPECT_NE(bad.err.find("DIAG_TAIL_UNMASKED"), std::string::npos) << bad.err;

  std::ofstream(dir / "malformed.textproto") << "members { name: ";
  CliRun malformed = Cakec({"portfolio", (dir / "malformed.textproto").string(), "-t", "sm_120f"});
  EXPECT_EQ(malformed.code, 2);
  EXPECT_NE(malformed.err.find("malformed portfolio"), std::string::npos) << malformed.err;
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace cake
