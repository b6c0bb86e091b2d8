// The legacy-FP8 GEMM on sm_90 as a numerical witness of the FP8 fragment mappings (m16n8k32
// operands read with ldmatrix .b16 from K-contiguous bytes): Hopper emulates mma.sync
// m16n8k32.e4m3/e5m2 (unpack to F16, then HMMA), so a wrong lane or byte map shows as wrong
// numbers here, while the speed of this path says nothing and is never measured. Fresh random
// codes (every finite code may appear) over shapes with tails in M, N and K; the output is
// poisoned before each launch; the oracle is the exact CPU model (GemmReference). Not a witness
// of the block-scaled form, which no sm_90 device executes. Skips cleanly without an sm_90
// device. With $CAKE_EVIDENCE_DIR set, writes fp8_legacy_witness.json there.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <sstream>

#include "base/digest.h"
#include "compiler/artifact_store.h"
#include "compiler/compiler.h"
#include "compiler/parse.h"
#include "compiler/targets.h"
#include "gpuqueue/worker/cuda_driver.h"
#include "gpuqueue/worker/kernel.h"
#include "tests/gpu/sm90_driver_fixture.h"
#include "workloads/block_scaled_mma.h"
#include "workloads/gemm_blockscaled/schedules.h"
#include "workloads/numeric.h"

