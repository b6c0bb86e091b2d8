// Hopper witness: the sm_90 lowering of warp-GEMM schedules, loaded with the Driver API, matches
// a float64 CPU oracle on fresh random inputs over several shapes (tails included), with outputs
// poisoned before every launch. Skips cleanly without a driver or an sm_90 device. When
// $CAKE_EVIDENCE_DIR is set, writes hopper_witness.json there.
#include <gtest/gtest.h>
#include "base/digest.h"

#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <random>
#include <sstream>

#include "compiler/artifact_store.h"
#include "compiler/canonical.h"
#include "compiler/compiler.h"
#include "gpuqueue/worker/cuda_driver.h"
#include "gpuqueue/worker/kernel.h"
#include "tests/gpu/sm90_driver_fixture.h"
#include "workloads/gemm_bf16/gemm_bf16.h"
#include "workloads/gemm_bf16/space.h"
#include "workloads/numeric.h"

namespace cake {
namespace {

namespace fs = std::filesystem;
using workloads::gemm_bf16::WarpGemmParams;

struct Shape {
  int m, n, k;
};

// Tails in M and N (and K not a multiple of the k-tile), tiny, and multi-tile shapes.
const Shape kShapes[] = {{128, 128, 64}, {129, 67, 40},   {1, 1, 8},       {300, 200, 264},
                         {77, 129, 16},  {256, 384, 512}, {512, 512, 1024}};

std::string ReadFile(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

class HopperWitness : public testing::Sm90DriverFixture<::testing::Test> {
 protected:
  static void SetUpTestSuite() { OpenSm90("the Hopper witness"); }
  static void TearDownTestSuite() {
    CloseWritingEvidence("hopper_witness.json",
                         "sm_90 Hopper witness of the portable subset; no SM120 execution witness");
  }

  void RunVariant(const WarpGemmParams& params) {
    RunModule(workloads::gemm_bf16::MakeWarpGemm(params), params, kShapes, {}, nullptr);
  }

  // Compiles `module` for sm_90 (with `unchecked` passes left unrun) and checks it against the
  // oracle on `shapes`. With `failures` set, counts the shapes that disagree instead of failing.
  template <size_t N>
  void RunModule(const ir::Module& module, const WarpGemmParams& params, const Shape (&shapes)[N],
                 const std::vector<std::string>& unchecked, int* failures) {
    compiler::ParsedModule parsed;
    parsed.module = module;
    parsed.file = params.Describe();
    const fs::path store = fs::temp_directory_path() / "cake_witness_store";
    compiler::CompileOptions opts;
    opts.store_root = store.string();
    opts.unchecked_passes = unchecked;
    auto sm90 = compiler::TargetByName("sm_90");
    ASSERT_TRUE(sm90.ok());
    auto compiled = compiler::Compile(parsed, **sm90, opts);
    ASSERT_TRUE(compiled.ok()) << compiled.status();
    ASSERT_TRUE(compiled->receipt.has_value())
        << "analysis: " << compiler::ToJson(compiled->analysis);
    const report::LoweringReceipt& receipt = *compiled->receipt;
    ASSERT_EQ(receipt.outcome(), report::LoweringReceipt::PASS) << compiler::ToJson(receipt);
    const std::string cubin = ReadFile(fs::path(receipt.artifact_dir()) / "kernel.cubin");
    ASSERT_EQ(base::Sha256Hex(cubin), receipt.cubin_sha256());
    auto kernel = gpuqueue::Kernel::Load(*driver_, cubin, receipt);
    ASSERT_TRUE(kernel.ok()) << kernel.status();

    const bool bf16_out = params.out == ir::BF16;
    for (const Shape& s : shapes) {
      const uint64_t seed = std::random_device{}() ^ (uint64_t{std::random_device{}()} << 32);
      std::mt19937_64 rng(seed);
      const auto a = workloads::RandomBf16(size_t(s.m) * s.k, rng);
      const auto b = workloads::RandomBf16(size_t(s.n) * s.k, rng);
      const size_t out_elems = size_t(s.m) * s.n;
      const size_t out_bytes = out_elems * (bf16_out ? 2 : 4);
      auto da = gpuqueue::DeviceBuffer::Allocate(*driver_, a.size() * 2);
      auto db = gpuqueue::DeviceBuffer::Allocate(*driver_, b.size() * 2);
      auto dc = gpuqueue::DeviceBuffer::Allocate(*driver_, (out_bytes + 3) / 4 * 4);
      ASSERT_TRUE(da.ok() && db.ok() && dc.ok());
      ASSERT_TRUE(da->Upload(a.data(), a.size() * 2).ok());
      ASSERT_TRUE(db->Upload(b.data(), b.size() * 2).ok());
      // Poison: all-ones is NaN in both BF16 and FP32; any element left unwritten fails.
      ASSERT_TRUE(dc->Fill32(0xFFFFFFFFu).ok());
      gpuqueue::KernelArgs args;
      args.tensors = {{"A", da->ptr()}, {"B", db->ptr()}, {"C", dc->ptr()}};
      args.scalars = {{"M", s.m}, {"N", s.n}, {"K", s.k}};
      absl::Status launched = (*kernel)->Launch(nullptr, args);
      ASSERT_TRUE(launched.ok()) << launched;
      ASSERT_TRUE(driver_->Check(driver_->CtxSynchronize(), "cuCtxSynchronize").ok());
      std::vector<uint8_t> raw(out_bytes);
      ASSERT_TRUE(dc->Download(raw.data(), out_bytes).ok());
      std::vector<double> out(out_elems);
      for (size_t i = 0; i < out_elems; ++i) {
        if (bf16_out) {
          uint16_t v;
          std::memcpy(&v, raw.data() + 2 * i, 2);
          out[i] = workloads::Bf16ToFloat(v);
        } else {
          float v;
          std::memcpy(&v, raw.data() + 4 * i, 4);
          out[i] = v;
        }
      }
      if (params.k_slices > 1 && failures == nullptr) {
        // The merge adds the slices in slice order whichever CTA arrives last, and leaves the
        // arrival counters zeroed: a second launch gives the same bytes.
        ASSERT_TRUE(dc->Fill32(0xFFFFFFFFu).ok());
        ASSERT_TRUE((*kernel)->Launch(nullptr, args).ok());
        ASSERT_TRUE(driver_->Check(driver_->CtxSynchronize(), "cuCtxSynchronize").ok());
        std::vector<uint8_t> again(out_bytes);
        ASSERT_TRUE(dc->Download(again.data(), out_bytes).ok());
        EXPECT_TRUE(again == raw) << params.Describe() << " shape " << s.m << "x" << s.n << "x"
                                  << s.k << ": a second launch changed the output";
      }
      const auto ref = workloads::gemm_bf16::ReferenceGemm(a, b, s.m, s.n, s.k);
      const auto tol = workloads::gemm_bf16::GemmTolerance(bf16_out, s.k);
      const auto cmp = workloads::Compare(out, ref, tol.rtol, tol.atol, tol.max_relative_l2);
      nlohmann::json row;
      row["schedule"] = params.Describe();
      row["schedule_hash"] = receipt.schedule_hash();
      row["cubin_sha256"] = receipt.cubin_sha256();
      row["registers"] = receipt.resources().registers();
      row["shape"] = {s.m, s.n, s.k};
      row["seed"] = std::to_string(seed);
      row["non_finite"] = cmp.non_finite;
      row["out_of_tolerance"] = cmp.out_of_tolerance;
      row["max_abs_error"] = cmp.max_abs_error;
      row["relative_l2_error"] = cmp.relative_l2_error;
      row["tolerance"] = {
          {"rtol", tol.rtol}, {"atol", tol.atol}, {"max_rel_l2", tol.max_relative_l2}};
      row["passed"] = cmp.passed;
      if (!unchecked.empty()) row["unchecked_passes"] = unchecked;
      evidence_.push_back(row);
      if (failures != nullptr) {
        *failures += cmp.passed ? 0 : 1;
        continue;
      }
      EXPECT_TRUE(cmp.passed) << params.Describe() << " shape " << s.m << "x" << s.n << "x" << s.k
                              << " seed " << seed << ": non_finite " << cmp.non_finite
                              << ", out_of_tolerance " << cmp.out_of_tolerance << ", rel_l2 "
                              << cmp.relative_l2_error << ", max_abs " << cmp.max_abs_error;
    }
  }

  // Compiling `module` for sm_90 with every pass run stops at analysis with `id`.
  static void ExpectRejectedWith(const ir::Module& module, report::DiagId id) {
    compiler::ParsedModule parsed;
    parsed.module = module;
    parsed.file = report::DiagId_Name(id);
    auto sm90 = compiler::TargetByName("sm_90");
    ASSERT_TRUE(sm90.ok());
    compiler::CompileOptions checked;
    checked.store_root = (fs::temp_directory_path() / "cake_witness_store").string();
    auto rejected = compiler::Compile(parsed, **sm90, checked);
    ASSERT_TRUE(rejected.ok()) << rejected.status();
    EXPECT_FALSE(rejected->receipt.has_value());
    bool diagnosed = false;
    for (const report::Diagnostic& d : rejected->analysis.diagnostics()) diagnosed |= d.id() == id;
    EXPECT_TRUE(diagnosed) << compiler::ToJson(rejected->analysis);
  }
};

TEST_F(HopperWitness, BundledExampleBf16Out) { RunVariant(WarpGemmParams{}); }

TEST_F(HopperWitness, Fp32OutSwizzle64FourStages) {
  WarpGemmParams p;
  p.out = ir::F32;
  p.smem = ir::Representation::SWIZZLE_64B;
  p.padding = 0;
  p.stages = 4;
  RunVariant(p);
}

// The bundled point with 64-wide k-tiles in 128-byte swizzled stages (cp.async unless `transfer`).
WarpGemmParams Swizzle128Point(ir::Transfer transfer = ir::CP_ASYNC) {
  WarpGemmParams p;
  p.tile_k = 64;
  p.smem = ir::Representation::SWIZZLE_128B;
  p.padding = 0;
  p.transfer = transfer;
  return p;
}

TEST_F(HopperWitness, Swizzle128KTile64) { RunVariant(Swizzle128Point()); }

TEST_F(HopperWitness, SingleStageX2Loads) {
  WarpGemmParams p;
  p.tile_m = 64;
  p.tile_n = 64;
  p.stages = 1;
  p.b_load_x4 = false;
  RunVariant(p);
}

TEST_F(HopperWitness, WideWarpGrid) {
  WarpGemmParams p;
  p.tile_m = 256;
  p.tile_n = 128;
  p.warps_m = 4;
  p.warps_n = 2;
  p.smem = ir::Representation::SWIZZLE_64B;
  p.padding = 0;
  RunVariant(p);
}

// TMA stages: tensor maps built by the launcher, boxes past M, N and K read as zeros.
TEST_F(HopperWitness, TmaSingleStageFp32OutX2Loads) {
  WarpGemmParams p;
  p.transfer = ir::TMA;
  p.smem = ir::Representation::SWIZZLE_64B;
  p.padding = 0;
  p.stages = 1;
  p.b_load_x4 = false;
  p.out = ir::F32;
  RunVariant(p);
}

// Every point of the staged family (cp.async and TMA rings), the set compute-sanitizer's
// racecheck and synccheck are run over.
TEST_F(HopperWitness, EveryFamilyPoint) {
  int tma_points = 0;
  for (const WarpGemmParams& p : workloads::gemm_bf16::WarpGemmFamily()) {
    tma_points += p.transfer == ir::TMA ? 1 : 0;
    RunVariant(p);
  }
  EXPECT_GE(tma_points, 1) << "the family has no TMA point";
}

// The points the benchmark measures beside the family (rings beyond SM120's shared memory).
TEST_F(HopperWitness, EverySm90OnlyPoint) {
  for (const WarpGemmParams& p : workloads::gemm_bf16::WarpGemmSm90OnlyPoints()) RunVariant(p);
}

// The staged-store points alone (they are also in EveryFamilyPoint and EverySm90OnlyPoint), so
// the sanitizers can be run over them in seconds; tails in M and N exercise the per-chunk masks.
TEST_F(HopperWitness, StagedStores) {
  int staged = 0;
  for (const auto& points :
       {workloads::gemm_bf16::WarpGemmFamily(), workloads::gemm_bf16::WarpGemmSm90OnlyPoints()})
    for (const WarpGemmParams& p : points) {
      if (!p.stage_store) continue;
      ++staged;
      RunVariant(p);
      if (staged == 1) {  // FP32 out: 4-element chunks, a 528-byte staged row
        WarpGemmParams f32 = p;
        f32.out = ir::F32;
        RunVariant(f32);
      }
    }
  EXPECT_GE(staged, 1) << "no staged-store point";
}

// Persistent CTAs bounded to a few (3 and 7), so each walks many tiles and its ring runs on
// across them (the family's persistent points launch as many as stay resident, which the small
// witness shapes never exceed); row-major and banded, tails in M, N and K.
TEST_F(HopperWitness, PersistentCtasWalkSeveralTiles) {
  const Shape shapes[] = {{1100, 700, 256}, {300, 200, 264}, {77, 129, 16}, {512, 512, 1024}};
  for (int ctas : {3, 7}) {
    for (int group : {1, 8}) {
      WarpGemmParams p = Swizzle128Point(ir::TMA);
      p.persistent = true;
      p.max_ctas = ctas;
      p.raster_group_m = group;
      RunModule(workloads::gemm_bf16::MakeWarpGemm(p), p, shapes, {}, nullptr);
    }
  }
}

// Raster bands where the grid holds several: 9 and 17 tile rows of 128 are full bands of 8 (or
// 16) and a last band of 1 row, N with a tail; every tile must be computed exactly once (the
// family's shapes fit one band). cp.async and TMA, split-K's slices too.
TEST_F(HopperWitness, RasterBandsCoverEveryTileOnce) {
  const Shape shapes[] = {{1100, 700, 256}, {2100, 300, 128}, {1, 1100, 64}};
  for (int group : {8, 16}) {
    WarpGemmParams p;
    p.raster_group_m = group;
    RunModule(workloads::gemm_bf16::MakeWarpGemm(p), p, shapes, {}, nullptr);
    p = Swizzle128Point(ir::TMA);
    p.raster_group_m = group;
    RunModule(workloads::gemm_bf16::MakeWarpGemm(p), p, shapes, {}, nullptr);
    p.k_slices = 2;
    RunModule(workloads::gemm_bf16::MakeWarpGemm(p), p, shapes, {}, nullptr);
  }
}

ir::Operation* FindConsume(google::protobuf::RepeatedPtrField<ir::Operation>* ops) {
  for (ir::Operation& op : *ops) {
    if (op.has_consume()) return &op;
    if (ir::Operation* found = FindConsume(op.mutable_body())) return found;
  }
  return nullptr;
}

// DIAG_PIPE_REUSE_BEFORE_RELEASE guards a real hazard: the TMA schedule with its release moved
// before the B load is rejected; forced through lowering with the pipeline pass unrun, the
// producer refills a slot other warps are still reading, and results go wrong on the GPU. The
// legal twin (release last) is exact on the same shapes.
TEST_F(HopperWitness, ReuseBeforeReleaseGoesWrongOnTheGpu) {
  WarpGemmParams p;
  p.tile_m = 128, p.tile_n = 128, p.tile_k = 64, p.warps_m = 2, p.warps_n = 2, p.stages = 3;
  p.smem = ir::Representation::SWIZZLE_128B, p.padding = 0, p.transfer = ir::TMA;
  ir::Module illegal = workloads::gemm_bf16::MakeWarpGemm(p);
  ir::Operation* consume = FindConsume(illegal.mutable_kernels(0)->mutable_ops());
  ASSERT_NE(consume, nullptr);
  ASSERT_EQ(consume->body_size(), 4);
  ASSERT_TRUE(consume->body(3).has_release());
  // [load_a, load_b, mma, release] -> [load_a, release, load_b, mma]
  for (int i = 3; i > 1; --i) consume->mutable_body()->SwapElements(i, i - 1);

  ExpectRejectedWith(illegal, report::DIAG_PIPE_REUSE_BEFORE_RELEASE);

  // Many k tiles, so refills race with the other warps' reads (small enough for racecheck).
  static const Shape kRaceShapes[] = {
      {512, 512, 2048}, {1024, 1024, 1024}, {768, 512, 4096}, {1024, 512, 2048}};
  int illegal_failures = 0;
  RunModule(illegal, p, kRaceShapes, {"pipelines"}, &illegal_failures);
  int legal_failures = 0;
  RunModule(workloads::gemm_bf16::MakeWarpGemm(p), p, kRaceShapes, {}, &legal_failures);
  EXPECT_EQ(legal_failures, 0) << "the legal twin must be exact";
  EXPECT_GT(illegal_failures, 0) << "releasing before the last read gave right results on all "
                                 << std::size(kRaceShapes) << " shapes";
  std::cout << "reuse-before-release: " << illegal_failures << " of " << std::size(kRaceShapes)
            << " shapes wrong; legal twin " << legal_failures << " wrong\n";
}

// DIAG_PIPE_TMA_LAYOUT guards a real hazard: a TMA box lands dense, so a padded row-major stage
// reads other bytes than the box wrote. Rejected; forced through lowering with the pipeline
// pass unrun, the consumers read rows at the padded pitch. The twin differs only in the padding
// (a dense row-major stage, the box unswizzled) and must be exact.
TEST_F(HopperWitness, TmaIntoPaddedStageGoesWrongOnTheGpu) {
  WarpGemmParams p;
  p.tile_m = 128, p.tile_n = 128, p.tile_k = 64, p.warps_m = 2, p.warps_n = 2, p.stages = 3;
  p.smem = ir::Representation::ROW_MAJOR, p.padding = 8, p.transfer = ir::TMA;
  const ir::Module padded = workloads::gemm_bf16::MakeWarpGemm(p);
  ExpectRejectedWith(padded, report::DIAG_PIPE_TMA_LAYOUT);

  static const Shape kLayoutShapes[] = {{256, 256, 512}, {384, 128, 1024}, {200, 136, 256}};
  int padded_failures = 0;
  RunModule(padded, p, kLayoutShapes, {"pipelines"}, &padded_failures);
  WarpGemmParams dense = p;
  dense.padding = 0;
  int dense_failures = 0;
  RunModule(workloads::gemm_bf16::MakeWarpGemm(dense), dense, kLayoutShapes, {}, &dense_failures);
  EXPECT_EQ(dense_failures, 0) << "the dense row-major twin must be exact";
  EXPECT_EQ(padded_failures, int(std::size(kLayoutShapes)))
      << "a padded stage under a dense box gave right results on some shape";
  std::cout << "TMA into a padded stage: " << padded_failures << " of " << std::size(kLayoutShapes)
            << " shapes wrong; dense twin " << dense_failures << " wrong\n";
}

// Split-K merged through the workspace, for both transfer forms, with slice counts that leave
// the last slices short or empty (K = 8 is one k-tile). The kernel object persists across the
// shapes, so its workspace is grown and its counters reused as the shapes change.
TEST_F(HopperWitness, SplitKOrderedMerge) {
  for (ir::Transfer transfer : {ir::CP_ASYNC, ir::TMA}) {
    WarpGemmParams p;
    p.tile_m = 64, p.tile_n = 64, p.tile_k = 64, p.stages = 3;
    p.smem = ir::Representation::SWIZZLE_128B, p.padding = 0, p.transfer = transfer;
    p.k_slices = 3;
    RunVariant(p);
  }
  // With a loader warp: the merge's barriers are the compute threads' own (the loader has left).
  WarpGemmParams ws;
  ws.tile_m = 64, ws.tile_n = 64, ws.tile_k = 64, ws.stages = 3;
  ws.smem = ir::Representation::SWIZZLE_128B, ws.padding = 0, ws.transfer = ir::TMA;
  ws.warp_specialized = true;
  ws.k_slices = 3;
  RunVariant(ws);
}

// DIAG_MEM_WRITE_RACE guards a real hazard: split-K with plain stores is rejected; forced
// through lowering with the memory-effects pass unrun, each slice stores its own partial sum
// and C holds whichever landed last. The merged twin is exact on the same shapes.
TEST_F(HopperWitness, UnmergedSplitKGoesWrongOnTheGpu) {
  WarpGemmParams p;
  p.tile_m = 64, p.tile_n = 64, p.tile_k = 64, p.stages = 3;
  p.smem = ir::Representation::SWIZZLE_128B, p.padding = 0, p.transfer = ir::TMA;
  p.k_slices = 2;
  p.k_merge = ir::K_MERGE_NONE;
  const ir::Module unmerged = workloads::gemm_bf16::MakeWarpGemm(p);
  ExpectRejectedWith(unmerged, report::DIAG_MEM_WRITE_RACE);

  static const Shape kSplitShapes[] = {{256, 256, 1024}, {130, 200, 512}, {64, 512, 2048}};
  int unmerged_failures = 0;
  RunModule(unmerged, p, kSplitShapes, {"memory_effects"}, &unmerged_failures);
  p.k_merge = ir::K_MERGE_ORDERED_WORKSPACE;
  int merged_failures = 0;
  RunModule(workloads::gemm_bf16::MakeWarpGemm(p), p, kSplitShapes, {}, &merged_failures);
  EXPECT_EQ(merged_failures, 0) << "the merged twin must be exact";
  EXPECT_EQ(unmerged_failures, static_cast<int>(std::size(kSplitShapes)))
      << "an unmerged split gave right results on some shape";
  std::cout << "split-K without a merge: " << unmerged_failures << " of " << std::size(kSplitShapes)
            << " shapes wrong; merged twin " << merged_failures << " wrong\n";
}

TEST_F(HopperWitness, EveryProposerCandidate) {
  for (const WarpGemmParams& p : workloads::gemm_bf16::WarpGemmCandidates()) RunVariant(p);
}

}  // namespace
}  // namespace cake
