// Searches and the calibrations they fitted (searches, calibrations tables). A search's progress
// is one serialized cake.v1.SearchReport, rewritten as it goes; its state and deadline are
// columns so a restarted daemon finds the searches to resume without reading bodies. Every refit
// of the cost model is a new calibrations row, never updated.
// Thread-safety: safe from any thread.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace cake::ledger {

class Connection;

struct SearchRow {
  std::string id, contract_id, state;  // state: "running" | "finished" | "failed"
  int64_t deadline_ms = 0;
  std::string body;  // serialized cake.v1.SearchReport
};

struct CalibrationRow {
  std::string device, operation, contract_id, search_id;
  int64_t samples = 0;
  double held_out_tau = 0;
  std::string body;  // serialized cake.v1.SearchCalibration
};

class SearchStore {
 public:
  explicit SearchStore(Connection* conn) : conn_(conn) {}
  // ALREADY_EXISTS when the id is taken (sqlite.h's StatusFor).
  absl::Status Insert(const SearchRow& row);
  // NOT_FOUND for an unknown id.
  absl::Status Update(const std::string& id, const std::string& state, const std::string& body);
  absl::StatusOr<SearchRow> Get(const std::string& id);
  // Searches in state "running", oldest first.
  absl::StatusOr<std::vector<SearchRow>> Running();
  absl::Status AddCalibration(const CalibrationRow& row);
  // The newest calibrations of a device and operation, newest first.
  absl::StatusOr<std::vector<CalibrationRow>> Calibrations(const std::string& device,
                                                           const std::string& operation, int limit);

 private:
  Connection* conn_;
};

}  // namespace cake::ledger
