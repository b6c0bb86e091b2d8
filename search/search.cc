#include "search.h"

#include <algorithm>
#include <cstdint>
#include <map>
#include <memory>
#include <set>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "base/status_macros.h"
#include "calibration/tile_schedule_of.h"
#include "google/protobuf/text_format.h"
#include "search_model.h"

namespace cake::search {
namespace {

namespace cal = calibration;

std::optional<cal::TileSchedule> TileOf(const std::string& schedule_text, int registers,
                                        int64_t shared) {
  ir::Module m;
  if (!google::protobuf::TextFormat::ParseFromString(schedule_text, &m)) return std::nullopt;
  return cal::TileScheduleOf(m, registers, shared);
}

std::vector<ModelRow> RowsOf(const contract::Contract& c, const workloads::Workload& w) {
  std::vector<ModelRow> rows;
  for (const contract::Row& r : c.rows())
    rows.push_back({r.name(), w.Extents(r.problem()), r.weight()});
  return rows;
}

// Per schedule hash, the mean primary-row median of every valid measurement on `device`, as
// challenger or as incumbent.
std::map<std::string, std::map<std::string, double>> RowMedians(
    const std::vector<evidence::Candidate>& candidates, const std::string& device) {
  std::map<std::string, std::string> hash_of;
  for (const evidence::Candidate& c : candidates) hash_of[c.id()] = c.schedule_hash();
  std::map<std::string, std::map<std::string, std::pair<double, int>>> sums;
  for (const evidence::Candidate& c : candidates)
    for (const evidence::Measurement& m : c.measurements()) {
      if (m.invalid() || (!device.empty() && m.device() != device)) continue;
      for (const evidence::RowTiming& r : m.rows()) {
        if (!r.primary()) continue;
        auto add = [&](const std::string& hash, double us) {
          if (hash.empty() || !(us > 0)) return;
          auto& [sum, n] = sums[hash][r.row()];
          sum += us;
          ++n;
        };
        add(c.schedule_hash(), r.challenger_median_us());
        add(hash_of[m.incumbent()], r.incumbent_median_us());
      }
    }
  std::map<std::string, std::map<std::string, double>> out;
  for (const auto& [hash, rows] : sums)
    for (const auto& [row, sn] : rows) out[hash][row] = sn.first / sn.second;
  return out;
}

// The device name measurements carry for this device: the newest valid measurement's whose name
// the lane's name contains, else the lane's own name.
std::string ProfileOf(const std::vector<evidence::Candidate>& candidates,
                      const ExecutionDevice& device) {
  int64_t newest = -1;
  std::string profile = device.name;
  for (const evidence::Candidate& c : candidates)
    for (const evidence::Measurement& m : c.measurements())
      if (!m.invalid() && !m.device().empty() && absl::StrContains(device.name, m.device()) &&
          c.created_unix_ms() > newest) {
        newest = c.created_unix_ms();
        profile = m.device();
      }
  return profile;
}

}  // namespace

bool Settled(evidence::CandidateState s) {
  return s == evidence::MEASURED || s == evidence::CHALLENGER || s == evidence::CONFIRMED_WINNER ||
         s == evidence::REJECTED;
}

std::optional<FieldError> CheckStartRequest(const v1::StartSearchRequest& req) {
  if (req.budget_seconds() <= 0 || req.budget_seconds() > kMaxBudgetSeconds)
    return FieldError{"budget_seconds",
                      absl::StrCat("budget_seconds: a search's budget is 1 .. ", kMaxBudgetSeconds,
                                   " seconds (got ", req.budget_seconds(), ")")};
  if (req.max_candidates() < 0 || req.max_candidates() > kMaxCandidates)
    return FieldError{"max_candidates",
                      absl::StrCat("max_candidates: at most ", kMaxCandidates, " proposals, 0 for ",
                                   kDefaultCandidates, " (got ", req.max_candidates(), ")")};
  if (req.batch() < 0 || req.batch() > kMaxBatch)
    return FieldError{"batch",
                      absl::StrCat("batch: 1 .. ", kMaxBatch, " proposals per round, 0 for ",
                                   kDefaultBatch, " (got ", req.batch(), ")")};
  return std::nullopt;
}

absl::StatusOr<v1::SearchReport> NewSearch(const v1::StartSearchRequest& req,
                                           const std::string& search_id, SearchBackend& backend) {
  if (auto bad = CheckStartRequest(req)) return absl::InvalidArgumentError(bad->message);
  CAKE_ASSIGN_OR_RETURN(contract::Contract c, backend.Contract(req.contract_id()));
  const workloads::Workload* w = workloads::FindWorkload(c.operation());
  if (w == nullptr) return workloads::UnknownOperation(c.operation());
  for (const ModelRow& r : RowsOf(c, *w))
    if (r.extents.m <= 0 || r.extents.n <= 0 || r.extents.k <= 0)
      return absl::FailedPreconditionError(
          absl::StrCat("workload '", c.operation(),
                       "' gives the cost model no tiled product for "
                       "row '",
                       r.name, "': it cannot be searched"));
  const absl::StatusOr<ExecutionDevice> device = backend.Device(c);
  if (!device.ok())
    return absl::FailedPreconditionError(
        absl::StrCat(device.status().message(),
                     ": a search times every proposal against the incumbent, so it needs an "
                     "execution device (nothing was proposed or recorded)"));
  v1::SearchReport r;
  r.set_search_id(search_id);
  r.set_contract_id(req.contract_id());
  r.set_state("running");
  const int64_t now = backend.NowMs();
  r.set_started_unix_ms(now);
  r.set_updated_unix_ms(now);
  r.set_deadline_unix_ms(now + req.budget_seconds() * 1000);
  r.set_max_candidates(req.max_candidates() > 0 ? req.max_candidates() : kDefaultCandidates);
  r.set_batch(req.batch() > 0 ? req.batch() : kDefaultBatch);
  r.set_space_size(static_cast<int>(w->SearchSpace().size()));
  r.mutable_calibration()->set_device(device->name);
  return r;
}

void Search::Finish(const std::string& state, const std::string& reason) {
  report_.set_state(state);
  report_.set_end_reason(reason);
  report_.set_updated_unix_ms(backend_->NowMs());
  (void)backend_->Save(report_);
}

v1::SearchReport Search::Run(const std::atomic<bool>& stop) {
  while (!stop.load() && Step()) backend_->WaitForChange(std::chrono::seconds(2));
  return report_;
}

bool Search::Step() {
  if (report_.state() != "running") return false;
  auto fail = [&](const absl::Status& s) {
    Finish("failed", std::string(s.message()));
    return false;
  };
  auto contract = backend_->Contract(report_.contract_id());
  if (!contract.ok()) return fail(contract.status());
  const workloads::Workload* w = workloads::FindWorkload(contract->operation());
  if (w == nullptr) return fail(workloads::UnknownOperation(contract->operation()));
  const absl::StatusOr<ExecutionDevice> device = backend_->Device(*contract);
  if (!device.ok()) return fail(device.status());
  auto candidates = backend_->Candidates(report_.contract_id());
  if (!candidates.ok()) return fail(candidates.status());
  auto incumbent = backend_->Incumbent(report_.contract_id());
  if (!incumbent.ok()) return fail(incumbent.status());

  auto others = backend_->OtherContracts(contract->operation(), report_.contract_id());
  if (!others.ok()) return fail(others.status());

  // What was measured on this device profile: every schedule of this contract and of the
  // workload's other contracts (their rows fitted on, with their own extents).
  const std::vector<ModelRow> rows = RowsOf(*contract, *w);
  cal::DeviceShape shape;
  shape.sm_count = device->sm_count > 0 ? device->sm_count : 1;
  std::vector<evidence::Candidate> everything = *candidates;
  for (const ContractCandidates& o : *others)
    everything.insert(everything.end(), o.candidates.begin(), o.candidates.end());
  const std::string profile = ProfileOf(everything, *device);
  const auto medians = RowMedians(*candidates, profile);
  std::vector<MeasuredSchedule> measured;
  // A candidate with row medians on this profile and a warp-tiled schedule, as a model sample
  // (`contract_rows`: its contract's rows when another contract's, else null).
  auto add_measured = [&](const evidence::Candidate& c, const auto& row_medians,
                          std::shared_ptr<const std::vector<ModelRow>> contract_rows) {
    auto m = row_medians.find(c.schedule_hash());
    if (m == row_medians.end()) return;
    const auto& usage = c.receipt().resources();
    auto tile = TileOf(c.schedule_text(), usage.registers(),
                       usage.shared_static_bytes() + usage.shared_dynamic_bytes());
    if (tile) measured.push_back({c.schedule_hash(), *tile, m->second, std::move(contract_rows)});
  };
  for (const ContractCandidates& o : *others) {
    auto other_rows = std::make_shared<const std::vector<ModelRow>>(RowsOf(o.contract, *w));
    const auto other_medians = RowMedians(o.candidates, profile);
    for (const evidence::Candidate& c : o.candidates) add_measured(c, other_medians, other_rows);
  }
  std::map<std::string, const evidence::Candidate*> by_id;
  for (const evidence::Candidate& c : *candidates) {
    by_id[c.id()] = &c;
    add_measured(c, medians, nullptr);
  }
  const Calibration fit = Calibrate(measured, rows, shape);
  v1::SearchCalibration* calib = report_.mutable_calibration();
  calib->set_device(profile);
  calib->set_samples(fit.samples);
  calib->set_schedules(fit.schedules);
  calib->set_fitted(fit.model.fitted);
  calib->set_held_out_tau(fit.held_out_tau);
  calib->set_held_out_error_low(fit.error_low);
  calib->set_held_out_error_high(fit.error_high);
  calib->set_note(fit.note);
  calib->clear_rates();
  calib->clear_term_names();
  for (int i = 0; i < cal::kTermCount; ++i) {
    calib->add_rates(fit.model.rates[i]);
    calib->add_term_names(cal::TermNames()[i]);
  }
  if (fit.samples != calibrated_samples_) {
    calibrated_samples_ = fit.samples;
    if (fit.model.fitted) (void)backend_->SaveCalibration(report_);
  }

  // The points proposed so far: their candidates' states and measured times.
  std::map<std::string, const MeasuredSchedule*> measured_by_hash;  // this contract's
  for (const MeasuredSchedule& m : measured)
    if (!m.rows) measured_by_hash[m.key] = &m;
  std::set<std::string> tried;
  int in_flight = 0;
  for (v1::SearchPoint& p : *report_.mutable_points()) {
    tried.insert(p.label());
    if (p.candidate_id().empty()) continue;
    auto it = by_id.find(p.candidate_id());
    if (it == by_id.end()) continue;
    const evidence::Candidate& c = *it->second;
    p.set_state(evidence::CandidateState_Name(c.state()));
    if (auto m = measured_by_hash.find(c.schedule_hash()); m != measured_by_hash.end())
      if (auto us = MeasuredWeightedUs(*m->second, rows)) p.set_measured_us(*us);
    // The incumbent is settled (it is never timed against itself). A candidate unsettled for
    // long (evidence missing, jobs blocked by the machine) stops holding a place in the batch.
    if (!Settled(c.state()) && c.id() != *incumbent &&
        backend_->NowMs() - c.created_unix_ms() < kStalledAfterMs)
      ++in_flight;
    if (c.id() == *incumbent) report_.set_incumbent_label(p.label());
  }
  report_.set_measured(static_cast<int>(
      std::count_if(report_.points().begin(), report_.points().end(),
                    [](const v1::SearchPoint& p) { return p.measured_us() > 0; })));
  if (report_.incumbent() != *incumbent) {
    report_.set_incumbent(*incumbent);
    bool ours = false;
    for (const v1::SearchPoint& p : report_.points()) ours |= p.candidate_id() == *incumbent;
    if (!ours) report_.set_incumbent_label("");
  }
  report_.set_updated_unix_ms(backend_->NowMs());

  if (backend_->NowMs() >= report_.deadline_unix_ms()) {
    Finish("finished", "budget");
    return false;
  }
  const int room =
      std::min(report_.batch() - in_flight, report_.max_candidates() - report_.proposed());
  if (report_.proposed() >= report_.max_candidates() && in_flight == 0) {
    Finish("finished", "candidates");
    return false;
  }

  // The untried points, best predicted first (the space's order while uncalibrated).
  struct Ranked {
    const workloads::Proposal* proposal;
    double predicted_us;
    size_t index;
  };
  if (space_.empty()) {
    // Built once: the space and each point's tile (registers and shared bytes estimated until
    // the point is compiled).
    space_ = w->SearchSpace();
    for (const workloads::Proposal& p : space_) {
      std::optional<cal::TileSchedule> tile = TileOf(p.schedule_text, 0, 0);
      if (tile) {
        tile->registers = EstimatedRegisters(*tile);
        tile->shared_bytes = RingBytes(*tile);
      }
      space_tiles_.push_back(tile);
    }
  }
  const std::vector<workloads::Proposal>& space = space_;
  std::vector<Ranked> untried;
  for (size_t i = 0; i < space.size(); ++i) {
    if (tried.count(space[i].label)) continue;
    double predicted = 0;
    if (fit.model.fitted && space_tiles_[i])
      predicted = PredictWeightedUs(fit.model, *space_tiles_[i], rows, shape);
    untried.push_back({&space[i], predicted, i});
  }
  if (untried.empty() && in_flight == 0) {
    Finish("finished", "space exhausted");
    return false;
  }
  if (fit.model.fitted)
    std::stable_sort(untried.begin(), untried.end(), [](const Ranked& a, const Ranked& b) {
      return a.predicted_us < b.predicted_us;
    });
  // Proposals change the incumbent, or the baseline while there is none (an agent's parent must
  // be a shared root of the contract).
  std::string parent = *incumbent;
  int64_t oldest = INT64_MAX;
  if (parent.empty())
    for (const evidence::Candidate& c : *candidates)
      if (c.created_unix_ms() < oldest) {
        oldest = c.created_unix_ms();
        parent = c.id();
      }
  if (room <= 0 || untried.empty() || parent.empty()) {
    (void)backend_->Save(report_);
    return true;
  }

  const double incumbent_us = [&] {
    auto it = by_id.find(*incumbent);
    if (it == by_id.end()) return 0.0;
    auto m = measured_by_hash.find(it->second->schedule_hash());
    if (m == measured_by_hash.end()) return 0.0;
    return MeasuredWeightedUs(*m->second, rows).value_or(0.0);
  }();
  int proposed_now = 0;
  for (const Ranked& r : untried) {
    if (proposed_now >= room) break;
    v1::ProposeRequest req;
    req.set_contract_id(report_.contract_id());
    req.set_schedule_text(r.proposal->schedule_text);
    req.set_branch(absl::StrCat("search/", report_.search_id()));
    req.set_idempotency_key(absl::StrCat("search-", report_.search_id(), "-", r.index));
    evidence::Hypothesis* h = req.mutable_hypothesis();
    h->set_parent(parent);
    h->add_changed_decisions(r.proposal->label);
    h->set_expected_effect(
        fit.model.fitted
            ? absl::StrFormat("the tile cost model (fitted on %d measured schedules, held-out "
                              "tau %.2f) predicts %.1f us weighted over the contract rows; the "
                              "incumbent measured %.1f us",
                              fit.schedules, fit.held_out_tau, r.predicted_us, incumbent_us)
            : absl::StrCat("first round, uncalibrated: point ", r.index,
                           " of the workload's search space (its own list comes first) measures "
                           "the rates the cost model needs"));
    h->set_falsification(
        "paired timing against the incumbent is not FASTER beyond the practical floor");
    v1::SearchPoint* p = report_.add_points();
    p->set_label(r.proposal->label);
    p->set_round(report_.rounds() + 1);
    p->set_predicted_us(r.predicted_us);
    const auto [low, high] = PredictionInterval(r.predicted_us, fit);
    p->set_predicted_low_us(low);
    p->set_predicted_high_us(high);
    auto reply = backend_->Propose(req);
    if (!reply.ok() && reply.status().code() == absl::StatusCode::kResourceExhausted) {
      report_.mutable_points()->RemoveLast();  // the queue is full: try again next round
      break;
    }
    if (!reply.ok()) {
      p->set_state(absl::StrCat("refused: ", reply.status().message()));
      continue;
    }
    p->set_candidate_id(reply->candidate_id());
    p->set_state(evidence::CandidateState_Name(reply->state()));
    report_.set_proposed(report_.proposed() + 1);
    ++proposed_now;
  }
  if (proposed_now > 0) report_.set_rounds(report_.rounds() + 1);
  if (absl::Status s = backend_->Save(report_); !s.ok()) return fail(s);
  return true;
}

}  // namespace cake::search
