#include "contracts.h"

#include "absl/strings/str_cat.h"
#include "base/digest.h"
#include "base/status_macros.h"
#include "connection.h"
#include "events.h"

namespace cake::ledger {
namespace {

absl::StatusOr<contract::Contract> VerifiedContract(const std::string& id, const std::string& body,
                                                    const std::string& digest) {
  if (base::Sha256Hex(body) != digest)
    return absl::DataLossError(
        absl::StrCat("contract ", id,
                     ": its stored body does not match the digest stored with it (a changed "
                     "or damaged ledger); refusing to serve it"));
  contract::Contract c;
  if (!c.ParseFromString(body))
    return absl::DataLossError(absl::StrCat("contract ", id, ": body does not parse"));
  return c;
}

}  // namespace

absl::StatusOr<bool> ContractStore::Insert(const std::string& id, const contract::Contract& c) {
  auto lock = conn_->Lock();
  const std::string body = c.SerializeAsString();
  CAKE_ASSIGN_OR_RETURN(Stmt s,
                        conn_->db().Prepare("INSERT OR IGNORE INTO contracts(id, name, body, "
                                            "created_ms, body_sha256) VALUES (?, ?, ?, ?, ?)"));
  CAKE_RETURN_IF_ERROR(s.Bind(1, id)
                           .Bind(2, c.name())
                           .BindBlob(3, body)
                           .Bind(4, NowMs())
                           .Bind(5, base::Sha256Hex(body))
                           .Run());
  return conn_->db().Changes() == 0;
}

absl::StatusOr<contract::Contract> ContractStore::Get(const std::string& id) {
  auto lock = conn_->Lock();
  CAKE_ASSIGN_OR_RETURN(
      Stmt s, conn_->db().Prepare("SELECT body, body_sha256 FROM contracts WHERE id = ?"));
  s.Bind(1, id);
  if (!s.Step()) {
    CAKE_RETURN_IF_ERROR(s.status());
    return absl::NotFoundError(absl::StrCat("no contract '", id, "'"));
  }
  return VerifiedContract(id, s.Blob(0), s.Text(1));
}

absl::StatusOr<std::vector<std::pair<std::string, contract::Contract>>> ContractStore::List(
    std::vector<std::string>* corrupt) {
  auto lock = conn_->Lock();
  CAKE_ASSIGN_OR_RETURN(
      Stmt s,
      conn_->db().Prepare("SELECT id, body, body_sha256 FROM contracts ORDER BY created_ms, id"));
  std::vector<std::pair<std::string, contract::Contract>> out;
  while (s.Step()) {
    auto c = VerifiedContract(s.Text(0), s.Blob(1), s.Text(2));
    if (c.ok()) {
      out.emplace_back(s.Text(0), *std::move(c));
    } else if (corrupt != nullptr) {
      corrupt->push_back(s.Text(0));
    }
  }
  CAKE_RETURN_IF_ERROR(s.status());
  return out;
}

absl::Status ContractStore::SetIncumbent(const std::string& contract_id,
                                         const std::string& candidate_id,
                                         const std::string& reason) {
  return conn_->Atomically([&]() -> absl::Status {
    CAKE_ASSIGN_OR_RETURN(std::string previous, Incumbent(contract_id));
    CAKE_ASSIGN_OR_RETURN(
        Stmt up, conn_->db().Prepare(
                     "INSERT INTO incumbents(contract_id, candidate_id, since_ms) VALUES (?, ?, ?) "
                     "ON CONFLICT(contract_id) DO UPDATE SET candidate_id = excluded.candidate_id, "
                     "since_ms = excluded.since_ms"));
    CAKE_RETURN_IF_ERROR(up.Bind(1, contract_id).Bind(2, candidate_id).Bind(3, NowMs()).Run());
    CAKE_ASSIGN_OR_RETURN(
        Stmt p,
        conn_->db().Prepare(
            "INSERT INTO promotions(contract_id, candidate_id, previous_id, reason, created_ms) "
            "VALUES (?, ?, ?, ?, ?)"));
    CAKE_RETURN_IF_ERROR(p.Bind(1, contract_id)
                             .Bind(2, candidate_id)
                             .Bind(3, previous)
                             .Bind(4, reason)
                             .Bind(5, NowMs())
                             .Run());
    return events_->Add(
        "promoted", candidate_id, 0,
        absl::StrCat("incumbent of ", contract_id, ": ", candidate_id,
                     previous.empty() ? "" : absl::StrCat(" (was ", previous, ")"), ": ", reason));
  });
}

absl::StatusOr<std::string> ContractStore::Incumbent(const std::string& contract_id) {
  auto lock = conn_->Lock();
  CAKE_ASSIGN_OR_RETURN(
      Stmt s, conn_->db().Prepare("SELECT candidate_id FROM incumbents WHERE contract_id = ?"));
  s.Bind(1, contract_id);
  if (s.Step()) return s.Text(0);
  CAKE_RETURN_IF_ERROR(s.status());
  return std::string();
}

absl::StatusOr<std::map<std::string, int64_t>> ContractStore::PromotionCounts() {
  auto lock = conn_->Lock();
  CAKE_ASSIGN_OR_RETURN(
      Stmt s, conn_->db().Prepare("SELECT contract_id, COUNT(*) FROM promotions GROUP BY 1"));
  std::map<std::string, int64_t> out;
  while (s.Step()) out[s.Text(0)] = s.Int(1);
  CAKE_RETURN_IF_ERROR(s.status());
  return out;
}

}  // namespace cake::ledger
