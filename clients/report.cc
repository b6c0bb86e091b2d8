#include "report.h"

#include "protocol/quantile.h"

#include <algorithm>
#include <cmath>
#include <map>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "calibration/device_profiles.h"
#include "workloads/workload.h"

namespace cake::clients {
namespace {

using evidence::Candidate;
using evidence::Measurement;
using evidence::RowTiming;

constexpr const char* kStyle = R"css(
body{font:14px/1.4 system-ui,sans-serif;margin:24px;color:#222}
h1{font-size:20px}h2{font-size:16px;margin-top:28px}
table{border-collapse:collapse;margin:8px 0}td,th{border:1px solid #ccc;padding:3px 7px;text-align:right}
th{background:#f2f2f2}td.l,th.l{text-align:left}.FASTER{color:#067d17;font-weight:600}
.SLOWER,.FAILED,.INVALID{color:#b00020;font-weight:600}.AMBIGUOUS,.NOT_RUN,.INCONCLUSIVE{color:#a65f00}
.note{color:#555}.mono{font-family:ui-monospace,monospace}
)css";

// v with `digits` decimals, or a dash for NaN and infinities.
std::string Fmt(double v, int digits = 1) {
  return std::isfinite(v) ? absl::StrFormat("%.*f", digits, v) : "&ndash;";
}

// The roofline's model of a row: its workload's FLOPs and compulsory bytes (zero when no
// workload answers the contract's operation: nothing is plotted).
workloads::WorkModel ModelOf(const contract::Contract& c, const contract::Row& row) {
  const workloads::Workload* w = workloads::FindWorkload(c.operation());
  return w ? w->Model(row.problem(), c) : workloads::WorkModel{};
}
std::string ShapeText(const contract::Contract& c, const contract::ProblemShape& p) {
  const workloads::Workload* w = workloads::FindWorkload(c.operation());
  return w ? w->ShapeText(p) : "?";
}

const contract::Row* RowNamed(const contract::Contract& c, const std::string& name) {
  for (const auto& r : c.rows())
    if (r.name() == name) return &r;
  return nullptr;
}

// A stored median, or (records older than the per-arm medians) the median of the kept samples.
double MedianUs(double stored, const google::protobuf::RepeatedField<double>& samples,
                const RowTiming& r) {
  if (stored > 0) return stored;
  std::vector<double> v;
  for (int i = 0; i < samples.size(); ++i)
    if (i >= r.discarded_size() || !r.discarded(i)) v.push_back(samples.Get(i));
  return protocol::Median(std::move(v));
}
double IncumbentUs(const RowTiming& r) {
  return MedianUs(r.incumbent_median_us(), r.incumbent_us(), r);
}
double ChallengerUs(const RowTiming& r) {
  return MedianUs(r.challenger_median_us(), r.challenger_us(), r);
}

// The latest valid measurement of a candidate, or nullptr.
const Measurement* Latest(const Candidate& c) {
  const Measurement* m = nullptr;
  for (const auto& x : c.measurements())
    if (!x.invalid()) m = &x;
  return m;
}

std::string VerdictCell(evidence::TimingVerdict v) {
  const std::string n = evidence::TimingVerdict_Name(v);
  return absl::StrCat("<td class=\"", n, "\">", n, "</td>");
}

std::string RowTable(const Measurement& m) {
  std::string h = absl::StrCat(
      "<p>run ", m.run(), " against <span class=mono>", HtmlEscape(m.incumbent()), "</span> on ",
      HtmlEscape(m.device()), " (default SM clock ", Fmt(m.default_sm_mhz(), 0),
      " MHz); verdict <b class=\"", evidence::TimingVerdict_Name(m.verdict()), "\">",
      evidence::TimingVerdict_Name(m.verdict()),
      "</b> over the required rows of the primary "
      "configuration.</p>\n<table><tr><th class=l>row</th><th class=l>config</th><th>req</th>"
      "<th>incumbent &micro;s (IQR)</th><th>challenger &micro;s (IQR)</th><th>speedup</th>"
      "<th>ratio [95% interval]</th><th>verdict</th><th>span ratio</th><th>pairs (discarded)"
      "</th><th class=l>stop</th><th>launches/sample</th><th>SM MHz</th></tr>\n");
  for (const RowTiming& r : m.rows()) {
    const double speedup = ChallengerUs(r) > 0 ? IncumbentUs(r) / ChallengerUs(r) : NAN;
    const std::string config =
        r.mode().empty() ? "eager"
                         : absl::StrCat(r.mode(), "/", r.cache(), r.primary() ? " *" : "");
    absl::StrAppend(&h, "<tr><td class=l>", HtmlEscape(r.row()), "</td><td class=l>", config,
                    "</td><td>", r.required() ? "yes" : "", "</td><td>", Fmt(IncumbentUs(r)), " (",
                    Fmt(r.incumbent_iqr_us(), 2), ")</td><td>", Fmt(ChallengerUs(r)), " (",
                    Fmt(r.challenger_iqr_us(), 2), ")</td><td>", Fmt(speedup, 3), "</td><td>",
                    Fmt(r.median_ratio(), 4), " [", Fmt(r.ratio_low(), 4), ", ",
                    Fmt(r.ratio_high(), 4), "]</td>", VerdictCell(r.verdict()), "<td>",
                    r.span_median_ratio() > 0 ? Fmt(r.span_median_ratio(), 4) : "&ndash;",
                    "</td><td>", r.incumbent_us_size(), " (", r.discarded_pairs(),
                    ")</td><td class=l>", HtmlEscape(r.stop_reason()), "</td><td>",
                    r.launches_per_sample(), "</td><td>",
                    r.challenger_sm_mhz_size() > 0 ? Fmt(r.challenger_sm_mhz(0), 0) : "&ndash;",
                    "</td></tr>\n");
  }
  absl::StrAppend(
      &h, "</table><p>worst row <b>", HtmlEscape(m.worst_row()),
      "</b>; weighted total (primary, sum of weight &times; median) incumbent ",
      Fmt(m.weighted_total_incumbent_us()), " &micro;s, challenger ",
      Fmt(m.weighted_total_challenger_us()), " &micro;s; weighted geometric-mean ratio ",
      Fmt(m.weighted_geomean_ratio(), 4),
      " (descriptive only: a required-row regression blocks promotion whatever it says).",
      m.required_regression().empty()
          ? ""
          : absl::StrCat(" <b class=SLOWER>", HtmlEscape(m.required_regression()), "</b>"),
      "</p>\n<p class=note>* primary configuration. Stopping: ", HtmlEscape(m.stopping_rule()),
      ". CUPTI: ", HtmlEscape(m.cupti()), ".",
      m.note().empty() ? "" : absl::StrCat(" Notes: ", HtmlEscape(m.note()), "."), "</p>\n");
  for (const auto& chk : m.output_checks())
    absl::StrAppend(&h, "<p class=note>timed outputs of the ", HtmlEscape(chk.arm()), ": ",
                    chk.launches_checked(), " launches fingerprinted, ", chk.mismatches(),
                    " mismatches, ", chk.inputs_modified(), " with inputs modified</p>\n");
  return h;
}

// A log-log roofline: measured TFLOP/s of each candidate's rows (primary configuration) against
// arithmetic intensity, under the device's measured ceilings when there is a profile.
std::string Roofline(const ReportInput& in) {
  struct Point {
    double x, y;
    std::string label;
    bool incumbent;
  };
  std::vector<Point> pts;
  std::string device;
  for (const Candidate& c : in.candidates) {
    const Measurement* m = Latest(c);
    if (!m) continue;
    device = m->device();
    for (const RowTiming& r : m->rows()) {
      if (!r.mode().empty() && !r.primary()) continue;
      const contract::Row* row = RowNamed(in.contract, r.row());
      const workloads::WorkModel model = row ? ModelOf(in.contract, *row) : workloads::WorkModel{};
      if (!row || ChallengerUs(r) <= 0 || model.flops <= 0 || model.bytes <= 0) continue;
      const double ai = model.flops / model.bytes;
      const double tflops = model.flops / (ChallengerUs(r) * 1e6);
      // A plot of what a worker reported: an absurd value (a hostile or broken reply) is left
      // out rather than stretching the axes to infinity.
      if (!(ai > 1e-6 && ai < 1e9 && tflops > 1e-9 && tflops < 1e9)) continue;
      pts.push_back({ai, tflops, absl::StrCat(c.id(), " ", r.row()), c.id() == in.incumbent});
    }
  }
  if (pts.empty()) return "<p class=note>No valid measurement yet: nothing to plot.</p>\n";
  const auto ceilings = calibration::CeilingsFor(device);
  double xmin = 1e9, xmax = 0, ymin = 1e9, ymax = 0;
  for (const Point& p : pts) {
    xmin = std::min(xmin, p.x), xmax = std::max(xmax, p.x);
    ymin = std::min(ymin, p.y), ymax = std::max(ymax, p.y);
  }
  if (ceilings) ymax = std::max(ymax, ceilings->mma_tflops);
  xmin = std::pow(10, std::floor(std::log10(xmin / 3))),
  xmax = std::pow(10, std::ceil(std::log10(xmax * 3)));
  ymin = std::pow(10, std::floor(std::log10(ymin / 3))),
  ymax = std::pow(10, std::ceil(std::log10(ymax * 1.5)));
  const double W = 640, H = 400, L = 60, B = 40, T = 10, R = 20;
  auto sx = [&](double x) {
    return L + (W - L - R) * std::log10(x / xmin) / std::log10(xmax / xmin);
  };
  auto sy = [&](double y) {
    return H - B - (H - B - T) * std::log10(y / ymin) / std::log10(ymax / ymin);
  };
  std::string s = absl::StrFormat(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" "
      "role=\"img\" aria-label=\"roofline\"><rect x=\"%.0f\" y=\"%.0f\" width=\"%.0f\" "
      "height=\"%.0f\" fill=\"none\" stroke=\"#999\"/>\n",
      W, H, L, T, W - L - R, H - B - T);
  // Decades between 1e-6 and 1e9 at most: the ticks are bounded whatever the points are.
  for (double x = xmin; x <= xmax * 1.001 && x < 1e10; x *= 10)
    absl::StrAppend(&s, absl::StrFormat("<text x=\"%.1f\" y=\"%.0f\" font-size=\"11\" "
                                        "text-anchor=\"middle\">%g</text>\n",
                                        sx(x), H - B + 15, x));
  for (double y = ymin; y <= ymax * 1.001 && y < 1e10; y *= 10)
    absl::StrAppend(&s, absl::StrFormat("<text x=\"%.0f\" y=\"%.1f\" font-size=\"11\" "
                                        "text-anchor=\"end\">%g</text>\n",
                                        L - 4, sy(y) + 4, y));
  absl::StrAppend(&s, absl::StrFormat("<text x=\"%.0f\" y=\"%.0f\" font-size=\"12\" "
                                      "text-anchor=\"middle\">arithmetic intensity (FLOP/byte, "
                                      "each input read and output written once)</text>\n",
                                      (W + L) / 2, H - 6));
  absl::StrAppend(&s, absl::StrFormat("<text x=\"14\" y=\"%.0f\" font-size=\"12\" "
                                      "transform=\"rotate(-90 14 %.0f)\" text-anchor=\"middle\">"
                                      "TFLOP/s</text>\n",
                                      (H - B) / 2, (H - B) / 2));
  if (ceilings) {
    // Memory roof y = bandwidth * intensity up to the ridge, then the compute roof.
    const double ridge = ceilings->mma_tflops / ceilings->dram_tbps;
    const double x0 = std::max(xmin, ymin / ceilings->dram_tbps);
    absl::StrAppend(
        &s, absl::StrFormat("<polyline fill=\"none\" stroke=\"#b00020\" stroke-width=\"1.5\" "
                            "points=\"%.1f,%.1f %.1f,%.1f %.1f,%.1f\"/>\n",
                            sx(x0), sy(ceilings->dram_tbps * x0), sx(std::min(ridge, xmax)),
                            sy(ceilings->dram_tbps * std::min(ridge, xmax)), sx(xmax),
                            sy(ceilings->mma_tflops)));
  }
  for (const Point& p : pts)
    absl::StrAppend(&s,
                    absl::StrFormat("<circle cx=\"%.1f\" cy=\"%.1f\" r=\"%d\" fill=\"%s\" "
                                    "fill-opacity=\"0.7\"><title>%s: %.1f TFLOP/s</title>"
                                    "</circle>\n",
                                    sx(p.x), sy(p.y), p.incumbent ? 6 : 4,
                                    p.incumbent ? "#067d17" : "#1f5fbf", HtmlEscape(p.label), p.y));
  absl::StrAppend(
      &s, "</svg>\n<p class=note>",
      ceilings
          ? absl::StrCat("Roofs: ", HtmlEscape(ceilings->device), " ", Fmt(ceilings->mma_tflops, 0),
                         " TFLOP/s, ", Fmt(ceilings->dram_tbps, 2), " TB/s (",
                         HtmlEscape(ceilings->source), ").")
          : absl::StrCat("No measured ceilings for ", HtmlEscape(device), ": no roof drawn."),
      " Green: the incumbent. Hopper-witness timings say nothing about SM120/SM121 "
      "speed: no SM120 execution witness.</p>\n");
  return s;
}

// Bars of each measured candidate's geometric-mean ratio against its incumbent, in order.
std::string HistoryChart(const ReportInput& in) {
  std::vector<std::pair<std::string, const Measurement*>> bars;
  for (const Candidate& c : in.candidates)
    if (const Measurement* m = Latest(c)) bars.push_back({c.id(), m});
  if (bars.empty()) return "";
  const double W = 640, bar_h = 18, L = 130, H = bar_h * double(bars.size()) + 30;
  double hi = 1.2, lo = 0.8;
  for (const auto& [id, m] : bars) {
    hi = std::max(hi, m->weighted_geomean_ratio() * 1.05);
    lo = std::min(lo, m->weighted_geomean_ratio() * 0.95);
  }
  auto sx = [&](double r) { return L + (W - L - 20) * (r - lo) / (hi - lo); };
  std::string s = absl::StrFormat(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" "
      "height=\"%.0f\" role=\"img\" aria-label=\"history\">\n",
      W, H);
  double y = 5;
  for (const auto& [id, m] : bars) {
    const double r = m->weighted_geomean_ratio();
    const char* color = m->verdict() == evidence::FASTER   ? "#067d17"
                        : m->verdict() == evidence::SLOWER ? "#b00020"
                                                           : "#888";
    absl::StrAppend(
        &s, absl::StrFormat("<text x=\"%.0f\" y=\"%.0f\" font-size=\"11\" text-anchor=\"end\">"
                            "%s</text><rect x=\"%.1f\" y=\"%.0f\" width=\"%.1f\" height=\"%.0f\" "
                            "fill=\"%s\"><title>%s: ratio %.4f, %s</title></rect>\n",
                            L - 6, y + 12, HtmlEscape(id), std::min(sx(1), sx(r)), y,
                            std::fabs(sx(r) - sx(1)), bar_h - 4, color, HtmlEscape(id), r,
                            evidence::TimingVerdict_Name(m->verdict())));
    y += bar_h;
  }
  absl::StrAppend(&s, absl::StrFormat("<line x1=\"%.1f\" x2=\"%.1f\" y1=\"0\" y2=\"%.0f\" "
                                      "stroke=\"#222\"/><text x=\"%.1f\" y=\"%.0f\" "
                                      "font-size=\"11\" text-anchor=\"middle\">ratio 1 "
                                      "(challenger / incumbent; left is faster)</text></svg>\n",
                                      sx(1), sx(1), y, sx(1), y + 14));
  return s;
}

}  // namespace

std::string HtmlEscape(const std::string& s) {
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

std::string RenderHtmlReport(const ReportInput& in) {
  const contract::Contract& c = in.contract;
  std::string h = absl::StrCat(
      "<!DOCTYPE html>\n<html lang=en><head><meta charset=utf-8><title>Consumer CAKE report: ",
      HtmlEscape(c.name()), "</title><style>", kStyle, "</style></head><body>\n<h1>Contract ",
      HtmlEscape(c.name()), " <span class=mono>", HtmlEscape(in.contract_id), "</span></h1>\n",
      "<p>", HtmlEscape(c.operation()), ", ", HtmlEscape(c.input_dtype()), " in, ",
      HtmlEscape(c.accumulate_dtype()), " accumulate, ", HtmlEscape(c.output_dtype()),
      " out; oracle ", HtmlEscape(c.oracle()), "; compile target ", HtmlEscape(c.compile_target()),
      " (no SM120 execution witness), executed on ", HtmlEscape(c.execution_target()),
      ". Incumbent: <b class=mono>", in.incumbent.empty() ? "(none)" : HtmlEscape(in.incumbent),
      "</b>. Generated ", HtmlEscape(in.generated),
      ".</p>\n<h2>Rows</h2><table><tr>"
      "<th class=l>row</th><th>shape</th><th>weight</th><th>required</th></tr>\n");
  for (const auto& r : c.rows())
    absl::StrAppend(&h, "<tr><td class=l>", HtmlEscape(r.name()), r.held_out() ? " (held out)" : "",
                    "</td><td>", HtmlEscape(ShapeText(c, r.problem())), "</td><td>",
                    absl::StrFormat("%g", r.weight() > 0 ? r.weight() : 1.0), "</td><td>",
                    r.required() ? "yes" : "", "</td></tr>\n");
  absl::StrAppend(&h, "</table>\n");

  const Candidate* incumbent = nullptr;
  for (const Candidate& cand : in.candidates)
    if (cand.id() == in.incumbent) incumbent = &cand;
  absl::StrAppend(&h, "<h2>Row table: the incumbent's latest promotion run</h2>\n");
  if (incumbent && Latest(*incumbent))
    absl::StrAppend(&h, RowTable(*Latest(*incumbent)));
  else
    absl::StrAppend(&h,
                    "<p class=note>The incumbent has no measurement of its own (it is the "
                    "contract's baseline, or nothing was measured yet).</p>\n");

  absl::StrAppend(&h, "<h2>Roofline</h2>\n", Roofline(in));
  absl::StrAppend(&h, "<h2>Candidate history</h2>\n", HistoryChart(in),
                  "<table><tr><th class=l>candidate</th><th class=l>state</th><th class=l>"
                  "proposer</th><th class=l>evidence</th><th class=l>eligibility</th><th class=l>"
                  "runs</th><th class=l>note</th></tr>\n");
  for (const Candidate& cand : in.candidates) {
    std::vector<std::string> ev, runs;
    for (const auto& r : cand.evidence())
      ev.push_back(absl::StrCat("<span class=\"", evidence::EvidenceStatus_Name(r.status()), "\">",
                                HtmlEscape(absl::StrCat(evidence::EvidenceKind_Name(r.kind()),
                                                        r.tool().empty() ? "" : ":" + r.tool(), " ",
                                                        evidence::EvidenceStatus_Name(r.status()))),
                                "</span>"));
    for (const auto& m : cand.measurements())
      runs.push_back(
          absl::StrCat("<span class=\"", evidence::TimingVerdict_Name(m.verdict()), "\">",
                       evidence::TimingVerdict_Name(m.verdict()), "</span>",
                       m.invalid() ? absl::StrCat(" (", HtmlEscape(m.invalid_reason()), ")") : ""));
    absl::StrAppend(&h, "<tr><td class=\"l mono\">", HtmlEscape(cand.id()), "</td><td class=l>",
                    evidence::CandidateState_Name(cand.state()), "</td><td class=l>",
                    HtmlEscape(cand.proposer()), "</td><td class=l>", absl::StrJoin(ev, "<br>"),
                    "</td><td class=l>", HtmlEscape(cand.eligibility().summary()),
                    "</td><td class=l>", absl::StrJoin(runs, ", "), "</td><td class=\"l note\">",
                    HtmlEscape(cand.status_note()), "</td></tr>\n");
  }
  absl::StrAppend(&h, "</table>\n");
  for (const Candidate& cand : in.candidates)
    if (const Measurement* m = Latest(cand); m && cand.id() != in.incumbent)
      absl::StrAppend(&h, "<h2>Row table: ", HtmlEscape(cand.id()), "</h2>\n", RowTable(*m));
  absl::StrAppend(&h, "</body></html>\n");
  return h;
}

}  // namespace cake::clients
