// libFuzzer entry point: portfolio text -> structure check -> each member's guard applied to the
// bundled GEMM and analyzed -> dispatch over the guarded facts. Aborts when an invariant breaks:
// a guarded schedule must admit only values both its declared facts and its guard admit, and
// dispatch must pick the first entry whose facts hold.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "compiler/analysis.h"
#include "compiler/portfolio.h"
#include "tests/compiler/test_util.h"
#include "tests/fuzz/quiet_init.h"

namespace {

bool Holds(const cake::ir::ScalarParam& s, int64_t v) {
  return v >= s.min() && (s.max() == 0 || v <= s.max()) &&
         (s.multiple_of() <= 1 || v % s.multiple_of() == 0);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  namespace cc = cake::compiler;
  const std::string text(reinterpret_cast<const char*>(data), size);
  auto p = cc::ParsePortfolioText(text, "fuzz.textproto");
  if (!p.ok()) return 0;
  (void)cc::CheckPortfolio(*p);
  static const cake::ir::Module gemm =
      cake::testing::MustParse(cake::testing::SourceDir() / "examples/gemm_bf16.textproto").module;
  const cc::TargetInfo& target = **cc::TargetByName("sm_120f");
  cake::portfolio::DispatcherManifest manifest;
  std::vector<const cake::portfolio::Member*> members;
  for (const auto& m : p->members()) members.push_back(&m);
  members.push_back(&p->fallback());
  for (const auto* m : members) {
    auto guarded = cc::ApplyGuard(gemm, m->guard());
    if (!guarded.ok()) continue;
    // Narrowing only: each admitted sample value is admitted by the declared facts and the guard.
    const auto& before = gemm.kernels(0).scalars();
    const auto& after = guarded->kernels(0).scalars();
    for (int i = 0; i < after.size(); ++i)
      for (int64_t v : {-1, 0, 1, 7, 8, 31, 32, 64, 96, 128, 129, 4096, 65536})
        if (Holds(after[i], v)) {
          if (!Holds(before[i], v)) std::abort();
          cake::portfolio::ShapeGuard one;
          for (const auto& g : m->guard().scalars())
            if (g.scalar() == after[i].name()) *one.add_scalars() = g;
          if (!cc::GuardAdmits(one, {{after[i].name(), v}})) std::abort();
        }
    cake::compiler::ParsedModule parsed;
    parsed.module = *guarded;
    (void)cc::Analyze(parsed, target);
    *manifest.add_entries()->mutable_guard() = cc::DeclaredFacts(guarded->kernels(0));
  }
  for (int64_t m : {1, 64, 128, 300})
    for (int64_t k : {8, 32, 1000}) {
      const cc::ScalarValues s = {{"M", m}, {"N", 128}, {"K", k}};
      auto got = cc::Dispatch(manifest, s);
      int expected = -1;
      for (int i = 0; i < manifest.entries_size() && expected < 0; ++i)
        if (cc::GuardAdmits(manifest.entries(i).guard(), s)) expected = i;
      if (got.ok() != (expected >= 0) || (got.ok() && *got != expected)) std::abort();
    }
  return 0;
}
