#include "paired_verdict.h"

#include "quantile.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace cake::protocol {
namespace {

// Lower rank (0-based) of the ~95% sign-test interval of the median for n samples:
// the largest r with P(Binomial(n, 1/2) <= r) <= 0.025.
int SignTestRank(int n) {
  double cdf = 0, term = std::pow(0.5, n);  // P(X = 0)
  int r = -1;
  for (int k = 0; k <= n; ++k) {
    cdf += term;
    if (cdf > 0.025) break;
    r = k;
    term = term * (n - k) / (k + 1);
  }
  return r;
}

bool Kept(const evidence::RowTiming& row, int i) {
  return i >= row.discarded_size() || !row.discarded(i);
}

}  // namespace

RatioSummary SummarizeRatios(std::vector<double> ratios) {
  RatioSummary s;
  if (ratios.empty()) return s;
  std::sort(ratios.begin(), ratios.end());
  const size_t n = ratios.size();
  s.median = n % 2 ? ratios[n / 2] : 0.5 * (ratios[n / 2 - 1] + ratios[n / 2]);
  const int r = SignTestRank(static_cast<int>(n));
  if (r < 0) {
    s.low = 0;
    s.high = INFINITY;
    return s;
  }
  s.low = ratios[static_cast<size_t>(r)];
  s.high = ratios[n - 1 - static_cast<size_t>(r)];
  return s;
}

evidence::TimingVerdict RowVerdict(const RatioSummary& s, double floor) {
  if (s.high < 1.0 - floor) return evidence::FASTER;
  if (s.low > 1.0 + floor) return evidence::SLOWER;
  if (s.low >= 1.0 - floor && s.high <= 1.0 + floor) return evidence::TIE;
  return evidence::AMBIGUOUS;
}

void JudgeRow(evidence::RowTiming* row, double floor) {
  std::vector<double> ratios, span_ratios, inc, cha;
  int discarded = 0;
  for (int i = 0; i < row->incumbent_us_size() && i < row->challenger_us_size(); ++i) {
    if (!Kept(*row, i)) {
      ++discarded;
      continue;
    }
    inc.push_back(row->incumbent_us(i));
    cha.push_back(row->challenger_us(i));
    if (row->incumbent_us(i) > 0) ratios.push_back(row->challenger_us(i) / row->incumbent_us(i));
    if (i < row->incumbent_span_us_size() && i < row->challenger_span_us_size() &&
        row->incumbent_span_us(i) > 0 && std::isfinite(row->challenger_span_us(i)))
      span_ratios.push_back(row->challenger_span_us(i) / row->incumbent_span_us(i));
  }
  const RatioSummary s = SummarizeRatios(ratios);
  row->set_median_ratio(s.median);
  row->set_ratio_low(s.low);
  row->set_ratio_high(std::isinf(s.high) ? 1e9 : s.high);
  row->set_verdict(ratios.empty() ? evidence::AMBIGUOUS : RowVerdict(s, floor));
  row->set_discarded_pairs(discarded);
  row->set_incumbent_median_us(Quantile(inc, 0.5));
  row->set_challenger_median_us(Quantile(cha, 0.5));
  row->set_incumbent_iqr_us(Quantile(inc, 0.75) - Quantile(inc, 0.25));
  row->set_challenger_iqr_us(Quantile(cha, 0.75) - Quantile(cha, 0.25));
  // Spans count only when every kept pair has them on both arms.
  if (!span_ratios.empty() && span_ratios.size() == ratios.size()) {
    const RatioSummary sp = SummarizeRatios(span_ratios);
    row->set_span_median_ratio(sp.median);
    row->set_span_verdict(RowVerdict(sp, floor));
  } else {
    row->set_span_median_ratio(0);
    row->set_span_verdict(evidence::TIMING_VERDICT_UNSPECIFIED);
  }
}

void JudgeMeasurement(evidence::Measurement* m, const contract::Contract& c) {
  const double floor = c.protocol().practical_floor() > 0 ? c.protocol().practical_floor() : 0.02;
  const double allowed = c.protocol().allowed_regression();
  bool any_slower = false, any_ambiguous = false, all_faster = true, any_required = false;
  double log_sum = 0, weight_sum = 0, worst = 0, total_inc = 0, total_cha = 0;
  bool any_config = false;
  for (const evidence::RowTiming& row : m->rows()) any_config |= !row.mode().empty();
  m->clear_worst_row();
  m->clear_required_regression();
  for (evidence::RowTiming& row : *m->mutable_rows()) {
    JudgeRow(&row, floor);
    if (any_config && !row.primary()) continue;  // other configurations are descriptive
    double weight = 1;
    for (const auto& r : c.rows())
      if (r.name() == row.row()) weight = r.weight() > 0 ? r.weight() : 1;
    if (row.median_ratio() > 0) {
      log_sum += weight * std::log(row.median_ratio());
      weight_sum += weight;
    }
    total_inc += weight * row.incumbent_median_us();
    total_cha += weight * row.challenger_median_us();
    if (row.median_ratio() > worst) {
      worst = row.median_ratio();
      m->set_worst_row(row.row());
    }
    if (!row.required()) continue;
    any_required = true;
    if (row.verdict() == evidence::SLOWER && row.ratio_low() > 1.0 + allowed) {
      if (!any_slower)
        m->set_required_regression(
            absl::StrFormat("required row %s is slower (median ratio %.4f, interval [%.4f, %.4f])",
                            row.row(), row.median_ratio(), row.ratio_low(), row.ratio_high()));
      any_slower = true;
    }
    if (row.verdict() == evidence::AMBIGUOUS) any_ambiguous = true;
    if (row.verdict() != evidence::FASTER) all_faster = false;
  }
  m->set_weighted_geomean_ratio(weight_sum > 0 ? std::exp(log_sum / weight_sum) : 0);
  m->set_weighted_total_incumbent_us(total_inc);
  m->set_weighted_total_challenger_us(total_cha);
  if (m->invalid()) {
    m->set_verdict(evidence::INVALID);
  } else if (any_slower) {
    m->set_verdict(evidence::SLOWER);
  } else if (!any_required || any_ambiguous) {
    m->set_verdict(evidence::AMBIGUOUS);
  } else if (all_faster) {
    m->set_verdict(evidence::FASTER);
  } else {
    m->set_verdict(evidence::TIE);
  }
}

}  // namespace cake::protocol
