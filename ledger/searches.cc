#include "searches.h"

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "connection.h"
#include "events.h"

namespace cake::ledger {

absl::Status SearchStore::Insert(const SearchRow& row) {
  auto lock = conn_->Lock();
  CAKE_ASSIGN_OR_RETURN(Stmt s, conn_->db().Prepare("INSERT INTO searches(id, contract_id, state, "
                                                    "created_ms, updated_ms, deadline_ms, body) "
                                                    "VALUES (?,?,?,?,?,?,?)"));
  const int64_t now = NowMs();
  return s.Bind(1, row.id)
      .Bind(2, row.contract_id)
      .Bind(3, row.state)
      .Bind(4, now)
      .Bind(5, now)
      .Bind(6, row.deadline_ms)
      .BindBlob(7, row.body)
      .Run();
}

absl::Status SearchStore::Update(const std::string& id, const std::string& state,
                                 const std::string& body) {
  auto lock = conn_->Lock();
  CAKE_ASSIGN_OR_RETURN(
      Stmt s,
      conn_->db().Prepare("UPDATE searches SET state = ?, body = ?, updated_ms = ? WHERE id = ?"));
  CAKE_RETURN_IF_ERROR(s.Bind(1, state).BindBlob(2, body).Bind(3, NowMs()).Bind(4, id).Run());
  if (conn_->db().Changes() == 0) return absl::NotFoundError(absl::StrCat("no search ", id));
  return absl::OkStatus();
}

namespace {

constexpr const char* kSearchColumns =
    "SELECT id, contract_id, state, deadline_ms, body FROM searches ";

absl::StatusOr<std::vector<SearchRow>> ReadSearches(Stmt& s) {
  std::vector<SearchRow> out;
  while (s.Step()) out.push_back({s.Text(0), s.Text(1), s.Text(2), s.Int(3), s.Blob(4)});
  CAKE_RETURN_IF_ERROR(s.status());
  return out;
}

}  // namespace

absl::StatusOr<SearchRow> SearchStore::Get(const std::string& id) {
  auto lock = conn_->Lock();
  CAKE_ASSIGN_OR_RETURN(Stmt s, conn_->db().Prepare(absl::StrCat(kSearchColumns, "WHERE id = ?")));
  s.Bind(1, id);
  CAKE_ASSIGN_OR_RETURN(std::vector<SearchRow> rows, ReadSearches(s));
  if (rows.empty()) return absl::NotFoundError(absl::StrCat("no search ", id));
  return rows.front();
}

absl::StatusOr<std::vector<SearchRow>> SearchStore::Running() {
  auto lock = conn_->Lock();
  CAKE_ASSIGN_OR_RETURN(
      Stmt s, conn_->db().Prepare(
                  absl::StrCat(kSearchColumns, "WHERE state = 'running' ORDER BY created_ms")));
  return ReadSearches(s);
}

absl::Status SearchStore::AddCalibration(const CalibrationRow& row) {
  auto lock = conn_->Lock();
  CAKE_ASSIGN_OR_RETURN(
      Stmt s, conn_->db().Prepare("INSERT INTO calibrations(created_ms, device, operation, "
                                  "contract_id, search_id, samples, held_out_tau, body) "
                                  "VALUES (?,?,?,?,?,?,?,?)"));
  return s.Bind(1, NowMs())
      .Bind(2, row.device)
      .Bind(3, row.operation)
      .Bind(4, row.contract_id)
      .Bind(5, row.search_id)
      .Bind(6, row.samples)
      .BindDouble(7, row.held_out_tau)
      .BindBlob(8, row.body)
      .Run();
}

absl::StatusOr<std::vector<CalibrationRow>> SearchStore::Calibrations(const std::string& device,
                                                                      const std::string& operation,
                                                                      int limit) {
  auto lock = conn_->Lock();
  CAKE_ASSIGN_OR_RETURN(
      Stmt s, conn_->db().Prepare("SELECT device, operation, contract_id, search_id, samples, "
                                  "held_out_tau, body FROM calibrations WHERE device = ? AND "
                                  "operation = ? ORDER BY id DESC LIMIT ?"));
  s.Bind(1, device).Bind(2, operation).Bind(3, int64_t{limit});
  std::vector<CalibrationRow> out;
  while (s.Step()) {
    CalibrationRow r;
    r.device = s.Text(0);
    r.operation = s.Text(1);
    r.contract_id = s.Text(2);
    r.search_id = s.Text(3);
    r.samples = s.Int(4);
    r.held_out_tau = s.Double(5);
    r.body = s.Blob(6);
    out.push_back(std::move(r));
  }
  CAKE_RETURN_IF_ERROR(s.status());
  return out;
}

}  // namespace cake::ledger
