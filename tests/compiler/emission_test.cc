// Deterministic emission: identical canonical IR gives byte-identical source (also when written
// differently), every lowered operation has a source range, and different decisions give
// different source.
#include <gtest/gtest.h>

#include <regex>
#include <set>

#include "compiler/artifact_store.h"
#include "compiler/compiler.h"
#include "compiler/parse.h"
#include "google/protobuf/text_format.h"
#include "test_util.h"
#include "workloads/gemm_bf16/space.h"

namespace cake {
namespace {

std::string EmitText(const compiler::ParsedModule& m, const char* target = "sm_120f") {
  auto r = compiler::Emit(m, **compiler::TargetByName(target));
  EXPECT_TRUE(r.source.has_value());
  return r.source ? r.source->text : "";
}

TEST(Emission, SameScheduleSameBytes) {
  const auto parsed = testing::MustParse(testing::SourceDir() / "examples/gemm_bf16.textproto");
  const std::string first = EmitText(parsed);
  for (int i = 0; i < 5; ++i) EXPECT_EQ(EmitText(parsed), first);
  // The same module rewritten (text printed from the proto: other field order, no comments).
  std::string reprinted;
  google::protobuf::TextFormat::PrintToString(parsed.module, &reprinted);
  auto again = compiler::ParseModuleText(reprinted, "reprinted");
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(EmitText(*again), first);
}

TEST(Emission, EveryLoweredOperationHasASourceRange) {
  const auto parsed = testing::MustParse(testing::SourceDir() / "examples/gemm_bf16.textproto");
  auto r = compiler::Emit(parsed, **compiler::TargetByName("sm_120f"));
  ASSERT_TRUE(r.source);
  std::set<std::string> mapped;
  const int lines =
      static_cast<int>(std::count(r.source->text.begin(), r.source->text.end(), '\n'));
  for (const auto& range : r.source->op_lines) {
    mapped.insert(range.op_id());
    EXPECT_GE(range.first_line(), 1);
    EXPECT_LE(range.first_line(), range.last_line());
    EXPECT_LE(range.last_line(), lines);
  }
  for (const char* id : {"main", "tile_loop", "k_loop", "fill", "copy_a", "copy_b", "read",
                         "load_a", "load_b", "mma_step", "release", "store"})
    EXPECT_TRUE(mapped.count(id)) << id;
  // The mma range holds the mma instruction.
  for (const auto& range : r.source->op_lines)
    if (range.op_id() == "mma_step") {
      std::vector<std::string> text_lines;
      std::stringstream ss(r.source->text);
      for (std::string l; std::getline(ss, l);) text_lines.push_back(l);
      bool has_mma = false;
      for (int l = range.first_line(); l <= range.last_line(); ++l)
        has_mma |= text_lines[l - 1].find("mma.sync.aligned.m16n8k16") != std::string::npos;
      EXPECT_TRUE(has_mma);
    }
}

TEST(Emission, DistinctDecisionsGiveDistinctSource) {
  std::set<std::string> sources;
  for (const auto& p : workloads::gemm_bf16::WarpGemmCandidates()) {
    compiler::ParsedModule m;
    m.module = workloads::gemm_bf16::MakeWarpGemm(p);
    sources.insert(EmitText(m));
  }
  EXPECT_EQ(sources.size(), workloads::gemm_bf16::WarpGemmCandidates().size());
}

TEST(Emission, RejectedScheduleEmitsNothing) {
  const auto parsed = testing::MustParse(
      testing::SourceDir() / "tests/corpus/illegal/pipe_reuse_before_release.textproto");
  auto r = compiler::Emit(parsed, **compiler::TargetByName("sm_120f"));
  EXPECT_FALSE(r.source.has_value());
  EXPECT_EQ(r.analysis.verdict(), report::REJECTED);
}

TEST(Emission, EveryFamilyPointIsDeterministicAndDistinct) {
  std::set<std::string> sources;
  const auto family = workloads::gemm_bf16::WarpGemmFamily();
  for (const auto& p : family) {
    compiler::ParsedModule m;
    m.module = workloads::gemm_bf16::MakeWarpGemm(p);
    const std::string first = EmitText(m);
    EXPECT_EQ(EmitText(m), first) << p.Describe();
    sources.insert(first);
  }
  EXPECT_EQ(sources.size(), family.size());
}

// The consume of a TMA family point with its release moved to `release_at` (0..3).
compiler::ParsedModule TmaWithReleaseAt(int release_at) {
  workloads::gemm_bf16::WarpGemmParams p;
  p.tile_k = 64, p.smem = ir::Representation::SWIZZLE_128B, p.padding = 0, p.transfer = ir::TMA;
  compiler::ParsedModule m;
  m.module = workloads::gemm_bf16::MakeWarpGemm(p);
  ir::Operation* consume = nullptr;
  std::vector<ir::Operation*> stack;
  for (auto& op : *m.module.mutable_kernels(0)->mutable_ops()) stack.push_back(&op);
  while (!stack.empty() && consume == nullptr) {
    ir::Operation* op = stack.back();
    stack.pop_back();
    if (op->has_consume()) consume = op;
    for (auto& child : *op->mutable_body()) stack.push_back(&child);
  }
  EXPECT_NE(consume, nullptr);
  EXPECT_TRUE(consume->body(3).has_release());
  for (int i = 3; i > release_at; --i) consume->mutable_body()->SwapElements(i, i - 1);
  return m;
}

// `m` is rejected for sm_90 with `id` and emits nothing; returns its emission with `pass`
// unchecked (test-only), which lowers the schedule as written.
compiler::EmitResult RejectedThenForced(const compiler::ParsedModule& m, report::DiagId id,
                                        const std::string& pass) {
  const auto sm90 = *compiler::TargetByName("sm_90");
  auto checked = compiler::Emit(m, *sm90);
  EXPECT_FALSE(checked.source.has_value());
  bool diagnosed = false;
  for (const auto& d : checked.analysis.diagnostics()) diagnosed |= d.id() == id;
  EXPECT_TRUE(diagnosed) << report::DiagId_Name(id);
  compiler::AnalyzeOptions unchecked;
  unchecked.unchecked_passes = {pass};
  return compiler::Emit(m, *sm90, unchecked);
}

TEST(Emission, ReleaseBeforeTheLastReadIsRejectedAndOnlyUncheckedLowersIt) {
  const compiler::ParsedModule early = TmaWithReleaseAt(1);  // load_a, release, load_b, mma
  auto forced = RejectedThenForced(early, report::DIAG_PIPE_REUSE_BEFORE_RELEASE, "pipelines");
  ASSERT_TRUE(forced.source.has_value());
  EXPECT_NE(forced.source->text.find("if (ks == 0) {"), std::string::npos)
      << "the early release is not lowered where the schedule puts it";
  for (const auto& pass : forced.analysis.passes()) {
    if (pass.pass() == "pipelines") {
      EXPECT_EQ(pass.verdict(), report::VERDICT_UNSPECIFIED);
    }
  }

  // A release after both loads (before the mma, which reads registers) is legal and lowers to
  // the same code as a release last.
  const std::string last = EmitText(TmaWithReleaseAt(3), "sm_90");
  const std::string after_loads = EmitText(TmaWithReleaseAt(2), "sm_90");
  EXPECT_EQ(last.find("if (ks == 0) {"), std::string::npos);
  // Equal but for the schedule hash (header and kernel name).
  static const std::regex kHash("[0-9a-f]{12,64}");
  EXPECT_EQ(std::regex_replace(after_loads, kHash, "H"), std::regex_replace(last, kHash, "H"));
}

// A TMA box lands dense: a padded row-major stage is rejected (DIAG_PIPE_TMA_LAYOUT) and lowered
// only with the pipeline rules unchecked, as written (the GPU witness shows it going wrong). A
// dense row-major stage is legal and takes the box unswizzled. The barrier's transaction bytes
// are the boxes' bytes, not the stage's.
TEST(Emission, TmaIntoAPaddedStageIsRejectedAndOnlyUncheckedLowersIt) {
  const auto sm90 = *compiler::TargetByName("sm_90");
  workloads::gemm_bf16::WarpGemmParams p;
  p.tile_m = 128, p.tile_n = 128, p.tile_k = 64, p.warps_m = 2, p.warps_n = 2, p.stages = 3;
  p.smem = ir::Representation::ROW_MAJOR, p.padding = 8, p.transfer = ir::TMA;
  compiler::ParsedModule padded;
  padded.module = workloads::gemm_bf16::MakeWarpGemm(p);
  auto forced = RejectedThenForced(padded, report::DIAG_PIPE_TMA_LAYOUT, "pipelines");
  ASSERT_TRUE(forced.source.has_value());
  const std::string& text = forced.source->text;
  EXPECT_NE(text.find("kRowA = kTileK + 8, kRowB = kTileK + 8"), std::string::npos);
  EXPECT_NE(text.find("kTmaBytes = 16384 + 16384;"), std::string::npos)
      << "the transaction bytes must be the boxes', not the padded stages' (18432 each)";
  EXPECT_NE(text.find("kStageBytesA = 18432"), std::string::npos);

  compiler::ParsedModule dense;
  p.padding = 0;
  dense.module = workloads::gemm_bf16::MakeWarpGemm(p);
  auto legal = compiler::Emit(dense, *sm90);
  ASSERT_TRUE(legal.source.has_value()) << compiler::ToJson(legal.analysis);
  // The swizzle of each tensor map the launcher builds, in argument order.
  auto map_swizzles = [](const report::LaunchSpec& launch) {
    std::vector<int> out;
    for (const auto& arg : launch.args())
      if (arg.kind() == report::LaunchSpec::Arg::TENSOR_MAP) out.push_back(arg.swizzle_bytes());
    return out;
  };
  EXPECT_EQ(map_swizzles(legal.source->launch), (std::vector<int>{0, 0}))
      << "a row-major stage takes the box as is";
  // The swizzled point keeps the 128-byte pattern.
  p.smem = ir::Representation::SWIZZLE_128B;
  compiler::ParsedModule swizzled;
  swizzled.module = workloads::gemm_bf16::MakeWarpGemm(p);
  auto sw = compiler::Emit(swizzled, *sm90);
  ASSERT_TRUE(sw.source.has_value());
  EXPECT_EQ(map_swizzles(sw.source->launch), (std::vector<int>{128, 128}));
}

TEST(Emission, MayAliasForbidsRestrict) {
  compiler::ParsedModule m;
  m.module = workloads::gemm_bf16::MakeWarpGemm({});
  const std::string plain = EmitText(m);
  EXPECT_NE(plain.find("__nv_bfloat16* __restrict__ C"), std::string::npos);
  EXPECT_NE(plain.find("__nv_bfloat16* __restrict__ A"), std::string::npos);
  for (auto& t : *m.module.mutable_kernels(0)->mutable_tensors())
    if (t.name() == "C") t.add_may_alias("A");
  const std::string aliased = EmitText(m);
  EXPECT_EQ(aliased.find("__restrict__ C"), std::string::npos);
  EXPECT_EQ(aliased.find("__restrict__ A"), std::string::npos);
  EXPECT_NE(aliased.find("__nv_bfloat16* __restrict__ B"), std::string::npos)
      << "B overlaps nothing";
}

compiler::ParsedModule SplitK(int slices, ir::KMerge merge) {
  workloads::gemm_bf16::WarpGemmParams p;
  p.k_slices = slices;
  p.k_merge = merge;
  compiler::ParsedModule m;
  m.module = workloads::gemm_bf16::MakeWarpGemm(p);
  return m;
}

TEST(Emission, MergedSplitKLaunchesItsSlicesWithAWorkspace) {
  const auto sm90 = *compiler::TargetByName("sm_90");
  auto merged = compiler::Emit(SplitK(3, ir::K_MERGE_ORDERED_WORKSPACE), *sm90);
  ASSERT_TRUE(merged.source.has_value());
  const report::LaunchSpec& l = merged.source->launch;
  EXPECT_EQ(l.grid_z().count(), 3);
  EXPECT_TRUE(l.grid_z().extent().empty());
  ASSERT_GT(l.args_size(), 0);
  const report::LaunchSpec::Arg& ws = l.args(l.args_size() - 1);
  EXPECT_EQ(ws.kind(), report::LaunchSpec::Arg::WORKSPACE);
  EXPECT_EQ(ws.bytes_per_element(), 12);  // one FP32 partial per slice
  EXPECT_EQ(ws.bytes_per_tile(), 4);      // one arrival counter per tile
  EXPECT_EQ(ws.box_rows(), 128);
  EXPECT_NE(merged.source->text.find("float* workspace) {"), std::string::npos);
  EXPECT_NE(merged.source->text.find("(kt_first + kt) * kTileK"), std::string::npos);

  // The unsplit point's source names no slice.
  const std::string plain = EmitText(SplitK(1, ir::K_MERGE_ORDERED_WORKSPACE), "sm_90");
  EXPECT_EQ(plain.find("kt_first"), std::string::npos);
  EXPECT_EQ(plain.find("workspace"), std::string::npos);
}

TEST(Emission, SplitKWithoutAMergeIsAWriteRaceAndOnlyUncheckedLowersIt) {
  const auto sm90 = *compiler::TargetByName("sm_90");
  const compiler::ParsedModule racy = SplitK(2, ir::K_MERGE_NONE);
  auto checked = compiler::Emit(racy, *sm90);
  EXPECT_FALSE(checked.source.has_value());
  bool diagnosed = false;
  for (const auto& d : checked.analysis.diagnostics())
    diagnosed |= d.id() == report::DIAG_MEM_WRITE_RACE && d.op_id() == "store";
  EXPECT_TRUE(diagnosed);

  compiler::AnalyzeOptions unchecked;
  unchecked.unchecked_passes = {"memory_effects"};
  auto forced = compiler::Emit(racy, *sm90, unchecked);
  ASSERT_TRUE(forced.source.has_value());
  EXPECT_EQ(forced.source->launch.grid_z().count(), 2);
  EXPECT_EQ(forced.source->text.find("workspace"), std::string::npos)
      << "an unmerged split stores each slice's partial straight to C";
}

workloads::gemm_bf16::WarpGemmParams TmaPoint(int stages) {
  workloads::gemm_bf16::WarpGemmParams p;
  p.tile_k = 64;
  p.stages = stages;
  p.smem = ir::Representation::SWIZZLE_128B;
  p.padding = 0;
  p.transfer = ir::TMA;
  return p;
}

std::string EmitParams(const workloads::gemm_bf16::WarpGemmParams& p, const char* target) {
  compiler::ParsedModule m;
  m.module = workloads::gemm_bf16::MakeWarpGemm(p);
  return EmitText(m, target);
}

// A loader warp: one more warp, which alone issues the copies and then leaves; the compute warps
// release only; the split-K merge synchronizes the compute threads by a named barrier.
TEST(Emission, ALoaderWarpFillsTheRingAndTheComputeWarpsOnlyConsume) {
  auto p = TmaPoint(3);
  p.warp_specialized = true;
  for (const char* target : {"sm_120f", "sm_90"}) {
    compiler::ParsedModule m;
    m.module = workloads::gemm_bf16::MakeWarpGemm(p);
    auto r = compiler::Emit(m, **compiler::TargetByName(target));
    ASSERT_TRUE(r.source.has_value()) << target << ": " << compiler::ToJson(r.analysis);
    EXPECT_EQ(r.source->launch.threads_per_cta(), 160);
    const std::string& src = r.source->text;
    EXPECT_NE(src.find("kComputeThreads = 128, kFirstComputeWarp = 0, kLoaderWarp = 4, "
                       "kLoaderWarps = 1;"),
              std::string::npos);
    EXPECT_NE(src.find("if (warp >= kLoaderWarp && warp < kLoaderWarp + kLoaderWarps) {"),
              std::string::npos);
    EXPECT_NE(src.find("if (warp == kLoaderWarp && lane == 0) {"), std::string::npos);
    EXPECT_EQ(src.find("setmaxnreg"), std::string::npos) << "no budgets, no setmaxnreg";
    EXPECT_EQ(src.find("if (tid == 0 && kt + kStages < k_tiles)"), std::string::npos)
        << "a compute thread refills";
    // The loader's operations have their own source ranges.
    std::set<std::string> ops;
    for (const report::SourceRange& range : r.source->op_lines) ops.insert(range.op_id());
    for (const char* op : {"load_role", "load_tiles", "load_k", "main", "read"})
      EXPECT_TRUE(ops.count(op)) << op;
  }
  p.k_slices = 3;
  const std::string split = EmitParams(p, "sm_90");
  EXPECT_NE(split.find("bar.sync 1, %0;"), std::string::npos);
  EXPECT_EQ(split.find("__syncthreads();  // partials"), std::string::npos);
  EXPECT_NE(split.find("if (ctid == 0) {"), std::string::npos);
}

// What the loader-warp lowering refuses, each with its reason, rather than guessing.
TEST(Emission, ALoaderWarpIsLoweredOnlyInItsOneShape) {
  auto expect_refused = [](ir::Module m, const char* says) {
    compiler::ParsedModule parsed;
    parsed.module = std::move(m);
    auto r = compiler::Emit(parsed, **compiler::TargetByName("sm_90"));
    EXPECT_FALSE(r.source.has_value()) << says;
    EXPECT_NE(compiler::ToJson(r.analysis).find(says), std::string::npos)
        << compiler::ToJson(r.analysis);
  };
  auto p = TmaPoint(3);
  p.warp_specialized = true;
  // cp.async filled by a loader warp (the ring would need its own async-group protocol).
  auto cp = p;
  cp.transfer = ir::CP_ASYNC;
  expect_refused(workloads::gemm_bf16::MakeWarpGemm(cp), "TMA pipelines only");
  // A loader of two warps.
  ir::Module two = workloads::gemm_bf16::MakeWarpGemm(p);
  ir::Kernel* k = two.mutable_kernels(0);
  k->mutable_launch()->set_threads_per_cta(192);
  for (auto& role : *k->mutable_roles())
    if (role.name() == "loader") role.add_warps(5);
  expect_refused(two, "one warp");
}

// A raster band reorders the tiles by CTA number only where the schedule asks for it, with the
// band's height in the source.
TEST(Emission, RasterBandsAreEmittedOnlyWhereDeclared) {
  auto p = TmaPoint(3);
  const std::string plain = EmitText(SplitK(1, ir::K_MERGE_ORDERED_WORKSPACE), "sm_90");
  EXPECT_NE(plain.find("m0 = blockIdx.y * kTileM, n0 = blockIdx.x * kTileN"), std::string::npos);
  EXPECT_EQ(plain.find("kRasterGroupM"), std::string::npos);
  p.raster_group_m = 16;
  compiler::ParsedModule banded;
  banded.module = workloads::gemm_bf16::MakeWarpGemm(p);
  const std::string text = EmitText(banded, "sm_90");
  EXPECT_NE(text.find("constexpr int kRasterGroupM = 16;"), std::string::npos);
  EXPECT_EQ(text.find("m0 = blockIdx.y * kTileM"), std::string::npos);
  EXPECT_EQ(EmitText(banded, "sm_90"), text);
}

// A staged store is emitted only where the schedule declares it: fragments to a shared tile,
// then 16-byte chunks; refused, with the reason, where the tile does not fit the ring, for
// split-K, and for an output not declared 16-byte aligned.
TEST(Emission, AStagedStoreWritesWholeChunksAndIsRefusedWhereItCannotBe) {
  auto refused = [](const ir::Module& m, const char* says) {
    compiler::ParsedModule parsed;
    parsed.module = m;
    auto r = compiler::Emit(parsed, **compiler::TargetByName("sm_90"));
    EXPECT_FALSE(r.source.has_value()) << says;
    EXPECT_NE(compiler::ToJson(r.analysis).find(says), std::string::npos)
        << compiler::ToJson(r.analysis);
  };
  auto p = TmaPoint(3);
  const std::string direct = EmitParams(p, "sm_90");
  EXPECT_EQ(direct.find("stage_c"), std::string::npos);
  p.stage_store = true;
  for (const char* target : {"sm_90", "sm_120f"}) {
    const std::string staged = EmitParams(p, target);
    EXPECT_NE(staged.find("constexpr int kStageRow = 136;"), std::string::npos) << target;
    EXPECT_NE(staged.find("*reinterpret_cast<uint4*>(dst)"), std::string::npos) << target;
    EXPECT_EQ(staged.find("__nv_bfloat162*>(dst)"), std::string::npos) << target;
    EXPECT_EQ(EmitParams(p, target), staged) << target;
  }
  auto cp = p;
  cp.transfer = ir::CP_ASYNC;
  cp.smem = ir::Representation::SWIZZLE_64B;
  cp.tile_k = 32;
  EXPECT_NE(EmitParams(cp, "sm_90").find("cp.async.wait_all"), std::string::npos);

  auto small = p;  // 128 x 16 x 2 B x 2 buffers x 1 stage = 8 KiB < 34,816 B
  small.tile_k = 16;
  small.stages = 1;
  small.transfer = ir::CP_ASYNC;
  small.smem = ir::Representation::ROW_MAJOR;
  small.padding = 8;
  refused(workloads::gemm_bf16::MakeWarpGemm(small), "the staged tile needs 34816 bytes");
  auto split = p;
  split.k_slices = 2;
  refused(workloads::gemm_bf16::MakeWarpGemm(split), "a staged store with k_slices");
  ir::Module unaligned = workloads::gemm_bf16::MakeWarpGemm(p);
  for (ir::TensorParam& t : *unaligned.mutable_kernels(0)->mutable_tensors())
    if (t.name() == "C") t.set_alignment_bytes(4);
  refused(unaligned, "16-byte chunks; 'C' declares 4-byte alignment");
}

// Persistent CTAs: the launch counts tiles and asks the launcher for resident CTAs; each CTA's
// tile loop wraps the k loop and the store, and the ring's steps run on across tiles. Refused,
// with the reason, where the ring is not one TMA role's or a store would race its refill.
TEST(Emission, PersistentCtasWalkTilesWithOneRing) {
  auto p = TmaPoint(3);
  p.persistent = true;
  p.max_ctas = 5;
  compiler::ParsedModule parsed;
  parsed.module = workloads::gemm_bf16::MakeWarpGemm(p);
  auto r = compiler::Emit(parsed, **compiler::TargetByName("sm_90"));
  ASSERT_TRUE(r.source.has_value()) << compiler::ToJson(r.analysis);
  EXPECT_TRUE(r.source->launch.persistent());
  EXPECT_EQ(r.source->launch.max_ctas(), 5);
  EXPECT_EQ(r.source->launch.grid_x().divisor(), 128);  // the grid still counts tiles
  const std::string& text = r.source->text;
  for (const char* piece :
       {"for (int local = 0; local < my_tiles; ++local) {", "const int g = local * k_tiles + kt;",
        "g + kStages < steps", "produce(stage, g + kStages)",
        "if (kt == 0) TileOrigin(blockIdx.x + (long long)producer_local * gridDim.x, pm0, pn0);",
        "if (++producer_kt == k_tiles) producer_kt = 0, ++producer_local;",
        "}  // the next tile of this CTA"})
    EXPECT_NE(text.find(piece), std::string::npos) << piece;
  // The producer's tile origin comes from its cursor, once per tile: no division per step.
  EXPECT_EQ(text.find("g / k_tiles"), std::string::npos);
  EXPECT_EQ(text.find("g % k_tiles"), std::string::npos);
  EXPECT_EQ(text.find("kt + kStages < k_tiles"), std::string::npos);
  EXPECT_EQ(EmitParams(p, "sm_90"), text);
  EXPECT_FALSE(
      compiler::Emit(SplitK(1, ir::K_MERGE_ORDERED_WORKSPACE), **compiler::TargetByName("sm_90"))
          .source->launch.persistent());

  auto refused = [](const workloads::gemm_bf16::WarpGemmParams& q, const char* says) {
    compiler::ParsedModule m;
    m.module = workloads::gemm_bf16::MakeWarpGemm(q);
    auto out = compiler::Emit(m, **compiler::TargetByName("sm_90"));
    EXPECT_FALSE(out.source.has_value()) << says;
    EXPECT_NE(compiler::ToJson(out.analysis).find(says), std::string::npos)
        << compiler::ToJson(out.analysis);
  };
  auto cp = p;
  cp.transfer = ir::CP_ASYNC;
  cp.smem = ir::Representation::SWIZZLE_64B;
  cp.tile_k = 32;
  refused(cp, "one-role TMA pipelines");
  auto ws = p;
  ws.warp_specialized = true;
  refused(ws, "one-role TMA pipelines");
  auto split = p;
  split.k_slices = 2;
  refused(split, "one-role TMA pipelines");
  auto staged = p;
  staged.stage_store = true;
  refused(staged, "a staged store in a persistent tile loop");
}

// The benchmark's sm_90-only points need more shared memory than SM120 has: the verifier
// rejects each for sm_120f naming the shared budget, and verifies it for sm_90.
TEST(Emission, Sm90OnlyPointsAreRejectedForSm120fAndVerifiedForSm90) {
  const auto points = workloads::gemm_bf16::WarpGemmSm90OnlyPoints();
  ASSERT_FALSE(points.empty());
  for (const auto& p : points) {
    SCOPED_TRACE(p.Describe());
    compiler::ParsedModule m;
    m.module = workloads::gemm_bf16::MakeWarpGemm(p);
    auto sm120 = compiler::Emit(m, **compiler::TargetByName("sm_120f"));
    EXPECT_FALSE(sm120.source.has_value());
    bool budget = false;
    for (const auto& d : sm120.analysis.diagnostics())
      budget |= d.id() == report::DIAG_SHARED_BUDGET_EXCEEDED &&
                d.condition().find("101376") != std::string::npos &&
                d.evidence().find("a_stage") != std::string::npos;
    EXPECT_TRUE(budget) << sm120.analysis.DebugString();
    auto sm90 = compiler::Emit(m, **compiler::TargetByName("sm_90"));
    EXPECT_TRUE(sm90.source.has_value()) << sm90.analysis.DebugString();
  }
}

}  // namespace
}  // namespace cake