namespace cake {
namespace {

namespace fs = std::filesystem;
using workloads::DecodeNarrow;
using workloads::IsNanCode;
using workloads::NarrowFormat;
using namespace workloads::gemm_blockscaled;
using workloads::GemmOperands;
using workloads::GemmReference;
using workloads::MakeMmaForm;
using workloads::MmaKind;

struct Shape {
  int m, n, k;
};
// Tails in M and N, K not a multiple of the 128-wide k-tile, a single element, several tiles.
const Shape kShapes[] = {
    {128, 64, 128}, {129, 67, 48}, {1, 1, 16}, {300, 200, 272}, {256, 384, 512}};

std::string ReadFile(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// Uniform over the format's finite codes (NaN codes redrawn).
std::vector<uint32_t> RandomCodes(NarrowFormat f, size_t count, std::mt19937_64& rng) {
  std::uniform_int_distribution<uint32_t> code(0, 255);
  std::vector<uint32_t> out(count);
  for (uint32_t& c : out) {
    do c = code(rng);
    while (IsNanCode(f, c) || std::isinf(DecodeNarrow(f, c)));
  }
  return out;
}

class Fp8LegacyWitness : public testing::Sm90DriverFixture<::testing::TestWithParam<NarrowFormat>> {
 protected:
  static void SetUpTestSuite() { OpenSm90("the legacy-FP8 witness"); }
  static void TearDownTestSuite() {
    CloseWritingEvidence(
        "fp8_legacy_witness.json",
        "sm_90 numerical witness of the legacy-FP8 fragment mappings (emulated mma.sync); "
        "no SM120 execution witness; no speed measured");
  }
};

TEST_P(Fp8LegacyWitness, MatchesTheExactModelOnRandomCodes) {
  const NarrowFormat format = GetParam();
  // The 128x64 tile: the 128x128 one spills on sm_90 (fp8_gemm_receipts_test).
  Fp8GemmPoint point;
  point.operand = format;
  point.form = Fp8Form::kLegacy;
  point.tile_n = 64;
  point.tile_k = 128;
  point.stages = 2;
  auto parsed = compiler::ParseModuleText(Fp8GemmSchedule(point), point.Describe());
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  auto sm90 = compiler::TargetByName("sm_90");
  ASSERT_TRUE(sm90.ok());
  compiler::CompileOptions opts;
  opts.store_root = (fs::temp_directory_path() / "cake_fp8_witness_store").string();
  auto compiled = compiler::Compile(*parsed, **sm90, opts);
  ASSERT_TRUE(compiled.ok()) << compiled.status();
  ASSERT_TRUE(compiled->receipt.has_value()) << compiler::ToJson(compiled->analysis);
  const report::LoweringReceipt& receipt = *compiled->receipt;
  ASSERT_EQ(receipt.outcome(), report::LoweringReceipt::PASS) << compiler::ToJson(receipt);
  const std::string cubin = ReadFile(fs::path(receipt.artifact_dir()) / "kernel.cubin");
  ASSERT_EQ(base::Sha256Hex(cubin), receipt.cubin_sha256());
  auto kernel = gpuqueue::Kernel::Load(*driver_, cubin, receipt);
  ASSERT_TRUE(kernel.ok()) << kernel.status();
  auto form = MakeMmaForm(MmaKind::kLegacyF8, format, format);
  ASSERT_TRUE(form.ok()) << form.status();

  for (const Shape& s : kShapes) {
    const uint64_t seed = std::random_device{}() ^ (uint64_t{std::random_device{}()} << 32);
    std::mt19937_64 rng(seed);
    GemmOperands g;
    g.m = s.m;
    g.n = s.n;
    g.k = s.k;
    g.a = RandomCodes(format, size_t(s.m) * s.k, rng);
    g.b = RandomCodes(format, size_t(s.n) * s.k, rng);
    const std::vector<uint8_t> a(g.a.begin(), g.a.end()), b(g.b.begin(), g.b.end());
    const size_t out_elems = size_t(s.m) * s.n;
    auto da = gpuqueue::DeviceBuffer::Allocate(*driver_, a.size());
    auto db = gpuqueue::DeviceBuffer::Allocate(*driver_, b.size());
    auto dc = gpuqueue::DeviceBuffer::Allocate(*driver_, (out_elems * 2 + 3) / 4 * 4);
    ASSERT_TRUE(da.ok() && db.ok() && dc.ok());
    ASSERT_TRUE(da->Upload(a.data(), a.size()).ok());
    ASSERT_TRUE(db->Upload(b.data(), b.size()).ok());
    ASSERT_TRUE(dc->Fill32(0xFFFFFFFFu).ok());  // NaN in BF16: an unwritten element fails
    gpuqueue::KernelArgs args;
    args.tensors = {{"A", da->ptr()}, {"B", db->ptr()}, {"C", dc->ptr()}};
    args.scalars = {{"M", s.m}, {"N", s.n}, {"K", s.k}};
    absl::Status launched = (*kernel)->Launch(nullptr, args);
    ASSERT_TRUE(launched.ok()) << launched;
    ASSERT_TRUE(driver_->Check(driver_->CtxSynchronize(), "cuCtxSynchronize").ok());
    std::vector<uint16_t> out(out_elems);
    ASSERT_TRUE(dc->Download(out.data(), out_elems * 2).ok());

    auto ref = GemmReference(*form, g);
    ASSERT_TRUE(ref.ok()) << ref.status();
    // Bound per element: the FP32 datapath's rounding after each of its k + 1 additions (as
    // Tolerance states it per MMA), then the kernel's one rounding to BF16 (half an ulp,
    // 2^-9 relative) of a value within that bound of the reference.
    int64_t wrong = 0, non_finite = 0;
    double worst_ratio = 0;
    for (int i = 0; i < s.m; ++i)
      for (int j = 0; j < s.n; ++j) {
        double magnitude = 0;
        for (int kk = 0; kk < s.k; ++kk)
          magnitude += std::fabs(DecodeNarrow(format, g.a[size_t(i) * s.k + kk]) *
                                 DecodeNarrow(format, g.b[size_t(j) * s.k + kk]));
        const double exact = (*ref)[size_t(i) * s.n + j];
        const double accumulation = (s.k + 1) * std::ldexp(magnitude, -23);
        const double bound =
            accumulation + std::ldexp(std::fabs(exact) + accumulation, -8) + std::ldexp(1.0, -133);
        const double got = workloads::Bf16ToFloat(out[size_t(i) * s.n + j]);
        if (!std::isfinite(got)) {
          ++non_finite;
          continue;
        }
        const double error = std::fabs(got - exact);
        worst_ratio = std::max(worst_ratio, error / bound);
        wrong += error > bound ? 1 : 0;
      }
    nlohmann::json row;
    row["schedule"] = point.Describe();
    row["schedule_hash"] = receipt.schedule_hash();
    row["cubin_sha256"] = receipt.cubin_sha256();
    row["registers"] = receipt.resources().registers();
    row["shape"] = {s.m, s.n, s.k};
    row["seed"] = std::to_string(seed);
    row["non_finite"] = non_finite;
    row["out_of_bound"] = wrong;
    row["worst_error_over_bound"] = worst_ratio;
    row["passed"] = wrong == 0 && non_finite == 0;
    evidence_.push_back(row);
    EXPECT_EQ(non_finite, 0) << point.Describe() << " " << s.m << "x" << s.n << "x" << s.k
                             << " seed " << seed;
    EXPECT_EQ(wrong, 0) << point.Describe() << " " << s.m << "x" << s.n << "x" << s.k << " seed "
                        << seed << ": worst error / bound " << worst_ratio;
  }
}

INSTANTIATE_TEST_SUITE_P(Formats, Fp8LegacyWitness,
                         ::testing::Values(NarrowFormat::kE4M3, NarrowFormat::kE5M2),
                         [](const auto& param_info) {
                           return std::string(workloads::Info(param_info.param).name);
                         });

}  // namespace
}  // namespace cake
