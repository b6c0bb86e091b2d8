// The kmeans_assign workload: its oracle accepts an FP32 model of the fused kernel on fresh inputs
// of every distribution and rejects wrong, non-lowest, unwritten and NaN-policy-breaking answers;
// its bundled contract is valid; every point of its schedule space verifies and lowers.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <fstream>
#include <random>
#include <sstream>

#include "compiler/analysis.h"
#include "compiler/lowering.h"
#include "compiler/parse.h"
#include "compiler/targets.h"
#include "google/protobuf/text_format.h"
#include "tests/compiler/test_util.h"
#include "workloads/kmeans_assign/kmeans_assign.h"
#include "workloads/numeric.h"

namespace cake {
namespace {

using workloads::kmeans_assign::KMeansInputs;
using workloads::kmeans_assign::Problem;

const workloads::Workload& KMeans() { return *workloads::FindWorkload("kmeans_assign"); }
uint64_t Fresh() { return std::random_device{}() * 0x9e3779b97f4a7c15ull ^ std::random_device{}(); }

contract::Contract Bundled() {
  std::ifstream in(testing::SourceDir() / "contracts" / "kmeans_assign.textproto");
  std::stringstream ss;
  ss << in.rdbuf();
  contract::Contract c;
  EXPECT_TRUE(google::protobuf::TextFormat::ParseFromString(ss.str(), &c));
  return c;
}

// What the fused kernel computes, in FP32: argmin_j |c_j|^2 - 2 x.c_j over finite values (strict
// <, so the lowest index among equal values), K when none, and that value plus |x|^2.
workloads::TensorBytes KernelModel(const workloads::kmeans_assign::KMeansShape& s,
                                   const workloads::TensorBytes& in) {
  const int b = s.b(), n = s.n(), k = s.k(), d = s.d();
  auto at = [&](const std::string& t, size_t i) {
    uint16_t v;
    std::memcpy(&v, in.at(t).data() + 2 * i, 2);
    return workloads::Bf16ToFloat(v);
  };
  std::string idx(size_t(b) * n * 4, '\0'), dist(size_t(b) * n * 4, '\0');
  for (int bb = 0; bb < b; ++bb)
    for (int i = 0; i < n; ++i) {
      const size_t x0 = (size_t(bb) * n + i) * d;
      float x2 = 0;
      for (int e = 0; e < d; ++e) x2 = std::fma(at("X", x0 + e), at("X", x0 + e), x2);
      int best = -1;
      float bv = 0;
      for (int j = 0; j < k; ++j) {
        const size_t c0 = (size_t(bb) * k + j) * d;
        float c2 = 0, dot = 0;
        for (int e = 0; e < d; ++e) {
          c2 = std::fma(at("C", c0 + e), at("C", c0 + e), c2);
          dot = std::fma(at("X", x0 + e), at("C", c0 + e), dot);
        }
        const float v = -2.0f * dot + c2;
        if (std::isfinite(v) && (best < 0 || v < bv)) {
          best = j;
          bv = v;
        }
      }
      const int32_t index = best >= 0 ? best : k;
      const float value = best >= 0 ? bv + x2 : std::nanf("");
      std::memcpy(&idx[(size_t(bb) * n + i) * 4], &index, 4);
      std::memcpy(&dist[(size_t(bb) * n + i) * 4], &value, 4);
    }
  return {{"idx", idx}, {"dist", dist}};
}

evidence::RowCheck Judge(const contract::ProblemShape& p, contract::InputDistribution dist,
                         uint64_t seed, const workloads::TensorBytes& in,
                         const workloads::TensorBytes& out, int64_t unwritten = 0) {
  evidence::RowCheck rc;
  KMeans().Judge(p, Bundled(), dist, seed, in, out, unwritten, &rc);
  return rc;
}

TEST(KMeansAssign, BundledContractIsValid) {
  const contract::Contract c = Bundled();
  EXPECT_TRUE(KMeans().CheckContract(c).ok());
  for (const auto& r : c.rows()) EXPECT_TRUE(KMeans().CheckShape(r.problem()).ok()) << r.name();
  for (const auto& v : c.validation().cases())
    EXPECT_TRUE(KMeans().CheckShape(v.problem()).ok()) << v.name();
  contract::ProblemShape bad = Problem(1, 10, 10, 12);
  EXPECT_FALSE(KMeans().CheckShape(bad).ok()) << "D must be a multiple of 8";
  EXPECT_FALSE(KMeans().CheckShape(contract::ProblemShape()).ok());
}

TEST(KMeansAssign, OracleAcceptsTheKernelModelOnEveryDistribution) {
  const contract::ValidationPolicy policy = KMeans().DefaultPolicy();
  for (const auto& c : policy.cases()) {
    SCOPED_TRACE(c.name());
    const uint64_t seed = Fresh();
    const auto in = KMeans().MakeInputs(c.problem(), c.inputs(), seed);
    const auto rc =
        Judge(c.problem(), c.inputs(), seed, in, KernelModel(c.problem().kmeans_assign(), in));
    EXPECT_TRUE(rc.passed()) << rc.failure();
  }
}

TEST(KMeansAssign, OracleRejectsWrongNonLowestUnwrittenAndNanPolicy) {
  const contract::ProblemShape p = Problem(2, 200, 64, 64);
  const uint64_t seed = Fresh();
  const auto in = KMeans().MakeInputs(p, contract::CANCELLATION, seed);
  const auto good = KernelModel(p.kmeans_assign(), in);
  ASSERT_TRUE(Judge(p, contract::CANCELLATION, seed, in, good).passed());

  // Point 0 sits on a duplicated centroid 2j == 2j+1: reporting the odd twin breaks the tie rule.
  auto twin = good;
  int32_t j;
  std::memcpy(&j, twin["idx"].data(), 4);
  ASSERT_EQ(j % 2, 0) << "the planted point's nearest is the even twin";
  const int32_t odd = j + 1;
  std::memcpy(twin["idx"].data(), &odd, 4);
  auto rc = Judge(p, contract::CANCELLATION, seed, in, twin);
  EXPECT_FALSE(rc.passed());
  EXPECT_GT(rc.out_of_tolerance(), 0);

  // A far centroid instead of the nearest.
  auto wrong = good;
  for (int i = 0; i < 200; i += 7) {
    int32_t v;
    std::memcpy(&v, wrong["idx"].data() + 4 * i, 4);
    v = (v + 31) % 64;
    std::memcpy(wrong["idx"].data() + 4 * i, &v, 4);
  }
  EXPECT_FALSE(Judge(p, contract::CANCELLATION, seed, in, wrong).passed());

  // Poison left is never a pass, whatever the numbers.
  EXPECT_FALSE(Judge(p, contract::CANCELLATION, seed, in, good, 3).passed());

  // A NaN point must get index K and a NaN distance.
  const contract::ProblemShape q = Problem(1, 300, 70, 64);
  const auto nan_in = KMeans().MakeInputs(q, contract::SPECIAL_VALUES, seed);
  auto nan_out = KernelModel(q.kmeans_assign(), nan_in);
  ASSERT_TRUE(Judge(q, contract::SPECIAL_VALUES, seed, nan_in, nan_out).passed());
  for (int i = 0; i < 300; ++i) {
    int32_t v;
    std::memcpy(&v, nan_out["idx"].data() + 4 * i, 4);
    if (v != 70) continue;
    const int32_t zero = 0;
    std::memcpy(nan_out["idx"].data() + 4 * i, &zero, 4);
    auto r = Judge(q, contract::SPECIAL_VALUES, seed, nan_in, nan_out);
    EXPECT_FALSE(r.passed());
    EXPECT_EQ(r.nonfinite_policy_violations(), 1);
    return;
  }
  ADD_FAILURE() << "SPECIAL_VALUES planted no NaN point";
}

TEST(KMeansAssign, EverySchedulePointVerifiesAndLowersWithItsLowering) {
  for (const auto& prop : KMeans().ScheduleSpace()) {
    SCOPED_TRACE(prop.label);
    auto parsed = compiler::ParseModuleText(prop.schedule_text, "space.textproto");
    ASSERT_TRUE(parsed.ok()) << parsed.status();
    for (const char* target : {"sm_120f", "sm_90"}) {
      const auto a = compiler::Analyze(*parsed, **compiler::TargetByName(target));
      EXPECT_EQ(a->report.verdict(), report::VERIFIED) << target;
      EXPECT_TRUE(a->report.lowering_supported()) << target;
      EXPECT_EQ(a->report.lowering(), "kmeans_argmin") << target;
      EXPECT_EQ(a->report.operation(), "kmeans_assign") << target;
    }
  }
}

// One CTA walks every column tile of its row tile: a raster band has nothing to reorder, and the
// lowering says so rather than ignore it; the same for a persistent tile loop.
TEST(KMeansAssign, ARasterBandOrAPersistentLoopIsRefusedByItsLowering) {
  auto parsed = testing::MustParse(testing::SourceDir() / "examples/kmeans_assign.textproto");
  parsed.module.mutable_kernels(0)->mutable_work(0)->mutable_static_tiles()->set_raster_group_m(4);
  const auto a = compiler::Analyze(parsed, **compiler::TargetByName("sm_90"));
  EXPECT_FALSE(a->report.lowering_supported());
  std::string json;
  for (const auto& d : a->report.diagnostics()) json += d.evidence();
  EXPECT_NE(json.find("raster_group_m is not lowered for arg_reduce"), std::string::npos) << json;

  // Nor a persistent tile loop (lowered for TMA rings only; argmin's ring is cp.async).
  auto persistent = testing::MustParse(testing::SourceDir() / "examples/kmeans_assign.textproto");
  ir::WorkSchedule* work = persistent.module.mutable_kernels(0)->mutable_work(0);
  const ir::StaticTiles tiles = work->static_tiles();
  *work->mutable_persistent()->mutable_tiles() = tiles;
  const auto b = compiler::Analyze(persistent, **compiler::TargetByName("sm_90"));
  EXPECT_FALSE(b->report.lowering_supported());
  json.clear();
  for (const auto& d : b->report.diagnostics()) json += d.evidence();
  EXPECT_NE(json.find("kmeans_argmin lowering: a persistent tile loop"), std::string::npos) << json;
}

}  // namespace
}  // namespace cake
