// Portfolios: a guard is what makes a member legal (the unmasked schedule is rejected without
// it), malformed portfolios and guards are refused with their reason, the bundled portfolio
// compiles with the real toolchain into a manifest whose hashes are the store's, and dispatch
// always picks the first entry whose verified facts admit the shape.
#include "compiler/portfolio.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <random>

#include "base/digest.h"
#include "compiler/analysis.h"
#include "compiler/artifact_store.h"
#include "compiler/canonical.h"
#include "test_util.h"

namespace cake {
namespace {

namespace fs = std::filesystem;

portfolio::ScalarGuard Fact(const std::string& scalar, int64_t min, int64_t max,
                            int64_t multiple_of) {
  portfolio::ScalarGuard g;
  g.set_scalar(scalar);
  g.set_min(min);
  g.set_max(max);
  g.set_multiple_of(multiple_of);
  return g;
}

report::Verdict VerdictOf(const ir::Module& m) {
  compiler::ParsedModule parsed;
  parsed.module = m;
  return compiler::Analyze(parsed, **compiler::TargetByName("sm_120f"))->report.verdict();
}

TEST(Portfolio, TheGuardIsWhatMakesAnUnmaskedMemberLegal) {
  const auto full =
      testing::MustParse(testing::SourceDir() / "portfolios/gemm_bf16/full_tiles.textproto");
  EXPECT_EQ(VerdictOf(full.module), report::REJECTED);
  portfolio::ShapeGuard guard;
  *guard.add_scalars() = Fact("M", 0, 0, 128);
  *guard.add_scalars() = Fact("N", 0, 0, 128);
  *guard.add_scalars() = Fact("K", 0, 0, 32);
  auto guarded = compiler::ApplyGuard(full.module, guard);
  ASSERT_TRUE(guarded.ok()) << guarded.status();
  EXPECT_EQ(VerdictOf(*guarded), report::VERIFIED);
  // K's declared multiple of 8 and the guard's 32 combine to 32; M keeps its declared min of 1.
  const ir::Kernel& k = guarded->kernels(0);
  EXPECT_EQ(k.scalars(2).multiple_of(), 32);
  EXPECT_EQ(k.scalars(0).min(), 1);
  // Half the guard is not enough: N's tail is still unmasked.
  guard.mutable_scalars()->DeleteSubrange(1, 1);
  EXPECT_EQ(VerdictOf(*compiler::ApplyGuard(full.module, guard)), report::REJECTED);
}

TEST(Portfolio, MalformedGuardsAreRefusedWithTheirReason) {
  const auto m = testing::MustParse(testing::SourceDir() / "examples/gemm_bf16.textproto").module;
  struct Case {
    portfolio::ScalarGuard fact;
    const char* says;
  };
  const Case cases[] = {
      {Fact("Q", 0, 0, 0), "no kernel declares"},
      {Fact("M", 100, 50, 0), "admits no value"},
      {Fact("M", 129, 200, 256), "admits no value"},
      {Fact("K", 0, 0, -4), "outside"},
      {Fact("K", 0, 0, (int64_t{1} << 20) - 1), "beyond"},  // lcm with the declared 8
  };
  for (const Case& c : cases) {
    portfolio::ShapeGuard g;
    *g.add_scalars() = c.fact;
    auto r = compiler::ApplyGuard(m, g);
    ASSERT_FALSE(r.ok()) << c.fact.DebugString();
    EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_NE(r.status().message().find(c.says), std::string::npos) << r.status();
  }
}

TEST(Portfolio, MalformedPortfoliosAreRefused) {
  auto base = compiler::ParsePortfolioFile(
      (testing::SourceDir() / "portfolios/gemm_bf16.textproto").string());
  ASSERT_TRUE(base.ok()) << base.status();
  EXPECT_TRUE(compiler::CheckPortfolio(*base).ok());
  auto broken = [&](auto edit) {
    portfolio::Portfolio p = *base;
    edit(p);
    return compiler::CheckPortfolio(p);
  };
  EXPECT_FALSE(broken([](auto& p) { p.clear_members(); }).ok());
  EXPECT_FALSE(broken([](auto& p) {
                 for (int i = 0; i < 16; ++i) {
                   *p.add_members() = p.members(0);
                   p.mutable_members()->rbegin()->set_name("m" + std::to_string(i));
                 }
               }).ok());
  EXPECT_FALSE(broken([](auto& p) { p.mutable_members(1)->set_name("full_tiles"); }).ok());
  EXPECT_FALSE(broken([](auto& p) {
                 *p.mutable_fallback()->mutable_guard()->add_scalars() = Fact("M", 0, 64, 0);
               }).ok());
  EXPECT_FALSE(broken([](auto& p) { p.clear_fallback(); }).ok());
  EXPECT_FALSE(
      broken([](auto& p) { p.mutable_members(0)->set_schedule_file("/etc/passwd"); }).ok());
  EXPECT_FALSE(broken([](auto& p) { p.mutable_members(0)->set_name(std::string(65, 'x')); }).ok());
}

// What a proposal carries: every member inline. Its hash names the schedules (canonically), the
// dispatch order and the guards, not the text's layout or the order a guard lists its facts.
TEST(Portfolio, InlinedPortfolioHashIsCanonical) {
  const fs::path file = testing::SourceDir() / "portfolios/gemm_bf16.textproto";
  auto base = compiler::ParsePortfolioFile(file.string());
  ASSERT_TRUE(base.ok()) << base.status();
  // With files, it is not self-contained and has no hash.
  auto unhashed = compiler::PortfolioHash(*base);
  ASSERT_FALSE(unhashed.ok());
  EXPECT_NE(unhashed.status().message().find("schedule_file"), std::string::npos);
  auto inlined = compiler::InlineMemberFiles(*base, file.parent_path());
  ASSERT_TRUE(inlined.ok()) << inlined.status();
  ASSERT_TRUE(compiler::CheckSelfContained(*inlined).ok());
  for (const auto& m : inlined->members()) EXPECT_TRUE(m.schedule_file().empty());
  EXPECT_EQ(inlined->fallback().schedule_text(),
            testing::ReadText(testing::SourceDir() / "examples/gemm_bf16.textproto"));
  auto hash = compiler::PortfolioHash(*inlined);
  ASSERT_TRUE(hash.ok()) << hash.status();
  EXPECT_EQ(hash->size(), 64u);

  auto hash_of = [&](auto edit) {
    portfolio::Portfolio p = *inlined;
    edit(p);
    auto h = compiler::PortfolioHash(p);
    EXPECT_TRUE(h.ok()) << h.status();
    return h.ok() ? *h : std::string();
  };
  // The same meaning: facts listed in another order, the schedule text re-laid out.
  EXPECT_EQ(*hash, hash_of([](auto& p) {
    auto* facts = p.mutable_members(0)->mutable_guard()->mutable_scalars();
    std::reverse(facts->begin(), facts->end());
  }));
  EXPECT_EQ(*hash, hash_of([](auto& p) {
    p.mutable_fallback()->set_schedule_text("# a comment\n" + p.fallback().schedule_text());
  }));
  // Another meaning: member order (dispatch), a guard fact, a member's name, the portfolio's.
  EXPECT_NE(*hash, hash_of([](auto& p) { p.mutable_members()->SwapElements(0, 1); }));
  EXPECT_NE(*hash, hash_of([](auto& p) {
    p.mutable_members(1)->mutable_guard()->mutable_scalars(0)->set_max(32);
  }));
  EXPECT_NE(*hash, hash_of([](auto& p) { p.mutable_members(1)->set_name("small_m"); }));
  EXPECT_NE(*hash, hash_of([](auto& p) { p.set_name("gemm_bf16_tn_v2"); }));

  // A member naming a file (what a daemon must never read) or a bad name is refused.
  portfolio::Portfolio with_file = *inlined;
  with_file.mutable_members(0)->set_schedule_file("x.textproto");
  EXPECT_FALSE(compiler::CheckSelfContained(with_file).ok());  // both given
  with_file.mutable_members(0)->clear_schedule_text();
  EXPECT_FALSE(compiler::CheckSelfContained(with_file).ok());
  portfolio::Portfolio odd_name = *inlined;
  odd_name.mutable_members(0)->set_name("a\tb");
  EXPECT_FALSE(compiler::CheckPortfolio(odd_name).ok());
  odd_name = *inlined;
  odd_name.set_name("line\nbreak");
  EXPECT_FALSE(compiler::CheckPortfolio(odd_name).ok());
  // Inlining refuses a missing file and schedules over the size limit.
  portfolio::Portfolio missing = *base;
  missing.mutable_members(0)->set_schedule_file("no_such_member.textproto");
  EXPECT_EQ(compiler::InlineMemberFiles(missing, file.parent_path()).status().code(),
            absl::StatusCode::kNotFound);
}

class BundledPortfolio : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    const fs::path file = testing::SourceDir() / "portfolios/gemm_bf16.textproto";
    auto p = compiler::ParsePortfolioFile(file.string());
    ASSERT_TRUE(p.ok()) << p.status();
    store_ = testing::FreshDir("cake_portfolio_store");
    compiler::CompileOptions opts;
    opts.store_root = store_.string();
    auto r = compiler::CompilePortfolio(*p, file.parent_path(), **compiler::TargetByName("sm_120f"),
                                        opts);
    ASSERT_TRUE(r.ok()) << r.status();
    result_ = new compiler::PortfolioResult(*std::move(r));
  }
  static void TearDownTestSuite() {
    delete result_;
    result_ = nullptr;
    fs::remove_all(store_);
  }
  static inline compiler::PortfolioResult* result_ = nullptr;
  static inline fs::path store_;
};

