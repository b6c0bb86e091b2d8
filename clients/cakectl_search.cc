#include "cakectl_search.h"

#include <algorithm>
#include <cstdio>
#include <iostream>
#include <thread>
#include <vector>

#include "absl/strings/numbers.h"
#include "cakectl_output.h"

namespace cake::clients {

std::optional<int64_t> ParseBudget(const std::string& text) {
  int64_t total = 0, number = -1;
  for (char c : text) {
    if (c >= '0' && c <= '9') {
      number = (number < 0 ? 0 : number) * 10 + (c - '0');
      if (number > (int64_t{1} << 40)) return std::nullopt;
      continue;
    }
    const int64_t unit = c == 's' ? 1 : c == 'm' ? 60 : c == 'h' ? 3600 : 0;
    if (unit == 0 || number < 0) return std::nullopt;
    total += number * unit;
    number = -1;
  }
  if (number >= 0) total += number;  // bare seconds
  if (text.empty() || total <= 0) return std::nullopt;
  return total;
}

namespace {

std::string Us(double us) {
  if (!(us > 0)) return "-";
  char b[32];
  std::snprintf(b, sizeof(b), "%.1f", us);
  return b;
}

void PrintProgress(const v1::SearchReport& r, int64_t now_ms) {
  const double elapsed = double(now_ms - r.started_unix_ms()) / 1000.0;
  std::fprintf(stderr,
               "[%6.0f s] round %d: %d proposed, %d measured of a space of %d; model %s; "
               "incumbent %s%s\n",
               elapsed, r.rounds(), r.proposed(), r.measured(), r.space_size(),
               r.calibration().fitted()
                   ? ("fitted on " + std::to_string(r.calibration().schedules()) +
                      " schedules, held-out tau " + std::to_string(r.calibration().held_out_tau()))
                         .c_str()
                   : r.calibration().note().c_str(),
               r.incumbent().c_str(),
               r.incumbent_label().empty() ? "" : (" (" + r.incumbent_label() + ")").c_str());
}

}  // namespace

void PrintSearchSummary(const v1::SearchReport& r) {
  const double minutes = double(r.updated_unix_ms() - r.started_unix_ms()) / 60000.0;
  std::printf("search %s of contract %s: %s (%s)\n", r.search_id().c_str(), r.contract_id().c_str(),
              r.state().c_str(), r.end_reason().c_str());
  std::printf("  %d rounds, %d proposed, %d measured in %.1f min (%.0f measured per hour)\n",
              r.rounds(), r.proposed(), r.measured(), minutes,
              minutes > 0 ? r.measured() / minutes * 60 : 0.0);
  const v1::SearchCalibration& c = r.calibration();
  std::printf("  cost model on %s: %s\n", c.device().c_str(),
              c.fitted() ? ("fitted on " + std::to_string(c.samples()) + " row medians of " +
                            std::to_string(c.schedules()) +
                            " schedules; leave-one-schedule-out "
                            "Kendall tau " +
                            std::to_string(c.held_out_tau()))
                               .c_str()
                         : c.note().c_str());
  std::printf("  incumbent: %s%s\n", r.incumbent().c_str(),
              r.incumbent_label().empty() ? " (not found by this search)"
                                          : (" = " + r.incumbent_label()).c_str());
  std::vector<const v1::SearchPoint*> points;
  for (const v1::SearchPoint& p : r.points()) points.push_back(&p);
  // Measured first, fastest first; then the rest in proposal order.
  std::stable_sort(points.begin(), points.end(), [](const auto* a, const auto* b) {
    const bool am = a->measured_us() > 0, bm = b->measured_us() > 0;
    if (am != bm) return am;
    return am && a->measured_us() < b->measured_us();
  });
  std::printf("\n  %-5s %-14s %-44s %12s %-19s %12s  %s\n", "round", "candidate", "schedule",
              "predicted us", "(interval)", "measured us", "state");
  for (const v1::SearchPoint* p : points) {
    const std::string interval =
        p->predicted_high_us() > 0
            ? "(" + Us(p->predicted_low_us()) + "-" + Us(p->predicted_high_us()) + ")"
            : "";
    std::printf("  %-5d %-14s %-44s %12s %-19s %12s  %s\n", p->round(), p->candidate_id().c_str(),
                p->label().c_str(), Us(p->predicted_us()).c_str(), interval.c_str(),
                Us(p->measured_us()).c_str(), p->state().substr(0, 100).c_str());
  }
  std::printf(
      "\n  (us: sum over the contract's rows of weight x median, primary mode; predicted "
      "before proposing, '-' while uncalibrated; the interval from the held-out errors' "
      "10th-90th percentiles)\n");
}

int RunSearchCommand(v1::CakeService::Stub* stub,
                     const std::function<std::unique_ptr<grpc::ClientContext>()>& ctx,
                     const std::function<int(const grpc::Status&)>& fail, const SearchOptions& o) {
  v1::SearchReport report;
  if (o.follow.empty()) {
    const std::optional<int64_t> budget = ParseBudget(o.budget);
    if (!budget) {
      std::cerr << "cakectl: --budget '" << o.budget
                << "' is not a duration (e.g. 90s, 20m, 1h30m; more than 0)\n";
      return 2;
    }
    v1::StartSearchRequest req;
    req.set_contract_id(o.contract_id);
    req.set_budget_seconds(*budget);
    req.set_max_candidates(o.max_candidates);
    req.set_batch(o.batch);
    auto c = ctx();
    grpc::Status s = stub->StartSearch(c.get(), req, &report);
    if (!s.ok()) return fail(s);
    std::cerr << "search " << report.search_id() << " started on contract " << o.contract_id << ": "
              << *budget << " s, at most " << report.max_candidates() << " proposals, "
              << report.batch() << " per round, a space of " << report.space_size()
              << " points (interrupting this command leaves it running; follow it with "
                 "cakectl search --follow "
              << report.search_id() << ")\n";
    if (o.detach) {
      std::cout << report.search_id() << "\n";
      return 0;
    }
  } else {
    report.set_search_id(o.follow);
  }
  int last_proposed = -1, last_measured = -1;
  for (;;) {
    v1::GetSearchRequest g;
    g.set_search_id(report.search_id());
    auto c = ctx();
    grpc::Status s = stub->GetSearch(c.get(), g, &report);
    if (!s.ok()) return fail(s);
    if (report.proposed() != last_proposed || report.measured() != last_measured ||
        report.state() != "running") {
      PrintProgress(report, report.state() == "running"
                                ? std::chrono::duration_cast<std::chrono::milliseconds>(
                                      std::chrono::system_clock::now().time_since_epoch())
                                      .count()
                                : report.updated_unix_ms());
      last_proposed = report.proposed();
      last_measured = report.measured();
    }
    if (report.state() != "running") break;
    std::this_thread::sleep_for(o.poll);
  }
  if (o.json)
    std::cout << Json(report) << "\n";
  else
    PrintSearchSummary(report);
  return report.state() == "finished" ? 0 : 1;
}

}  // namespace cake::clients
