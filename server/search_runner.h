// Runs the daemon's searches (search/search.h), one thread each, and is their SearchBackend: it
// reaches the orchestrator through its public methods (Propose with an agent's rights, recorded
// as proposer "search"; ListCandidates; GetCandidate) and the ledger's search rows. At start it
// resumes every search a previous run left running, or ends those whose deadline passed.
//
// Thread-safety: all public methods are thread-safe.
#pragma once

#include <atomic>
#include <map>
#include <memory>
#include <string>
#include <thread>

#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "cake/service.pb.h"
#include "ledger/ledger.h"
#include "orchestrator.h"

namespace cake::server {

class SearchRunner {
 public:
  SearchRunner(Orchestrator* orch, ledger::Ledger* ledger) : orch_(orch), ledger_(ledger) {}
  ~SearchRunner();

  // Resumes the running searches of the ledger (call after Orchestrator::Start).
  absl::Status Resume();
  // Stops every search thread; their reports stay "running" for the next start.
  void Stop();

  // The new search's report; errors as search::NewSearch, plus FAILED_PRECONDITION when a search
  // of the contract is running.
  absl::StatusOr<v1::SearchReport> Start(const v1::StartSearchRequest& req);
  absl::StatusOr<v1::SearchReport> Get(const std::string& search_id);

 private:
  void Launch(v1::SearchReport report) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  Orchestrator* orch_;
  ledger::Ledger* ledger_;
  std::atomic<bool> stop_{false};
  absl::Mutex mu_;
  std::map<std::string, std::thread> threads_ ABSL_GUARDED_BY(mu_);              // by search id
  std::map<std::string, std::string> running_by_contract_ ABSL_GUARDED_BY(mu_);  // -> search id
};

}  // namespace cake::server
