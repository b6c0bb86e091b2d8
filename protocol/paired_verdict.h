// Decision logic of the paired timing protocol, separate from the GPU so it is tested on CPU with
// recorded samples. A row's verdict comes from the per-pair ratios challenger/incumbent of the
// pairs kept (not throttled): the median ratio with a distribution-free (sign-test) confidence
// interval, judged against a practical-significance floor. Ambiguous never promotes. The same
// rule applied to CUPTI spans gives a separate span verdict (reported, never deciding).
#pragma once

#include <string>
#include <vector>

#include "cake/contract.pb.h"
#include "cake/evidence.pb.h"

namespace cake::protocol {

struct RatioSummary {
  double median = 0, low = 0, high = 0;  // ~95% interval for the median ratio
};

// Needs at least 6 pairs; with fewer, low/high span everything (so the verdict is AMBIGUOUS).
RatioSummary SummarizeRatios(std::vector<double> ratios);

evidence::TimingVerdict RowVerdict(const RatioSummary& s, double practical_floor);

// Fills median/low/high/verdict, per-arm medians and interquartile ranges and the span ratio
// and verdict of `row` from its kept samples.
void JudgeRow(evidence::RowTiming* row, double practical_floor);

// Judges every row, then the overall verdict over the required rows of the primary
// configuration (rows without a configuration count as primary): an INVALID run stays INVALID;
// any required SLOWER beyond the allowed regression -> SLOWER (named in required_regression),
// whatever the mean says; else any required AMBIGUOUS (or no required row) -> AMBIGUOUS; all
// required FASTER -> FASTER; else TIE. Also the descriptive weighted geometric mean, weighted
// totals and the worst row.
void JudgeMeasurement(evidence::Measurement* m, const contract::Contract& c);

}  // namespace cake::protocol