TEST_F(BundledPortfolio, EveryMemberCompilesAndTheManifestMatchesTheStore) {
  ASSERT_NE(result_, nullptr);
  for (const auto& m : result_->members) EXPECT_TRUE(m.error.empty()) << m.name << ": " << m.error;
  EXPECT_TRUE(result_->complete);
  const auto& manifest = result_->manifest;
  ASSERT_EQ(manifest.entries_size(), 3);
  EXPECT_EQ(manifest.entries(0).name(), "full_tiles");
  EXPECT_EQ(manifest.entries(2).name(), "general");
  EXPECT_EQ(manifest.target(), "sm_120f");
  for (const auto& e : manifest.entries()) {
    SCOPED_TRACE(e.name());
    EXPECT_EQ(e.receipt().outcome(), report::LoweringReceipt::PASS);
    const std::string cubin =
        testing::ReadText(fs::path(e.receipt().artifact_dir()) / "kernel.cubin");
    ASSERT_FALSE(cubin.empty());
    EXPECT_EQ(base::Sha256Hex(cubin), e.cubin_sha256());
    EXPECT_EQ(e.schedule_hash(), e.receipt().schedule_hash());
  }
  // The split member launches its slices with a workspace; the others do not.
  EXPECT_EQ(manifest.entries(1).launch().grid_z().count(), 4);
  EXPECT_EQ(manifest.entries(0).launch().grid_z().count(), 0);
  // The guarded member's hash is of the schedule as verified, not of its file.
  const auto full =
      testing::MustParse(testing::SourceDir() / "portfolios/gemm_bf16/full_tiles.textproto");
  EXPECT_NE(manifest.entries(0).schedule_hash(), compiler::ScheduleHash(full.module));
}

