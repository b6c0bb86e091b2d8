// The search's pieces without a GPU: every point of each workload's search space verifies for its
// target and reads back (TileScheduleOf) as the tile its decisions name; the cost model fitted to
// a device whose times follow hidden random rates ranks held-out schedules; and the search loop,
// driven against a simulated device (a backend that "measures" each proposal from hidden rates),
// proposes the workload's list first, then what the model ranks best, ends on its budget, its
// candidate limit or an exhausted space, records refusals, retries a full queue and resumes from
// its saved report without proposing a point twice. The loop against a real caked and GPU is
// scripts/device/search.sh.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <random>
#include <set>

#include "absl/strings/str_cat.h"
#include "calibration/tile_schedule_of.h"
#include "compiler/analysis.h"
#include "compiler/parse.h"
#include "compiler/targets.h"
#include "google/protobuf/text_format.h"
#include "search/search.h"
#include "search/search_model.h"
#include "workloads/gemm_bf16/shape.pb.h"
#include "workloads/gemm_bf16/space.h"
#include "workloads/workload.h"

namespace cake {
namespace {

namespace cal = calibration;
namespace gemm = workloads::gemm_bf16;

std::optional<cal::TileSchedule> TileOfText(const std::string& text) {
  ir::Module m;
  if (!google::protobuf::TextFormat::ParseFromString(text, &m)) return std::nullopt;
  return cal::TileScheduleOf(m, 0, 0);
}

TEST(SearchSpace, EveryGemmPointReadsBackAsItsDecisions) {
  const auto space = gemm::WarpGemmSearchSpace();
  EXPECT_GT(space.size(), 200u);
  std::set<std::string> labels;
  for (const gemm::WarpGemmParams& p : space) {
    EXPECT_TRUE(labels.insert(p.Describe()).second) << "duplicate " << p.Describe();
    auto t = cal::TileScheduleOf(gemm::MakeWarpGemm(p), 0, 0);
    ASSERT_TRUE(t.has_value()) << p.Describe();
    EXPECT_EQ(t->tile_m, p.tile_m) << p.Describe();
    EXPECT_EQ(t->tile_n, p.tile_n) << p.Describe();
    EXPECT_EQ(t->tile_k, p.tile_k) << p.Describe();
    EXPECT_EQ(t->warps_m, p.warps_m) << p.Describe();
    EXPECT_EQ(t->warps_n, p.warps_n) << p.Describe();
    EXPECT_EQ(t->stages, p.stages) << p.Describe();
    EXPECT_EQ(t->tma, p.transfer == ir::TMA) << p.Describe();
    EXPECT_EQ(t->raster_group_m, std::max(1, p.raster_group_m)) << p.Describe();
    EXPECT_EQ(t->staged_store, p.stage_store) << p.Describe();
    EXPECT_EQ(t->loader_warp, p.warp_specialized) << p.Describe();
    EXPECT_EQ(t->k_slices, std::max(1, p.k_slices)) << p.Describe();
  }
  // The workload's list comes first, in its order: the search's first round.
  const auto list = gemm::WarpGemmCandidates();
  for (size_t i = 0; i < list.size(); ++i) EXPECT_EQ(space[i].Describe(), list[i].Describe());
}

TEST(SearchSpace, EveryPointOfEveryWorkloadVerifiesForTheContractTarget) {
  const compiler::TargetInfo* target = *compiler::TargetByName("sm_120f");
  for (const std::string& op : workloads::RegisteredOperations()) {
    const workloads::Workload* w = workloads::FindWorkload(op);
    const auto space = w->SearchSpace();
    const auto list = w->ScheduleSpace();
    ASSERT_GE(space.size(), list.size()) << op;
    std::set<std::string> labels;
    int verified = 0;
    for (size_t i = 0; i < space.size(); ++i) {
      const workloads::Proposal& p = space[i];
      if (i < list.size()) {
        EXPECT_EQ(p.label, list[i].label) << op;
      }
      EXPECT_TRUE(labels.insert(p.label).second) << op << " duplicate " << p.label;
      auto parsed = compiler::ParseModuleText(p.schedule_text, p.label);
      ASSERT_TRUE(parsed.ok()) << op << " " << p.label << ": " << parsed.status();
      const auto analysis = compiler::Analyze(*parsed, *target);
      std::string errors;
      for (const report::Diagnostic& d : analysis->report.diagnostics())
        if (d.severity() != report::WARNING)
          absl::StrAppend(&errors, d.severity(), " ", d.message(), "; ");
      EXPECT_EQ(analysis->report.verdict(), report::VERIFIED)
          << op << " " << p.label << ": " << errors;
      EXPECT_EQ(analysis->report.operation(), op) << p.label;
      verified += analysis->report.verdict() == report::VERIFIED;
      auto tile = TileOfText(p.schedule_text);
      ASSERT_TRUE(tile.has_value()) << op << " " << p.label;
      // The label starts with the CTA tile the IR holds.
      EXPECT_EQ(p.label.rfind(absl::StrCat(tile->tile_m, "x", tile->tile_n, "x", tile->tile_k, " w",
                                           tile->warps_m, "x", tile->warps_n, " s", tile->stages),
                              0),
                0u)
          << p.label;
    }
    EXPECT_GT(verified, 20) << op;
  }
}

TEST(SearchSpace, ASchedulesWithoutAWarpTiledAccumulatorHasNoTile) {
  ir::Module m = gemm::MakeWarpGemm({});
  m.mutable_kernels(0)->clear_pipelines();
  EXPECT_FALSE(cal::TileScheduleOf(m, 0, 0).has_value());
  EXPECT_FALSE(cal::TileScheduleOf(ir::Module(), 0, 0).has_value());
}

// --- a device whose times follow hidden rates -------------------------------------------------

std::vector<search::ModelRow> GemmRows() {
  return {{"large", {8192, 8192, 8192}, 2},
          {"square", {4096, 4096, 4096}, 1},
          {"skinny", {16, 8192, 8192}, 1},
          {"odd", {3000, 1000, 2048}, 0}};
}

cal::Terms HiddenRates(std::mt19937_64& rng) {
  std::uniform_real_distribution<double> u(0.2, 1.0);
  cal::Terms r{};
  // Per-term scales that give each term a plausible share of a GEMM's time.
  const double scale[cal::kTermCount] = {1.6e-3, 2e-4, 1e-4, 1e-3, 1e-3, 1e-3,
                                         1e-3,   2e-6, 1e-6, 3e-4, 5e-3};
  for (int i = 0; i < cal::kTermCount; ++i) r[i] = u(rng) * scale[i];
  return r;
}

double TrueMs(const cal::Terms& rates, const cal::TileSchedule& t, const search::ModelRow& row,
              const cal::DeviceShape& d) {
  const cal::Terms terms = cal::TileTerms(t, {row.extents.m, row.extents.n, row.extents.k}, d);
  double ms = 0;
  for (int i = 0; i < cal::kTermCount; ++i) ms += rates[i] * terms[i];
  return ms;
}

cal::TileSchedule WithResources(cal::TileSchedule t) {
  t.registers = search::EstimatedRegisters(t);
  t.shared_bytes = search::RingBytes(t);
  return t;
}

TEST(SearchModel, RanksHeldOutSchedulesOfADeviceThatFollowsTheModel) {
  std::mt19937_64 rng(std::random_device{}());
  const cal::Terms rates = HiddenRates(rng);
  cal::DeviceShape device;
  device.sm_count = 132;
  const auto rows = GemmRows();
  auto space = gemm::WarpGemmSearchSpace();
  std::shuffle(space.begin(), space.end(), rng);
  std::normal_distribution<double> noise(0, 0.003);
  std::vector<search::MeasuredSchedule> measured;
  for (int i = 0; i < 24; ++i) {
    const cal::TileSchedule t =
        WithResources(*cal::TileScheduleOf(gemm::MakeWarpGemm(space[i]), 0, 0));
    search::MeasuredSchedule m{space[i].Describe(), t, {}, nullptr};
    for (const auto& r : rows)
      m.row_us[r.name] = TrueMs(rates, t, r, device) * 1000 * (1 + noise(rng));
    measured.push_back(m);
  }
  const search::Calibration two =
      search::Calibrate({measured.begin(), measured.begin() + 2}, rows, device);
  EXPECT_FALSE(two.model.fitted);
  EXPECT_NE(two.note.find("uncalibrated: 2 schedule(s)"), std::string::npos) << two.note;
  const search::Calibration c = search::Calibrate(measured, rows, device);
  ASSERT_TRUE(c.model.fitted) << c.note;
  EXPECT_EQ(c.schedules, 24);
  EXPECT_EQ(c.samples, 24 * 4);
  EXPECT_GT(c.held_out_tau, 0.8);
  // The interval: held-out errors around 0, and a prediction's interval brackets it.
  EXPECT_LE(c.error_low, c.error_high);
  EXPECT_LT(c.error_low, 0.05);
  EXPECT_GT(c.error_high, -0.05);
  const auto [low, high] = search::PredictionInterval(1000, c);
  EXPECT_LE(low, 1000 / (1 + c.error_high) + 1e-9);
  EXPECT_GE(high, 1000 / (1 + c.error_low) - 1e-9);
  EXPECT_LE(low, high);
  EXPECT_EQ(search::PredictionInterval(1000, two), (std::pair<double, double>{0, 0}));
  // And a device whose times ignore the tiling cannot be ranked.
  std::vector<search::MeasuredSchedule> shuffled = measured;
  std::uniform_real_distribution<double> any(100, 200);
  for (auto& m : shuffled)
    for (auto& [row, us] : m.row_us) us = any(rng);
  EXPECT_LT(search::Calibrate(shuffled, rows, device).held_out_tau, 0.5);
}

// A simulated daemon: proposals are "measured" at once from hidden rates against the
// incumbent, the fastest measured schedule becomes the incumbent, and the clock moves only when
// the search waits.
class SimulatedDevice final : public search::SearchBackend {
 public:
  explicit SimulatedDevice(uint64_t seed) : rng_(seed), rates_(HiddenRates(rng_)) {
    contract_.set_operation("gemm_bf16_tn");
    for (const auto& r : GemmRows()) {
      contract::Row* row = contract_.add_rows();
      row->set_name(r.name);
      row->set_weight(r.weight);
      auto* g = row->mutable_problem()->mutable_gemm_bf16();
      g->set_m(int32_t(r.extents.m));
      g->set_n(int32_t(r.extents.n));
      g->set_k(int32_t(r.extents.k));
    }
    device_.sm_count = 132;
    Add(workloads::FindWorkload("gemm_bf16_tn")->ScheduleSpace()[0].schedule_text, "operator");
    incumbent_ = candidates_.front().id();
  }

