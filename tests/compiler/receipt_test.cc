// Lowering receipts from the real toolchain (nvcc, ptxas, cuobjdump) for every admitted target:
// the intended instruction forms are observed in the SASS, no spills, and a repeated compile is
// a cache hit. A tampered artifact is not served from the cache.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "compiler/artifact_store.h"
#include "compiler/compiler.h"
#include "test_util.h"
#include "workloads/gemm_bf16/space.h"

namespace cake {
namespace {

namespace fs = std::filesystem;

int64_t Observed(const report::LoweringReceipt& r, const std::string& sass) {
  for (const auto& f : r.selected_forms())
    if (f.expected_sass() == sass) return f.observed_count();
  return -1;
}

class ReceiptTest : public ::testing::TestWithParam<std::string> {};

TEST_P(ReceiptTest, BundledGemmReceiptPassesAndCaches) {
  const fs::path store = testing::FreshDir("cake_receipts");
  auto target = compiler::TargetByName(GetParam());
  ASSERT_TRUE(target.ok());
  compiler::ParsedModule parsed =
      testing::MustParse(testing::SourceDir() / "examples/gemm_bf16.textproto");
  compiler::CompileOptions opts;
  opts.store_root = store.string();

  auto first = compiler::Compile(parsed, **target, opts);
  ASSERT_TRUE(first.ok()) << first.status();
  ASSERT_TRUE(first->receipt.has_value()) << compiler::ToJson(first->analysis);
  const report::LoweringReceipt& r = *first->receipt;
  EXPECT_EQ(r.outcome(), report::LoweringReceipt::PASS) << compiler::ToJson(r);
  EXPECT_EQ(r.cache(), report::LoweringReceipt::MISS);
  EXPECT_EQ(r.target(), GetParam());
  EXPECT_EQ(r.ptx_target_emitted(), GetParam());
  EXPECT_FALSE(r.ptx_version_emitted().empty());
  EXPECT_GT(Observed(r, "HMMA.16816.F32.BF16"), 0);
  EXPECT_GT(Observed(r, "LDSM.16.M88.4"), 0);
  EXPECT_GT(Observed(r, "LDGSTS.E.BYPASS.128"), 0);
  EXPECT_EQ(r.resources().spill_store_bytes(), 0);
  EXPECT_EQ(r.resources().spill_load_bytes(), 0);
  EXPECT_GT(r.resources().registers(), 0);
  EXPECT_EQ(r.resources().shared_dynamic_bytes(), 61440);
  EXPECT_EQ(r.cubin_sha256().size(), 64u);
  EXPECT_FALSE(r.op_source_map().empty());
  if (GetParam() == "sm_90")
    EXPECT_NE(r.witness().find("Hopper witness"), std::string::npos);
  else
    EXPECT_NE(r.witness().find("no SM120 execution witness"), std::string::npos);

  auto second = compiler::Compile(parsed, **target, opts);
  ASSERT_TRUE(second.ok());
  ASSERT_TRUE(second->receipt.has_value());
  EXPECT_EQ(second->receipt->cache(), report::LoweringReceipt::HIT);
  EXPECT_EQ(second->receipt->cubin_sha256(), r.cubin_sha256());
  EXPECT_EQ(second->receipt->artifact_key(), r.artifact_key());

  // Corrupt the stored cubin: the entry no longer matches its receipt and is rebuilt.
  std::ofstream(fs::path(r.artifact_dir()) / "kernel.cubin", std::ios::trunc) << "garbage";
  auto third = compiler::Compile(parsed, **target, opts);
  ASSERT_TRUE(third.ok());
  EXPECT_EQ(third->receipt->cache(), report::LoweringReceipt::MISS);
  EXPECT_EQ(third->receipt->cubin_sha256(), r.cubin_sha256());
  fs::remove_all(store);
}

INSTANTIATE_TEST_SUITE_P(AllTargets, ReceiptTest,
                         ::testing::Values("sm_120f", "sm_121a", "sm_120a", "sm_90"));

// Every point of the staged GEMM family (the proposer's space and the benchmark's wider points)
// compiles to a passing receipt (no spills, every expected SASS form present) on the family
// target and the Hopper witness target.
TEST(ReceiptSpace, EveryCandidateCompiles) {
  const fs::path store = testing::FreshDir("cake_receipts_space");
  compiler::CompileOptions opts;
  opts.store_root = store.string();
  for (const char* t : {"sm_120f", "sm_90"}) {
    auto target = compiler::TargetByName(t);
    ASSERT_TRUE(target.ok());
    std::set<std::string> cubins;
    for (const workloads::gemm_bf16::WarpGemmParams& p : workloads::gemm_bf16::WarpGemmFamily()) {
      compiler::ParsedModule parsed;
      parsed.module = workloads::gemm_bf16::MakeWarpGemm(p);
      auto c = compiler::Compile(parsed, **target, opts);
      ASSERT_TRUE(c.ok()) << c.status();
      ASSERT_TRUE(c->receipt.has_value()) << p.Describe() << compiler::ToJson(c->analysis);
      EXPECT_EQ(c->receipt->outcome(), report::LoweringReceipt::PASS)
          << t << " " << p.Describe() << compiler::ToJson(*c->receipt);
      // What the kernel is launched with is what analysis planned and budgeted.
      EXPECT_EQ(c->receipt->resources().shared_dynamic_bytes(),
                c->analysis.resources().shared_bytes())
          << p.Describe();
      EXPECT_EQ(c->receipt->launch().dynamic_shared_bytes(), c->analysis.resources().shared_bytes())
          << p.Describe();
      cubins.insert(c->receipt->cubin_sha256());
    }
    EXPECT_EQ(cubins.size(), workloads::gemm_bf16::WarpGemmFamily().size())
        << "candidates are distinct";
  }
  fs::remove_all(store);
}

// Eight compute warps of 64x64 beside a loader warpgroup that gives them its registers
// (setmaxnreg 232 / 40): the lowering emits setmaxnreg.dec/.inc, but for SM12x ptxas drops both
// (C7506, "setmaxnreg ignored to maintain compatibility into 'extern' call"): the TMA copy takes
// the generic address of the __grid_constant__ tensor map, which SM12x code reaches through a
// CALL.ABS. The receipt sees USETMAXREG missing from the SASS and fails, rather than passing a
// kernel whose registers never moved. sm_90 rejects setmaxnreg at admission.
TEST(ReceiptSpace, DroppedSetmaxnregFailsTheSm120Receipt) {
  const fs::path store = testing::FreshDir("cake_receipts_setmaxnreg");
  compiler::CompileOptions opts;
  opts.store_root = store.string();
  workloads::gemm_bf16::WarpGemmParams p;
  p.tile_m = 128, p.tile_n = 256, p.tile_k = 64, p.warps_m = 2, p.warps_n = 4, p.stages = 2;
  p.smem = ir::Representation::SWIZZLE_128B, p.padding = 0, p.transfer = ir::TMA;
  p.warp_specialized = true;
  p.loader_warps = 4;
  p.compute_registers = 232;  // 256 x 232 + 128 x 40 = 64,512 of 65,536
  p.loader_registers = 40;
  compiler::ParsedModule parsed;
  parsed.module = workloads::gemm_bf16::MakeWarpGemm(p);
  auto c = compiler::Compile(parsed, **compiler::TargetByName("sm_120f"), opts);
  ASSERT_TRUE(c.ok()) << c.status();
  ASSERT_TRUE(c->receipt.has_value()) << compiler::ToJson(c->analysis);
  const report::LoweringReceipt& r = *c->receipt;
  EXPECT_EQ(r.threads_per_cta(), 384);
  EXPECT_EQ(r.outcome(), report::LoweringReceipt::FAIL);
  EXPECT_EQ(Observed(r, "USETMAXREG"), 0);
  bool form_missing = false;
  for (const report::Diagnostic& d : r.failures())
    form_missing |= d.id() == report::DIAG_SASS_FORM_MISSING &&
                    d.condition().find("setmaxnreg") != std::string::npos;
  EXPECT_TRUE(form_missing) << compiler::ToJson(r);
  bool call = false;
  for (const report::SassOpcodeCount& op : r.sass_census())
    call |= op.opcode().rfind("CALL", 0) == 0;
  EXPECT_TRUE(call) << "the cause seen: the tensor map's generic address is taken by a call";

  auto hopper = compiler::Compile(parsed, **compiler::TargetByName("sm_90"), opts);
  ASSERT_TRUE(hopper.ok());
  EXPECT_FALSE(hopper->receipt.has_value()) << "setmaxnreg lowered for sm_90";
  EXPECT_EQ(hopper->analysis.verdict(), report::REJECTED);
  fs::remove_all(store);
}

// A schedule that fails analysis produces no receipt, and Compile does not touch the toolchain's
// output directory for it.
TEST(ReceiptSpace, RejectedScheduleHasNoReceipt) {
  const fs::path store = testing::FreshDir("cake_receipts_rejected");
  compiler::ParsedModule parsed =
      testing::MustParse(testing::SourceDir() / "tests/corpus/illegal/forbidden_wgmma.textproto");
  compiler::CompileOptions opts;
  opts.store_root = store.string();
  auto target = compiler::TargetByName("sm_120f");
  auto c = compiler::Compile(parsed, **target, opts);
  ASSERT_TRUE(c.ok());
  EXPECT_FALSE(c->receipt.has_value());
  EXPECT_EQ(c->analysis.verdict(), report::REJECTED);
  fs::remove_all(store);
}

}  // namespace
}  // namespace cake
