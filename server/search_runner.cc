#include "search_runner.h"

#include <random>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "base/status_macros.h"
#include "error_detail.h"
#include "search/search.h"
#include "spdlog/spdlog.h"

namespace cake::server {
namespace {

// The orchestrator and the ledger as one search sees them.
class Backend final : public search::SearchBackend {
 public:
  Backend(Orchestrator* orch, ledger::Ledger* ledger) : orch_(orch), ledger_(ledger) {}

  absl::StatusOr<contract::Contract> Contract(const std::string& id) override {
    CAKE_ASSIGN_OR_RETURN(v1::GetContractReply r, orch_->GetContract(id, Role::kAgent));
    return r.contract();
  }
  absl::StatusOr<std::string> Incumbent(const std::string& contract_id) override {
    return ledger_->contracts().Incumbent(contract_id);
  }
  absl::StatusOr<std::vector<evidence::Candidate>> Candidates(
      const std::string& contract_id) override {
    return List(contract_id);
  }
  // Read again at most every 30 s: other contracts inform the fit, they need not be current.
  absl::StatusOr<std::vector<search::ContractCandidates>> OtherContracts(
      const std::string& operation, const std::string& except) override {
    if (ledger::NowMs() - others_read_ms_ < 30000) return others_;
    CAKE_ASSIGN_OR_RETURN(std::vector<evidence::Candidate> all, List(""));
    std::map<std::string, search::ContractCandidates> by_contract;
    for (evidence::Candidate& c : all) {
      if (c.contract_id() == except) continue;
      auto it = operations_.find(c.contract_id());
      if (it == operations_.end()) {
        CAKE_ASSIGN_OR_RETURN(contract::Contract k, Contract(c.contract_id()));
        it = operations_.emplace(c.contract_id(), k).first;
      }
      if (it->second.operation() != operation) continue;
      search::ContractCandidates& entry = by_contract[c.contract_id()];
      entry.contract = it->second;
      entry.candidates.push_back(std::move(c));
    }
    others_.clear();
    for (auto& [id, entry] : by_contract) others_.push_back(std::move(entry));
    others_read_ms_ = ledger::NowMs();
    return others_;
  }
  absl::StatusOr<v1::ProposeReply> Propose(const v1::ProposeRequest& req) override {
    return orch_->Propose(req, Role::kAgent, "search");
  }
  absl::StatusOr<search::ExecutionDevice> Device(const contract::Contract& c) override {
    CAKE_ASSIGN_OR_RETURN(gpuqueue::Device d, orch_->ExecutionDeviceFor(c));
    return search::ExecutionDevice{d.name, d.sm_count};
  }
  absl::Status Save(const v1::SearchReport& report) override {
    return ledger_->searches().Update(report.search_id(), report.state(),
                                      report.SerializeAsString());
  }
  absl::Status SaveCalibration(const v1::SearchReport& report) override {
    ledger::CalibrationRow row;
    row.device = report.calibration().device();
    CAKE_ASSIGN_OR_RETURN(contract::Contract c, Contract(report.contract_id()));
    row.operation = c.operation();
    row.contract_id = report.contract_id();
    row.search_id = report.search_id();
    row.samples = report.calibration().samples();
    row.held_out_tau = report.calibration().held_out_tau();
    row.body = report.calibration().SerializeAsString();
    return ledger_->searches().AddCalibration(row);
  }
  // Returns at once when events were recorded since the last call (all of them read), else
  // waits for the next one.
  void WaitForChange(std::chrono::milliseconds timeout) override {
    bool seen = false;
    for (;;) {
      auto events = orch_->Events(last_event_, 1000);
      if (!events.ok() || events->empty()) break;
      last_event_ = events->back().id;
      seen = true;
    }
    if (!seen) orch_->WaitForEvent(last_event_, timeout);
  }
  int64_t NowMs() override { return ledger::NowMs(); }

 private:
  // Every candidate of `contract_id` ("" = of every contract), schedule texts included (lists
  // leave them out: each is read once; they never change).
  absl::StatusOr<std::vector<evidence::Candidate>> List(const std::string& contract_id) {
    std::vector<evidence::Candidate> out;
    v1::ListCandidatesRequest req;
    req.set_contract_id(contract_id);
    req.set_page_size(200);
    do {
      CAKE_ASSIGN_OR_RETURN(v1::ListCandidatesReply page, orch_->ListCandidates(req, Role::kAgent));
      for (evidence::Candidate& c : *page.mutable_candidates()) out.push_back(std::move(c));
      req.set_page_token(page.next_page_token());
    } while (!req.page_token().empty());
    for (evidence::Candidate& c : out) {
      auto it = texts_.find(c.id());
      if (it == texts_.end()) {
        CAKE_ASSIGN_OR_RETURN(evidence::Candidate full, orch_->GetCandidate(c.id(), Role::kAgent));
        it = texts_.emplace(c.id(), full.schedule_text()).first;
      }
      c.set_schedule_text(it->second);
    }
    return out;
  }