  absl::StatusOr<contract::Contract> Contract(const std::string& id) override {
    if (id != "k1") return absl::NotFoundError("no contract " + id);
    return contract_;
  }
  absl::StatusOr<std::string> Incumbent(const std::string&) override { return incumbent_; }
  absl::StatusOr<std::vector<evidence::Candidate>> Candidates(const std::string&) override {
    return candidates_;
  }
  absl::StatusOr<std::vector<search::ContractCandidates>> OtherContracts(
      const std::string& operation, const std::string& except) override {
    EXPECT_EQ(operation, "gemm_bf16_tn");
    EXPECT_EQ(except, "k1");
    return others;
  }
  absl::StatusOr<v1::ProposeReply> Propose(const v1::ProposeRequest& req) override {
    ++propose_calls;
    if (queue_full > 0) {
      --queue_full;
      return absl::ResourceExhaustedError("job queue is full");
    }
    if (refuse_label_ != "" && req.hypothesis().changed_decisions(0) == refuse_label_)
      return absl::InvalidArgumentError("refused for the test");
    // The parent is the incumbent the round started from (it may have changed since).
    EXPECT_TRUE(std::any_of(candidates_.begin(), candidates_.end(), [&](const auto& c) {
      return c.id() == req.hypothesis().parent();
    })) << req.hypothesis().parent();
    EXPECT_EQ(req.branch(), "search/s1");
    v1::ProposeReply r;
    if (auto it = keys_.find(req.idempotency_key()); it != keys_.end()) {
      r.set_candidate_id(it->second);
      r.set_duplicate(true);
      return r;
    }
    const std::string id = Add(req.schedule_text(), "search");
    keys_[req.idempotency_key()] = id;
    proposed_labels.push_back(req.hypothesis().changed_decisions(0));
    r.set_candidate_id(id);
    r.set_state(evidence::MEASURED);
    return r;
  }
  absl::StatusOr<search::ExecutionDevice> Device(const contract::Contract&) override {
    if (!device_note.empty()) return absl::FailedPreconditionError(device_note);
    return search::ExecutionDevice{"0: Simulated GPU (9.0)", 132};
  }
  absl::Status Save(const v1::SearchReport& report) override {
    saved = report;
    return absl::OkStatus();
  }
  absl::Status SaveCalibration(const v1::SearchReport& report) override {
    calibrations.push_back(report.calibration());
    return absl::OkStatus();
  }
  void WaitForChange(std::chrono::milliseconds timeout) override { now_ += timeout.count(); }
  int64_t NowMs() override { return now_; }

