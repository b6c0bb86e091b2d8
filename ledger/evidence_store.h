// What the jobs proved about a candidate: analysis reports, lowering receipts (and the artifacts
// they name), validations, measurements with every raw sample, and evidence records (one row per
// record, never updated: the latest per kind and tool is current).
// Thread-safety: safe from any thread.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "cake/evidence.pb.h"
#include "cake/portfolio.pb.h"
#include "cake/report.pb.h"

namespace cake::ledger {

class Connection;

class EvidenceStore {
 public:
  explicit EvidenceStore(Connection* conn) : conn_(conn) {}
  absl::Status PutAnalysis(const std::string& candidate, const report::AnalysisReport& r);
  absl::Status PutReceipt(const std::string& candidate, const report::LoweringReceipt& r);
  absl::StatusOr<report::LoweringReceipt> GetReceipt(const std::string& candidate,
                                                     const std::string& target);
  // A portfolio candidate's dispatcher manifest for one target (replacing an earlier one).
  absl::Status PutManifest(const std::string& candidate,
                           const portfolio::DispatcherManifest& manifest);
  // NotFound when the candidate has none for `target` (it is not a portfolio).
  absl::StatusOr<portfolio::DispatcherManifest> GetManifest(const std::string& candidate,
                                                            const std::string& target);
  // Every target's, ordered by target.
  absl::StatusOr<std::vector<portfolio::DispatcherManifest>> Manifests(
      const std::string& candidate);
  absl::Status PutValidation(const std::string& candidate, int64_t job_id,
                             const evidence::Validation& v);
  absl::Status PutMeasurement(const std::string& candidate, const evidence::Measurement& m);
  absl::Status PutRecord(const std::string& candidate, int64_t job_id,
                         const evidence::EvidenceRecord& r);
  // The latest record of each kind and tool.
  absl::StatusOr<std::vector<evidence::EvidenceRecord>> LatestRecords(const std::string& candidate);

 private:
  Connection* conn_;
};

}  // namespace cake::ledger
