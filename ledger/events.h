// The event log: what happened to candidates and jobs, in order (events table).
// Thread-safety: safe from any thread.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

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

 private:
  Connection* conn_;
};

int64_t NowMs();

}  // namespace cake::ledger