  // The true weighted time of a label's schedule.
  double TrueWeightedUs(const std::string& text) {
    const cal::TileSchedule t = WithResources(*TileOfText(text));
    search::MeasuredSchedule m{"", t, {}, nullptr};
    for (const auto& r : GemmRows()) m.row_us[r.name] = TrueMs(rates_, t, r, device_) * 1000;
    return *search::MeasuredWeightedUs(m, GemmRows());
  }
  void Refuse(const std::string& label) { refuse_label_ = label; }
  // This simulated daemon's contract and candidates, as another contract's record.
  search::ContractCandidates AsOtherContract(const std::string& id) const {
    search::ContractCandidates o{contract_, candidates_};
    for (auto& c : o.candidates) {
      c.set_contract_id(id);
      c.set_id(id + "-" + c.id());
      for (auto& m : *c.mutable_measurements()) m.set_incumbent(id + "-" + m.incumbent());
    }
    return o;
  }

  std::vector<search::ContractCandidates> others;  // another contract's record, as given
  std::vector<std::string> proposed_labels;
  std::string device_note;  // set: no device runs the contract's execution target
  std::vector<v1::SearchCalibration> calibrations;
  v1::SearchReport saved;
  int queue_full = 0, propose_calls = 0;

 private:
  std::string Add(const std::string& text, const std::string& proposer) {
    evidence::Candidate c;
    c.set_id(absl::StrCat("c", candidates_.size()));
    c.set_contract_id("k1");
    c.set_schedule_text(text);
    c.set_schedule_hash(absl::StrCat("h", candidates_.size()));
    c.set_proposer(proposer);
    c.set_created_unix_ms(now_);
    const cal::TileSchedule t = WithResources(*TileOfText(text));
    c.mutable_receipt()->mutable_resources()->set_registers(t.registers);
    c.mutable_receipt()->mutable_resources()->set_shared_dynamic_bytes(t.shared_bytes);
    c.set_state(evidence::MEASURED);
    if (!candidates_.empty()) {
      evidence::Measurement* m = c.add_measurements();
      m->set_device("Simulated GPU");
      m->set_incumbent(incumbent_);
      const evidence::Candidate* inc = nullptr;
      for (const auto& o : candidates_)
        if (o.id() == incumbent_) inc = &o;
      const cal::TileSchedule it = WithResources(*TileOfText(inc->schedule_text()));
      for (const auto& r : GemmRows()) {
        evidence::RowTiming* row = m->add_rows();
        row->set_row(r.name);
        row->set_primary(true);
        row->set_challenger_median_us(TrueMs(rates_, t, r, device_) * 1000);
        row->set_incumbent_median_us(TrueMs(rates_, it, r, device_) * 1000);
      }
    }
    candidates_.push_back(c);
    if (candidates_.size() > 1 &&
        TrueWeightedUs(text) < TrueWeightedUs(Find(incumbent_).schedule_text()))
      incumbent_ = c.id();
    return c.id();
  }
  const evidence::Candidate& Find(const std::string& id) {
    for (const auto& c : candidates_)
      if (c.id() == id) return c;
    return candidates_.front();
  }