  Orchestrator* orch_;
  ledger::Ledger* ledger_;
  std::map<std::string, std::string> texts_;              // by candidate id
  std::map<std::string, contract::Contract> operations_;  // contracts by id
  std::vector<search::ContractCandidates> others_;
  int64_t others_read_ms_ = 0;
  int64_t last_event_ = 0;
};

std::string NewSearchId() {
  std::random_device rd;
  return absl::StrFormat("s-%08x%08x", rd(), rd());
}

}  // namespace

SearchRunner::~SearchRunner() { Stop(); }

void SearchRunner::Stop() {
  stop_ = true;
  std::map<std::string, std::thread> threads;
  {
    absl::MutexLock lock(&mu_);
    threads.swap(threads_);
  }
  for (auto& [id, t] : threads)
    if (t.joinable()) t.join();
}

void SearchRunner::Launch(v1::SearchReport report) {
  // Threads of ended searches are joined here (each took itself out of running_by_contract_ as
  // its last step under mu_, so none of them waits for the lock held now).
  for (auto it = threads_.begin(); it != threads_.end();) {
    bool running = false;
    for (const auto& [c, id] : running_by_contract_) running |= id == it->first;
    if (running) {
      ++it;
      continue;
    }
    if (it->second.joinable()) it->second.join();
    it = threads_.erase(it);
  }
  const std::string id = report.search_id(), contract = report.contract_id();
  running_by_contract_[contract] = id;
  threads_[id] = std::thread([this, report = std::move(report), id, contract]() mutable {
    Backend backend(orch_, ledger_);
    search::Search s(std::move(report), &backend);
    const v1::SearchReport end = s.Run(stop_);
    if (end.state() != "running")
      spdlog::info("search {} of contract {} {} ({}): {} proposed, {} measured", id, contract,
                   end.state(), end.end_reason(), end.proposed(), end.measured());
    absl::MutexLock l(&mu_);
    if (auto it = running_by_contract_.find(contract);
        it != running_by_contract_.end() && it->second == id)
      running_by_contract_.erase(it);
  });
}

absl::Status SearchRunner::Resume() {
  CAKE_ASSIGN_OR_RETURN(std::vector<ledger::SearchRow> rows, ledger_->searches().Running());
  for (const ledger::SearchRow& row : rows) {
    v1::SearchReport r;
    if (!r.ParseFromString(row.body)) {
      CAKE_RETURN_IF_ERROR(ledger_->searches().Update(row.id, "failed", row.body));
      continue;
    }
    if (ledger::NowMs() >= row.deadline_ms || !orch_->has_execution_device()) {
      r.set_state("finished");
      r.set_end_reason(orch_->has_execution_device() ? "restart after deadline"
                                                     : "restart without an execution device");
      r.set_updated_unix_ms(ledger::NowMs());
      CAKE_RETURN_IF_ERROR(ledger_->searches().Update(row.id, r.state(), r.SerializeAsString()));
      continue;
    }
    spdlog::info("search {} of contract {} resumed ({} proposed so far)", row.id, row.contract_id,
                 r.proposed());
    absl::MutexLock lock(&mu_);
    Launch(std::move(r));
  }
  return absl::OkStatus();
}

absl::StatusOr<v1::SearchReport> SearchRunner::Start(const v1::StartSearchRequest& req) {
  if (auto bad = search::CheckStartRequest(req)) return InvalidField(bad->field, bad->message);
  Backend backend(orch_, ledger_);
  const std::string id = NewSearchId();
  CAKE_ASSIGN_OR_RETURN(v1::SearchReport report, search::NewSearch(req, id, backend));
  // The check, the insert and the launch under one lock: one running search per contract.
  absl::MutexLock lock(&mu_);
  if (stop_) return absl::UnavailableError("caked is stopping");
  if (auto it = running_by_contract_.find(req.contract_id()); it != running_by_contract_.end())
    return absl::FailedPreconditionError(
        absl::StrCat("search ", it->second, " of contract ", req.contract_id(),
                     " is running: follow it with cakectl search --follow ", it->second));
  ledger::SearchRow row{id, report.contract_id(), report.state(), report.deadline_unix_ms(),
                        report.SerializeAsString()};
  CAKE_RETURN_IF_ERROR(ledger_->searches().Insert(row));
  spdlog::info(
      "search {} of contract {} started: budget {} s, at most {} proposals, {} per round, "
      "space of {} points",
      id, report.contract_id(), req.budget_seconds(), report.max_candidates(), report.batch(),
      report.space_size());
  Launch(report);
  return report;
}

absl::StatusOr<v1::SearchReport> SearchRunner::Get(const std::string& search_id) {
  CAKE_ASSIGN_OR_RETURN(ledger::SearchRow row, ledger_->searches().Get(search_id));
  v1::SearchReport r;
  if (!r.ParseFromString(row.body))
    return absl::DataLossError(
        absl::StrCat("search ", search_id, ": its stored report is corrupt"));
  return r;
}

}  // namespace cake::server