TEST_F(BundledPortfolio, ARuntimeLoadsTheManifestAndRefusesATamperedOne) {
  ASSERT_NE(result_, nullptr);
  const fs::path dir = testing::FreshDir("cake_manifest");
  const std::string json = compiler::ToJson(result_->manifest);
  std::ofstream(dir / "manifest.json") << json;
  auto loaded = compiler::LoadManifest((dir / "manifest.json").string());
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  EXPECT_EQ(loaded->SerializeAsString(), result_->manifest.SerializeAsString());
  auto runs = compiler::Dispatch(*loaded, {{"M", 16}, {"N", 4096}, {"K", 4096}});
  ASSERT_TRUE(runs.ok());
  EXPECT_EQ(loaded->entries(*runs).name(), "skinny_split_k");

  // An entry naming another entry's cubin hash: its cubin file no longer matches.
  std::string swapped = json;
  const std::string first = result_->manifest.entries(0).cubin_sha256();
  const std::string other = result_->manifest.entries(1).cubin_sha256();
  swapped.replace(swapped.find(first), first.size(), other);
  std::ofstream(dir / "swapped.json") << swapped;
  auto refused = compiler::LoadManifest((dir / "swapped.json").string());
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("does not have the hash"), std::string::npos)
      << refused.status();
  std::ofstream(dir / "other.json") << "{\"rows\": 3}";
  EXPECT_FALSE(compiler::LoadManifest((dir / "other.json").string()).ok());
  std::ofstream(dir / "empty.json") << "{}";
  EXPECT_FALSE(compiler::LoadManifest((dir / "empty.json").string()).ok());
  EXPECT_EQ(compiler::LoadManifest((dir / "absent.json").string()).status().code(),
            absl::StatusCode::kNotFound);
  fs::remove_all(dir);
}

