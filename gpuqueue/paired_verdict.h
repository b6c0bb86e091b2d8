// Decision logic of the paired timing protocol, separate from the GPU so it is tested on CPU with
// recorded samples. A row's verdict comes from the per-pair ratios challenger/incumbent: the
// median ratio with a distribution-free (sign-test) confidence interval, judged against a
// practical-significance floor. Ambiguous never promotes.
#pragma once

#include <string>
#include <vector>

#include "cake/contract.pb.h"
#include "cake/evidence.pb.h"

namespace cake::gpuqueue {

struct RatioSummary {
  double median = 0, low = 0, high = 0;  // ~95% interval for the median ratio
};

// Needs at least 6 pairs; with fewer, low/high span everything (so the verdict is AMBIGUOUS).
RatioSummary SummarizeRatios(std::vector<double> ratios);

evidence::TimingVerdict RowVerdict(const RatioSummary& s, double practical_floor);

// Fills median/low/high/verdict of `row` from its samples.
void JudgeRow(evidence::RowTiming* row, double practical_floor);

// Overall verdict over required rows: any required SLOWER beyond the allowed regression ->
// SLOWER; else any required AMBIGUOUS (or no required row) -> AMBIGUOUS; all required FASTER ->
// FASTER; else TIE. Also sets the descriptive weighted geometric mean and the worst row.
void JudgeMeasurement(evidence::Measurement* m, const contract::Contract& c);

}  // namespace cake::gpuqueue