  std::mt19937_64 rng_;
  cal::Terms rates_;
  cal::DeviceShape device_;
  contract::Contract contract_;
  std::vector<evidence::Candidate> candidates_;
  std::map<std::string, std::string> keys_;
  std::string incumbent_, refuse_label_;
  int64_t now_ = 1'000'000;
};

v1::SearchReport Started(SimulatedDevice& sim, int64_t budget_s, int max_candidates, int batch) {
  v1::StartSearchRequest req;
  req.set_contract_id("k1");
  req.set_budget_seconds(budget_s);
  req.set_max_candidates(max_candidates);
  req.set_batch(batch);
  auto r = search::NewSearch(req, "s1", sim);
  EXPECT_TRUE(r.ok()) << r.status();
  return *r;
}

TEST(SearchLoop, ProposesTheListFirstThenWhatTheModelRanksBest) {
  SimulatedDevice sim(std::random_device{}());
  search::Search s(Started(sim, 3600, 40, 8), &sim);
  std::atomic<bool> stop{false};
  const v1::SearchReport r = s.Run(stop);
  EXPECT_EQ(r.state(), "finished");
  EXPECT_EQ(r.end_reason(), "candidates");
  EXPECT_EQ(r.proposed(), 40);
  ASSERT_EQ(sim.proposed_labels.size(), 40u);
  // Round 1: the workload's list after its baseline point (already the contract's baseline).
  const auto list = workloads::FindWorkload("gemm_bf16_tn")->ScheduleSpace();
  for (size_t i = 0; i < 8; ++i) EXPECT_EQ(sim.proposed_labels[i], list[i].label);
  for (int i = 0; i < 8; ++i) EXPECT_EQ(r.points(i).predicted_us(), 0) << "uncalibrated";
  // Later rounds: predictions exist and each round goes best predicted first.
  ASSERT_GE(r.rounds(), 5);
  int bracketed = 0;
  for (int i = 8; i < r.points_size(); ++i) {
    EXPECT_GT(r.points(i).predicted_us(), 0) << r.points(i).label();
    EXPECT_LE(r.points(i).predicted_low_us(), r.points(i).predicted_high_us());
    bracketed += r.points(i).predicted_low_us() <= r.points(i).measured_us() &&
                 r.points(i).measured_us() <= r.points(i).predicted_high_us();
    if (i > 8 && r.points(i).round() == r.points(i - 1).round()) {
      EXPECT_LE(r.points(i - 1).predicted_us(), r.points(i).predicted_us());
    }
  }
  EXPECT_GE(bracketed, (r.points_size() - 8) / 2) << "measured inside the predicted interval";
  EXPECT_TRUE(r.calibration().fitted());
  EXPECT_GT(r.calibration().held_out_tau(), 0.6);
  EXPECT_FALSE(sim.calibrations.empty());
  EXPECT_EQ(r.measured(), 40);
  // Ranking pays: of the whole space, few points are faster than the best the search measured
  // after 40 proposals (the device follows the model's form, with rates it had to learn).
  double best = 1e300;
  for (const auto& p : r.points()) best = std::min(best, p.measured_us());
  int faster = 0;
  const auto space = workloads::FindWorkload("gemm_bf16_tn")->SearchSpace();
  for (const auto& p : space) faster += sim.TrueWeightedUs(p.schedule_text) < best * 0.999;
  EXPECT_LE(faster, int(space.size()) / 50) << "of " << space.size();
  EXPECT_FALSE(r.incumbent_label().empty()) << "the incumbent is a point the search found";
}

// A second contract of the workload on the same device starts calibrated: the first contract's
// measured rows fit the model before this one has measured anything, so its first round is
// already ranked (and still good: few of the space's points beat what it finds).
TEST(SearchLoop, ASecondContractStartsFromTheRowsTheDeviceMeasuredForTheFirst) {
  const uint64_t seed = std::random_device{}();
  SimulatedDevice first(seed);
  search::Search a(Started(first, 3600, 16, 8), &first);
  std::atomic<bool> stop{false};
  a.Run(stop);
  SimulatedDevice second(seed);  // the same device: the same hidden rates
  second.others.push_back(first.AsOtherContract("k0"));
  search::Search b(Started(second, 3600, 8, 8), &second);
  ASSERT_TRUE(b.Step());
  const v1::SearchReport& r = b.report();
  EXPECT_TRUE(r.calibration().fitted()) << r.calibration().note();
  EXPECT_GE(r.calibration().schedules(), 16);
  ASSERT_EQ(r.points_size(), 8);
  for (const auto& p : r.points()) EXPECT_GT(p.predicted_us(), 0) << p.label();
  b.Run(stop);
  double best = 1e300;
  for (const auto& p : b.report().points()) best = std::min(best, p.measured_us());
  int faster = 0;
  const auto space = workloads::FindWorkload("gemm_bf16_tn")->SearchSpace();
  for (const auto& p : space) faster += second.TrueWeightedUs(p.schedule_text) < best * 0.999;
  EXPECT_LE(faster, int(space.size()) / 20) << "of " << space.size();
  // Another device's rows are not this one's: a profile never borrows.
  SimulatedDevice third(seed);
  auto foreign = first.AsOtherContract("k0");
  for (auto& c : foreign.candidates)
    for (auto& m : *c.mutable_measurements()) m.set_device("Another GPU");
  third.others.push_back(foreign);
  search::Search c(Started(third, 3600, 8, 8), &third);
  ASSERT_TRUE(c.Step());
  EXPECT_FALSE(c.report().calibration().fitted());
  EXPECT_EQ(c.report().points(0).predicted_us(), 0);
}

TEST(SearchLoop, IsRefusedWhenNoDeviceRunsTheExecutionTargetAndEndsWhenItGoes) {
  SimulatedDevice sim(std::random_device{}());
  sim.device_note =
      "no device for target sm_120f on this host: device 0 is sm_90 (NVIDIA H100 (9.0))";
  v1::StartSearchRequest req;
  req.set_contract_id("k1");
  req.set_budget_seconds(60);
  auto refused = search::NewSearch(req, "s1", sim);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(refused.status().message().find("no device for target sm_120f"), std::string::npos)
      << refused.status();
  EXPECT_TRUE(sim.proposed_labels.empty());
  // A search started while the device answered, then resumed where it no longer does, ends
  // "failed" naming why, having proposed nothing.
  sim.device_note.clear();
  const v1::SearchReport started = Started(sim, 60, 20, 4);
  sim.device_note = "no execution device: probe failed";
  search::Search s(started, &sim);
  std::atomic<bool> stop{false};
  const v1::SearchReport r = s.Run(stop);
  EXPECT_EQ(r.state(), "failed");
  EXPECT_NE(r.end_reason().find("no execution device"), std::string::npos) << r.end_reason();
  EXPECT_TRUE(sim.proposed_labels.empty());
}

TEST(SearchLoop, EndsOnItsBudget) {
  SimulatedDevice sim(std::random_device{}());
  search::Search s(Started(sim, 7, 2000, 4), &sim);  // 7 s: four 2 s waits
  std::atomic<bool> stop{false};
  const v1::SearchReport r = s.Run(stop);
  EXPECT_EQ(r.end_reason(), "budget");
  EXPECT_EQ(sim.saved.state(), "finished");
  EXPECT_LE(r.proposed(), 4 * 4);
  EXPECT_GE(r.proposed(), 4);
}

TEST(SearchLoop, RecordsRefusalsRetriesAFullQueueAndResumesWithoutReproposing) {
  SimulatedDevice sim(std::random_device{}());
  const auto list = workloads::FindWorkload("gemm_bf16_tn")->ScheduleSpace();
  sim.Refuse(list[2].label);
  sim.queue_full = 1;
  search::Search first(Started(sim, 3600, 12, 4), &sim);
  EXPECT_TRUE(first.Step());  // the queue was full: nothing proposed this round
  EXPECT_EQ(first.report().proposed(), 0);
  EXPECT_EQ(first.report().points_size(), 0);
  EXPECT_TRUE(first.Step());
  EXPECT_EQ(first.report().proposed(), 4);
  bool refused = false;
  for (const auto& p : first.report().points())
    if (p.label() == list[2].label) {
      refused = true;
      EXPECT_EQ(p.state().rfind("refused: refused for the test", 0), 0u) << p.state();
      EXPECT_TRUE(p.candidate_id().empty());
    }
  EXPECT_TRUE(refused);
  // The daemon stops here; a new one resumes from what was saved.
  const v1::SearchReport saved = sim.saved;
  EXPECT_EQ(saved.state(), "running");
  search::Search resumed(saved, &sim);
  std::atomic<bool> stop{false};
  const v1::SearchReport r = resumed.Run(stop);
  EXPECT_EQ(r.end_reason(), "candidates");
  EXPECT_EQ(r.proposed(), 12);
  std::set<std::string> once(sim.proposed_labels.begin(), sim.proposed_labels.end());
  EXPECT_EQ(once.size(), sim.proposed_labels.size()) << "a point was proposed twice";
  EXPECT_EQ(once.count(list[2].label), 0u);
}

TEST(SearchLoop, BadBudgetsAreRefusedNamingTheField) {
  SimulatedDevice sim(1);
  for (auto [budget, candidates, batch, field] :
       {std::tuple{0, 0, 0, "budget_seconds"}, std::tuple{-5, 0, 0, "budget_seconds"},
        std::tuple{86401, 0, 0, "budget_seconds"}, std::tuple{60, -1, 0, "max_candidates"},
        std::tuple{60, 2001, 0, "max_candidates"}, std::tuple{60, 0, 65, "batch"}}) {
    v1::StartSearchRequest req;
    req.set_contract_id("k1");
    req.set_budget_seconds(budget);
    req.set_max_candidates(candidates);
    req.set_batch(batch);
    auto bad = search::CheckStartRequest(req);
    ASSERT_TRUE(bad.has_value()) << field;
    EXPECT_EQ(bad->field, field);
    EXPECT_EQ(search::NewSearch(req, "s1", sim).status().code(),
              absl::StatusCode::kInvalidArgument);
  }
  v1::StartSearchRequest req;
  req.set_contract_id("nope");
  req.set_budget_seconds(60);
  EXPECT_EQ(search::NewSearch(req, "s1", sim).status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(sim.propose_calls, 0);
}

}  // namespace
}  // namespace cake
