// Canonical form and hash: the same schedule written two ways hashes the same, on every run and
// machine (a golden value pins the canonical serialization); a changed decision changes it.
#include <gtest/gtest.h>
#include "base/digest.h"

#include "compiler/canonical.h"
#include "compiler/parse.h"
#include "test_util.h"
#include "workloads/gemm_bf16/space.h"

namespace cake {
namespace {

std::string HashOfText(const std::string& text) {
  auto parsed = compiler::ParseModuleText(text, "t");
  EXPECT_TRUE(parsed.ok()) << parsed.status();
  return compiler::ScheduleHash(parsed->module);
}

constexpr char kWritten[] = R"pb(
  name: "g"
  target { arch: SM_120F ptx_version: "8.8" }
  kernels {
    name: "g"
    scalars { name: "K" multiple_of: 8 }
    launch { threads_per_cta: 64 }
    roles {
      name: "b"
      warps: [ 1, 0 ]
    }
    roles {
      name: "a"
      warps: [ 0 ]
      issuer: ALL_LANES
    }
    pipelines { name: "p" stages: 2 producers: "b" producers: "a" }
  }
)pb";

// Same meaning: fields reordered, declarations reordered, defaults spelled out, a description.
constexpr char kRewritten[] = R"pb(
  description: "free text is not part of the hash"
  kernels {
    pipelines { producers: "a" producers: "b" stages: 2 name: "p" }
    roles {
      issuer: ALL_LANES
      warps: [ 0 ]
      name: "a"
    }
    roles {
      warps: [ 0, 1 ]
      name: "b"
      issuer: ISSUER_UNSPECIFIED
    }
    launch { cluster_size: 1 threads_per_cta: 64 }
    scalars { name: "K" dtype: S32 multiple_of: 8 }
    name: "g"
  }
  target { ptx_version: "8.8" arch: SM_120F }
  name: "g"
)pb";

TEST(Hash, SameScheduleWrittenTwoWaysHashesTheSame) {
  EXPECT_EQ(HashOfText(kWritten), HashOfText(kRewritten));
}

TEST(Hash, RepeatedHashingIsStable) {
  const std::string h = HashOfText(kWritten);
  for (int i = 0; i < 20; ++i) EXPECT_EQ(HashOfText(kWritten), h);
  EXPECT_EQ(h.size(), 64u);
}

TEST(Hash, ChangedDecisionChangesTheHash) {
  std::string changed = kWritten;
  changed.replace(changed.find("stages: 2"), 9, "stages: 3");
  EXPECT_NE(HashOfText(kWritten), HashOfText(changed));
  // Kernel parameter order is the ABI and is kept.
  const std::string ab = "kernels { name: \"k\" scalars { name: \"A\" } scalars { name: \"B\" } }";
  const std::string ba = "kernels { name: \"k\" scalars { name: \"B\" } scalars { name: \"A\" } }";
  EXPECT_NE(HashOfText(ab), HashOfText(ba));
}

TEST(Hash, RasterBandOfOneIsTheDefaultOrder) {
  workloads::gemm_bf16::WarpGemmParams p;
  const std::string plain = compiler::ScheduleHash(workloads::gemm_bf16::MakeWarpGemm(p));
  ir::Module one = workloads::gemm_bf16::MakeWarpGemm(p);
  one.mutable_kernels(0)->mutable_work(0)->mutable_static_tiles()->set_raster_group_m(1);
  EXPECT_EQ(compiler::ScheduleHash(one), plain);
  p.raster_group_m = 16;
  EXPECT_NE(compiler::ScheduleHash(workloads::gemm_bf16::MakeWarpGemm(p)), plain);
}

// Golden values: the canonical serialization is part of the artifact identity. If this changes,
// bump kCanonicalFormVersion and say why.
TEST(Hash, GoldenHashesAreStableAcrossMachines) {
  EXPECT_EQ(base::Sha256Hex("abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(HashOfText(kWritten),
            "6fd01a668531f54a13a07508cef8fbde421655c7f6053ffa53a7fa07e5ede096");
  auto parsed = testing::MustParse(testing::SourceDir() / "examples/gemm_bf16.textproto");
  EXPECT_EQ(compiler::ScheduleHash(parsed.module),
            "1b15bcce8eb1bb2bd2f45dd05f13dfa1a7f21bd9c35cac759b7b054f2388d310");
}

// The bundled example is the default point of the proposer's schedule space.
TEST(Hash, BundledExampleEqualsTheDefaultSpacePoint) {
  auto parsed = testing::MustParse(testing::SourceDir() / "examples/gemm_bf16.textproto");
  EXPECT_EQ(compiler::ScheduleHash(parsed.module),
            compiler::ScheduleHash(
                workloads::gemm_bf16::MakeWarpGemm(workloads::gemm_bf16::WarpGemmParams{})));
}

TEST(Hash, CanonicalizationIsIdempotent) {
  auto parsed = testing::MustParse(testing::SourceDir() / "examples/sparse_mla_decode.textproto");
  const ir::Module once = compiler::Canonicalize(parsed.module);
  const ir::Module twice = compiler::Canonicalize(once);
  EXPECT_EQ(compiler::CanonicalBytes(once), compiler::CanonicalBytes(twice));
}

}  // namespace
}  // namespace cake
