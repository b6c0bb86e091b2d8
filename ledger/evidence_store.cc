#include "evidence_store.h"

#include <cmath>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "connection.h"
#include "events.h"

namespace cake::ledger {

absl::Status EvidenceStore::PutAnalysis(const std::string& candidate,
                                        const report::AnalysisReport& r) {
  auto lock = conn_->Lock();
  CAKE_ASSIGN_OR_RETURN(
      Stmt s, conn_->db().Prepare(
                  "INSERT OR REPLACE INTO analysis_reports(candidate_id, target, verdict, body) "
                  "VALUES (?, ?, ?, ?)"));
  return s.Bind(1, candidate)
      .Bind(2, r.target())
      .Bind(3, static_cast<int64_t>(r.verdict()))
      .BindBlob(4, r.SerializeAsString())
      .Run();
}

absl::Status EvidenceStore::PutReceipt(const std::string& candidate,
                                       const report::LoweringReceipt& r) {
  return conn_->Atomically([&]() -> absl::Status {
    CAKE_ASSIGN_OR_RETURN(
        Stmt a,
        conn_->db().Prepare(
            "INSERT OR IGNORE INTO artifacts(key, dir, cubin_sha256, target) VALUES (?, ?, ?, ?)"));
    CAKE_RETURN_IF_ERROR(a.Bind(1, r.artifact_key())
                             .Bind(2, r.artifact_dir())
                             .Bind(3, r.cubin_sha256())
                             .Bind(4, r.target())
                             .Run());
    CAKE_ASSIGN_OR_RETURN(
        Stmt s,
        conn_->db().Prepare(
            "INSERT OR REPLACE INTO receipts(candidate_id, target, outcome, artifact_key, body) "
            "VALUES (?, ?, ?, ?, ?)"));
    return s.Bind(1, candidate)
        .Bind(2, r.target())
        .Bind(3, static_cast<int64_t>(r.outcome()))
        .Bind(4, r.artifact_key())
        .BindBlob(5, r.SerializeAsString())
        .Run();
  });
}

absl::StatusOr<report::LoweringReceipt> EvidenceStore::GetReceipt(const std::string& candidate,
                                                                  const std::string& target) {
  auto lock = conn_->Lock();
  CAKE_ASSIGN_OR_RETURN(
      Stmt s,
      conn_->db().Prepare("SELECT body FROM receipts WHERE candidate_id = ? AND target = ?"));
  s.Bind(1, candidate).Bind(2, target);
  if (!s.Step()) {
    CAKE_RETURN_IF_ERROR(s.status());
    return absl::NotFoundError(absl::StrCat("no ", target, " receipt for ", candidate));
  }
  report::LoweringReceipt r;
  if (!r.ParseFromString(s.Blob(0))) return absl::DataLossError("receipt does not parse");
  return r;
}

absl::Status EvidenceStore::PutManifest(const std::string& candidate,
                                        const portfolio::DispatcherManifest& manifest) {
  auto lock = conn_->Lock();
  CAKE_ASSIGN_OR_RETURN(
      Stmt s, conn_->db().Prepare("INSERT OR REPLACE INTO portfolio_manifests(candidate_id, "
                                  "target, body) VALUES (?, ?, ?)"));
  return s.Bind(1, candidate)
      .Bind(2, manifest.target())
      .BindBlob(3, manifest.SerializeAsString())
      .Run();
}

absl::StatusOr<portfolio::DispatcherManifest> EvidenceStore::GetManifest(
    const std::string& candidate, const std::string& target) {
  auto lock = conn_->Lock();
  CAKE_ASSIGN_OR_RETURN(
      Stmt s, conn_->db().Prepare(
                  "SELECT body FROM portfolio_manifests WHERE candidate_id = ? AND target = ?"));
  s.Bind(1, candidate).Bind(2, target);
  if (!s.Step()) {
    CAKE_RETURN_IF_ERROR(s.status());
    return absl::NotFoundError(absl::StrCat("no ", target, " manifest for ", candidate));
  }
  portfolio::DispatcherManifest m;
  if (!m.ParseFromString(s.Blob(0))) return absl::DataLossError("manifest does not parse");
  return m;
}

absl::StatusOr<std::vector<portfolio::DispatcherManifest>> EvidenceStore::Manifests(
    const std::string& candidate) {
  auto lock = conn_->Lock();
  CAKE_ASSIGN_OR_RETURN(
      Stmt s, conn_->db().Prepare("SELECT body FROM portfolio_manifests WHERE candidate_id = ? "
                                  "ORDER BY target"));
  s.Bind(1, candidate);
  std::vector<portfolio::DispatcherManifest> out;
  while (s.Step()) {
    if (!out.emplace_back().ParseFromString(s.Blob(0)))
      return absl::DataLossError("manifest does not parse");
  }
  CAKE_RETURN_IF_ERROR(s.status());
  return out;
}

absl::Status EvidenceStore::PutValidation(const std::string& candidate, int64_t job_id,
                                          const evidence::Validation& v) {
  auto lock = conn_->Lock();
  CAKE_ASSIGN_OR_RETURN(Stmt s,
                        conn_->db().Prepare("INSERT INTO validations(candidate_id, job_id, "
                                            "passed, body, created_ms) VALUES (?,?,?,?,?)"));
  return s.Bind(1, candidate)
      .Bind(2, job_id)
      .Bind(3, v.passed() ? 1 : 0)
      .BindBlob(4, v.SerializeAsString())
      .Bind(5, NowMs())
      .Run();
}

absl::Status EvidenceStore::PutMeasurement(const std::string& candidate,
                                           const evidence::Measurement& m) {
  return conn_->Atomically([&]() -> absl::Status {
    CAKE_ASSIGN_OR_RETURN(
        Stmt s,
        conn_->db().Prepare("INSERT INTO measurements(candidate_id, incumbent_id, run, verdict, "
                            "body, created_ms, invalid, invalid_reason) VALUES (?,?,?,?,?,?,?,?)"));
    CAKE_RETURN_IF_ERROR(s.Bind(1, candidate)
                             .Bind(2, m.incumbent())
                             .Bind(3, m.run())
                             .Bind(4, static_cast<int64_t>(m.verdict()))
                             .BindBlob(5, m.SerializeAsString())
                             .Bind(6, NowMs())
                             .Bind(7, m.invalid() ? 1 : 0)
                             .Bind(8, m.invalid_reason())
                             .Run());
    const int64_t mid = conn_->db().LastInsertId();
    // Every raw sample, in order, with its clocks, spans and whether the verdict kept it.
    CAKE_ASSIGN_OR_RETURN(
        Stmt smp,
        conn_->db().Prepare(
            "INSERT INTO measurement_samples(measurement_id, row, pair, challenger_first, "
            "incumbent_us, challenger_us, mode, cache, discarded, incumbent_sm_mhz, "
            "challenger_sm_mhz, temperature_c, power_w, incumbent_span_us, "
            "challenger_span_us) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)"));
    auto at = [](const auto& field, int i) -> double {
      return i < field.size() ? double(field.Get(i)) : std::nan("");
    };
    for (const evidence::RowTiming& row : m.rows())
      for (int i = 0; i < row.incumbent_us_size() && i < row.challenger_us_size(); ++i) {
        smp.Reset();
        smp.Bind(1, mid)
            .Bind(2, row.row())
            .Bind(3, i)
            .Bind(4, i < row.challenger_first_size() && row.challenger_first(i) ? 1 : 0)
            .BindDouble(5, row.incumbent_us(i))
            .BindDouble(6, row.challenger_us(i))
            .Bind(7, row.mode().empty() ? "eager" : row.mode())
            .Bind(8, row.cache())
            .Bind(9, i < row.discarded_size() && row.discarded(i) ? 1 : 0);
        const double extra[] = {at(row.incumbent_sm_mhz(), i),  at(row.challenger_sm_mhz(), i),
                                at(row.temperature_c(), i),     at(row.power_w(), i),
                                at(row.incumbent_span_us(), i), at(row.challenger_span_us(), i)};
        for (int c = 0; c < 6; ++c)
          std::isfinite(extra[c]) ? smp.BindDouble(10 + c, extra[c]) : smp.BindNull(10 + c);
        CAKE_RETURN_IF_ERROR(smp.Run());
      }
    return absl::OkStatus();
  });
}

absl::Status EvidenceStore::PutRecord(const std::string& candidate, int64_t job_id,
                                      const evidence::EvidenceRecord& r) {
  auto lock = conn_->Lock();
  evidence::EvidenceRecord stored = r;
  stored.set_job_id(job_id);
  if (stored.created_unix_ms() == 0) stored.set_created_unix_ms(NowMs());
  CAKE_ASSIGN_OR_RETURN(
      Stmt s,
      conn_->db().Prepare("INSERT INTO evidence_records(candidate_id, job_id, kind, tool, status, "
                          "body, created_ms) VALUES (?,?,?,?,?,?,?)"));
  return s.Bind(1, candidate)
      .Bind(2, job_id)
      .Bind(3, evidence::EvidenceKind_Name(r.kind()))
      .Bind(4, r.tool())
      .Bind(5, evidence::EvidenceStatus_Name(r.status()))
      .BindBlob(6, stored.SerializeAsString())
      .Bind(7, stored.created_unix_ms())
      .Run();
}

absl::StatusOr<std::vector<evidence::EvidenceRecord>> EvidenceStore::LatestRecords(
    const std::string& candidate) {
  auto lock = conn_->Lock();
  CAKE_ASSIGN_OR_RETURN(
      Stmt s,
      conn_->db().Prepare("SELECT body FROM evidence_records WHERE id IN (SELECT MAX(id) FROM "
                          "evidence_records WHERE candidate_id = ? GROUP BY kind, tool) ORDER BY "
                          "kind, tool"));
  s.Bind(1, candidate);
  std::vector<evidence::EvidenceRecord> out;
  while (s.Step()) {
    evidence::EvidenceRecord r;
    if (!r.ParseFromString(s.Blob(0))) return absl::DataLossError("evidence record does not parse");
    out.push_back(std::move(r));
  }
  CAKE_RETURN_IF_ERROR(s.status());
  return out;
}

}  // namespace cake::ledger