TEST_F(BundledPortfolio, DispatchTakesTheFirstAdmittingEntry) {
  ASSERT_NE(result_, nullptr);
  const auto& manifest = result_->manifest;
  auto pick = [&](int64_t m, int64_t n, int64_t k) {
    auto i = compiler::Dispatch(manifest, {{"M", m}, {"N", n}, {"K", k}});
    return i.ok() ? manifest.entries(*i).name() : std::string("none");
  };
  EXPECT_EQ(pick(256, 512, 1024), "full_tiles");
  EXPECT_EQ(pick(128, 128, 32), "full_tiles");
  EXPECT_EQ(pick(32, 8192, 8192), "skinny_split_k");
  EXPECT_EQ(pick(64, 100, 72), "skinny_split_k");
  EXPECT_EQ(pick(65, 100, 72), "general");
  EXPECT_EQ(pick(256, 512, 1000), "general");  // K not a multiple of 32
  EXPECT_EQ(pick(256, 512, 12), "none");       // K breaks the kernel's own multiple of 8
  EXPECT_EQ(pick(0, 512, 64), "none");         // M below the declared minimum

  // Against a direct reading of the facts, on random shapes: the pick is the first entry whose
  // facts all hold, and a shape no entry admits breaks the fallback's (the declared) facts.
  std::mt19937_64 rng(std::random_device{}());
  std::uniform_int_distribution<int64_t> extent(-2, 600);
  for (int trial = 0; trial < 2000; ++trial) {
    const compiler::ScalarValues s = {{"M", extent(rng)}, {"N", extent(rng)}, {"K", extent(rng)}};
    auto holds = [&](const portfolio::ShapeGuard& g) {
      for (const auto& f : g.scalars()) {
        const int64_t v = s.at(f.scalar());
        if (v < f.min() || (f.max() != 0 && v > f.max()) ||
            (f.multiple_of() > 1 && v % f.multiple_of() != 0))
          return false;
      }
      return true;
    };
    int expected = -1;
    for (int i = 0; i < manifest.entries_size() && expected < 0; ++i)
      if (holds(manifest.entries(i).guard())) expected = i;
    auto got = compiler::Dispatch(manifest, s);
    if (expected < 0) {
      EXPECT_FALSE(got.ok());
      EXPECT_FALSE(holds(manifest.entries(manifest.entries_size() - 1).guard()));
    } else {
      ASSERT_TRUE(got.ok()) << got.status();
      EXPECT_EQ(*got, expected);
    }
  }
  // A shape missing a scalar is admitted by nothing.
  EXPECT_FALSE(compiler::Dispatch(manifest, {{"M", 128}, {"N", 128}}).ok());
}

TEST(Portfolio, AMemberOfAnotherSignatureStaysOutOfTheManifest) {
  const fs::path dir = testing::FreshDir("cake_portfolio_signature");
  std::string f32 = testing::ReadText(testing::SourceDir() / "examples/gemm_bf16.textproto");
  // C as FP32: a runtime could not call it with the fallback's arguments.
  const std::string c_bf16 = "name: \"C\" dtype: BF16";
  ASSERT_NE(f32.find(c_bf16), std::string::npos);
  f32.replace(f32.find(c_bf16), c_bf16.size(), "name: \"C\" dtype: F32");
  f32.replace(f32.find("cast: BF16"), 10, "cast: F32");
  std::ofstream(dir / "f32.textproto") << f32;
  std::ofstream(dir / "general.textproto")
      << testing::ReadText(testing::SourceDir() / "examples/gemm_bf16.textproto");
  portfolio::Portfolio p;
  p.set_name("mixed");
  p.add_members()->set_name("f32_out");
  p.mutable_members(0)->set_schedule_file("f32.textproto");
  p.mutable_fallback()->set_name("general");
  p.mutable_fallback()->set_schedule_file("general.textproto");
  compiler::CompileOptions opts;
  opts.store_root = (dir / "store").string();
  auto r = compiler::CompilePortfolio(p, dir, **compiler::TargetByName("sm_120f"), opts);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_FALSE(r->complete);
  ASSERT_EQ(r->members.size(), 2u);
  EXPECT_NE(r->members[0].error.find("C:F32"), std::string::npos) << r->members[0].error;
  ASSERT_EQ(r->manifest.entries_size(), 1);
  EXPECT_EQ(r->manifest.entries(0).name(), "general");
  // A missing member file is an input error, before anything compiles.
  p.mutable_members(0)->set_schedule_file("absent.textproto");
  auto missing = compiler::CompilePortfolio(p, dir, **compiler::TargetByName("sm_120f"), opts);
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("absent.textproto"), std::string::npos);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace cake
