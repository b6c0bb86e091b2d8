// The event log: what happened to candidates and jobs, in order (events table).
// Thread-safety: safe from any thread.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"

namespace cake::ledger {

class Connection;

struct Event {
  int64_t id = 0;
  int64_t created_ms = 0;
  std::string kind, candidate_id, message;
  int64_t job_id = 0;
};

class EventLog {
 public:
  explicit EventLog(Connection* conn) : conn_(conn) {}
  absl::Status Add(const std::string& kind, const std::string& candidate, int64_t job_id,
                   const std::string& message);
  // Up to `limit` events with id > after_id, oldest first.
  absl::StatusOr<std::vector<Event>> After(int64_t after_id, int limit);
  // The candidate's newest `limit` events, oldest first.
  absl::StatusOr<std::vector<Event>> ForCandidate(const std::string& candidate_id, int limit);
  // Returns once an event with id > after_id may have been recorded, or after `timeout` (a
  // wake-up is a hint: the event is visible once its transaction commits).
  void WaitAfter(int64_t after_id, std::chrono::milliseconds timeout);

 private:
  Connection* conn_;
  std::mutex wait_mu_;
  std::condition_variable added_;
  int64_t last_added_ ABSL_GUARDED_BY(wait_mu_) = 0;
};

int64_t NowMs();

}  // namespace cake::ledger
