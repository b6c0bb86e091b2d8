#include "regress_policy.h"

#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"

namespace cake::server {
namespace {

// The median latency of `candidate` in row `t` of a run of `m` (0 when it is neither arm).
double MedianOf(const evidence::Measurement& m, const evidence::RowTiming& t,
                const std::string& candidate) {
  if (m.candidate() == candidate) return t.challenger_median_us();
  if (m.incumbent() == candidate) return t.incumbent_median_us();
  return 0;
}

}  // namespace

RegressTiming DecideRegressTiming(const evidence::Measurement& fresh,
                                  const evidence::Measurement* recorded,
                                  const std::string& incumbent, const std::string& baseline,
                                  double practical_floor) {
  RegressTiming out;
  const double floor = practical_floor > 0 ? practical_floor : 0.02;
  if (fresh.invalid() || fresh.verdict() == evidence::INVALID) {
    out.summary = absl::StrCat("the re-timing run is invalid: ", fresh.invalid_reason());
    return out;
  }
  std::vector<std::string> regressions, notes;
  bool inconclusive = false;
  if (incumbent != baseline) {
    const std::string verdict = absl::StrFormat(
        "against the baseline %s: %s, weighted geomean ratio %.4f", baseline,
        evidence::TimingVerdict_Name(fresh.verdict()), fresh.weighted_geomean_ratio());
    if (fresh.verdict() == evidence::FASTER && fresh.required_regression().empty())
      notes.push_back(absl::StrCat(verdict, " (still faster)"));
    else if (fresh.verdict() == evidence::AMBIGUOUS)
      inconclusive = true, notes.push_back(absl::StrCat(verdict, " (no verdict)"));
    else
      regressions.push_back(absl::StrCat(
          verdict, fresh.required_regression().empty() ? "" : "; " + fresh.required_regression(),
          ": no longer faster than the baseline beyond the floor"));
  } else {
    notes.push_back("the incumbent is the baseline: no paired comparison with it");
  }
  if (recorded == nullptr) {
    notes.push_back("no earlier run of the incumbent is recorded: nothing to compare with");
    if (incumbent == baseline) inconclusive = true;
  } else {
    int compared = 0;
    for (const evidence::RowTiming& now : fresh.rows()) {
      if (!now.primary()) continue;
      for (const evidence::RowTiming& then : recorded->rows()) {
        if (then.row() != now.row() || then.mode() != now.mode() || then.cache() != now.cache())
          continue;
        const double before = MedianOf(*recorded, then, incumbent);
        const double after = MedianOf(fresh, now, incumbent);
        if (before <= 0 || after <= 0) continue;
        ++compared;
        const double ratio = after / before;
        if (ratio > 1 + floor)
          regressions.push_back(
              absl::StrFormat("row %s: median %.2f us now, %.2f us recorded (%.4fx, floor %.0f%%)",
                              now.row(), after, before, ratio, 100 * floor));
      }
    }
    notes.push_back(absl::StrCat(compared, " row(s) compared with the recorded run ",
                                 recorded->run(), " vs ", recorded->incumbent()));
    if (compared == 0) inconclusive = inconclusive || incumbent == baseline;
  }
  out.result = !regressions.empty() ? RegressTiming::kRegression
               : inconclusive       ? RegressTiming::kInconclusive
                                    : RegressTiming::kOk;
  std::vector<std::string> all = regressions;
  all.insert(all.end(), notes.begin(), notes.end());
  out.summary = absl::StrJoin(all, "; ");
  return out;
}

}  // namespace cake::server
