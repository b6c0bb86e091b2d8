#include "ledger.h"

#include <filesystem>

#include "absl/strings/str_cat.h"
#include "base/digest.h"
#include "base/status_macros.h"
#include "connection.h"
#include "google/protobuf/unknown_field_set.h"
#include "sqlite.h"

namespace cake::ledger {
namespace {

constexpr const char* kSchemaV1 = R"sql(
CREATE TABLE contracts (
  id TEXT PRIMARY KEY, name TEXT NOT NULL, body BLOB NOT NULL, created_ms INTEGER NOT NULL);
CREATE TRIGGER contracts_immutable_update BEFORE UPDATE ON contracts
  BEGIN SELECT RAISE(ABORT, 'contracts are immutable: create a new contract'); END;
CREATE TRIGGER contracts_immutable_delete BEFORE DELETE ON contracts
  BEGIN SELECT RAISE(ABORT, 'contracts are immutable: create a new contract'); END;
CREATE TABLE incumbents (
  contract_id TEXT PRIMARY KEY REFERENCES contracts(id), candidate_id TEXT NOT NULL,
  since_ms INTEGER NOT NULL);
CREATE TABLE promotions (
  id INTEGER PRIMARY KEY, contract_id TEXT NOT NULL REFERENCES contracts(id),
  candidate_id TEXT NOT NULL, previous_id TEXT, reason TEXT NOT NULL, created_ms INTEGER NOT NULL);
CREATE TABLE candidates (
  id TEXT PRIMARY KEY, seq INTEGER NOT NULL UNIQUE, contract_id TEXT NOT NULL REFERENCES contracts(id),
  schedule_hash TEXT NOT NULL, schedule_text TEXT NOT NULL, state INTEGER NOT NULL,
  rejected_at INTEGER NOT NULL DEFAULT 0, status_note TEXT NOT NULL DEFAULT '',
  proposer TEXT NOT NULL, idempotency_key TEXT UNIQUE, created_ms INTEGER NOT NULL,
  UNIQUE(contract_id, schedule_hash));
CREATE TABLE hypotheses (candidate_id TEXT PRIMARY KEY REFERENCES candidates(id), body BLOB NOT NULL);
CREATE TABLE jobs (
  id INTEGER PRIMARY KEY AUTOINCREMENT, candidate_id TEXT NOT NULL, kind TEXT NOT NULL,
  state TEXT NOT NULL, attempt INTEGER NOT NULL DEFAULT 0, boot_id TEXT, request BLOB NOT NULL,
  error TEXT NOT NULL DEFAULT '', worker_pid INTEGER NOT NULL DEFAULT 0,
  created_ms INTEGER NOT NULL, started_ms INTEGER NOT NULL DEFAULT 0,
  finished_ms INTEGER NOT NULL DEFAULT 0);
CREATE INDEX jobs_by_state ON jobs(state, id);
CREATE TABLE job_attempts (
  job_id INTEGER NOT NULL REFERENCES jobs(id), attempt INTEGER NOT NULL, outcome TEXT NOT NULL,
  error TEXT NOT NULL, finished_ms INTEGER NOT NULL, UNIQUE(job_id, attempt));
CREATE TABLE analysis_reports (
  candidate_id TEXT NOT NULL REFERENCES candidates(id), target TEXT NOT NULL,
  verdict INTEGER NOT NULL, body BLOB NOT NULL, PRIMARY KEY(candidate_id, target));
CREATE TABLE artifacts (
  key TEXT PRIMARY KEY, dir TEXT NOT NULL, cubin_sha256 TEXT NOT NULL, target TEXT NOT NULL);
CREATE TABLE receipts (
  candidate_id TEXT NOT NULL REFERENCES candidates(id), target TEXT NOT NULL,
  outcome INTEGER NOT NULL, artifact_key TEXT NOT NULL, body BLOB NOT NULL,
  PRIMARY KEY(candidate_id, target));
CREATE TABLE validations (
  id INTEGER PRIMARY KEY, candidate_id TEXT NOT NULL REFERENCES candidates(id),
  job_id INTEGER NOT NULL, passed INTEGER NOT NULL, body BLOB NOT NULL, created_ms INTEGER NOT NULL);
CREATE TABLE measurements (
  id INTEGER PRIMARY KEY, candidate_id TEXT NOT NULL REFERENCES candidates(id),
  incumbent_id TEXT NOT NULL, run INTEGER NOT NULL, verdict INTEGER NOT NULL, body BLOB NOT NULL,
  created_ms INTEGER NOT NULL);
CREATE TABLE measurement_samples (
  measurement_id INTEGER NOT NULL REFERENCES measurements(id), row TEXT NOT NULL,
  pair INTEGER NOT NULL, challenger_first INTEGER NOT NULL, incumbent_us REAL NOT NULL,
  challenger_us REAL NOT NULL);
CREATE TABLE events (
  id INTEGER PRIMARY KEY AUTOINCREMENT, created_ms INTEGER NOT NULL, kind TEXT NOT NULL,
  candidate_id TEXT NOT NULL DEFAULT '', job_id INTEGER NOT NULL DEFAULT 0, message TEXT NOT NULL);
)sql";

// v2: evidence records per kind, measurement validity, the protocol's per-sample context.
constexpr const char* kSchemaV2 = R"sql(
CREATE TABLE evidence_records (
  id INTEGER PRIMARY KEY, candidate_id TEXT NOT NULL REFERENCES candidates(id),
  job_id INTEGER NOT NULL, kind TEXT NOT NULL, tool TEXT NOT NULL DEFAULT '',
  status TEXT NOT NULL, body BLOB NOT NULL, created_ms INTEGER NOT NULL);
CREATE INDEX evidence_by_candidate ON evidence_records(candidate_id, kind, tool, id);
ALTER TABLE measurements ADD COLUMN invalid INTEGER NOT NULL DEFAULT 0;
ALTER TABLE measurements ADD COLUMN invalid_reason TEXT NOT NULL DEFAULT '';
ALTER TABLE measurement_samples ADD COLUMN mode TEXT NOT NULL DEFAULT 'eager';
ALTER TABLE measurement_samples ADD COLUMN cache TEXT NOT NULL DEFAULT '';
ALTER TABLE measurement_samples ADD COLUMN discarded INTEGER NOT NULL DEFAULT 0;
ALTER TABLE measurement_samples ADD COLUMN incumbent_sm_mhz REAL;
ALTER TABLE measurement_samples ADD COLUMN challenger_sm_mhz REAL;
ALTER TABLE measurement_samples ADD COLUMN temperature_c REAL;
ALTER TABLE measurement_samples ADD COLUMN power_w REAL;
ALTER TABLE measurement_samples ADD COLUMN incumbent_span_us REAL;
ALTER TABLE measurement_samples ADD COLUMN challenger_span_us REAL;
)sql";

// v3: contract digests, Measure idempotency keys, the start-up write probe.
constexpr const char* kSchemaV3 = R"sql(
ALTER TABLE contracts ADD COLUMN body_sha256 TEXT NOT NULL DEFAULT '';
CREATE TABLE measure_requests (
  idempotency_key TEXT PRIMARY KEY, candidate_id TEXT NOT NULL REFERENCES candidates(id),
  job_id INTEGER NOT NULL, created_ms INTEGER NOT NULL);
CREATE TABLE write_probe (id INTEGER PRIMARY KEY, at_ms INTEGER NOT NULL);
)sql";

// v5: branches (lines of hypotheses), the key that matches a repeated hypothesis, and a
// candidate's events by candidate (Inspect).
constexpr const char* kSchemaV5 = R"sql(
ALTER TABLE candidates ADD COLUMN branch TEXT NOT NULL DEFAULT 'main';
ALTER TABLE candidates ADD COLUMN hypothesis_key TEXT NOT NULL DEFAULT '';
CREATE INDEX candidates_by_branch ON candidates(contract_id, branch, seq);
CREATE INDEX candidates_by_hypothesis ON candidates(contract_id, hypothesis_key);
CREATE INDEX events_by_candidate ON events(candidate_id, id);
)sql";

// v6: portfolio candidates' dispatcher manifests, one per target.
constexpr const char* kSchemaV6 = R"sql(
CREATE TABLE portfolio_manifests (
  candidate_id TEXT NOT NULL REFERENCES candidates(id), target TEXT NOT NULL, body BLOB NOT NULL,
  PRIMARY KEY(candidate_id, target));
)sql";

// v7: jobs the machine failed are retried later (not_before_ms) a bounded number of times
// (infra_failures, reset when an operator or a new proposal re-queues a BLOCKED job).
constexpr const char* kSchemaV7 = R"sql(
ALTER TABLE jobs ADD COLUMN not_before_ms INTEGER NOT NULL DEFAULT 0;
ALTER TABLE jobs ADD COLUMN infra_failures INTEGER NOT NULL DEFAULT 0;
)sql";

// Searches (their progress as one serialized cake.v1.SearchReport) and every refit of the cost
// model they made (ledger/searches.h).
constexpr const char* kSchemaV8 = R"sql(
CREATE TABLE searches(
  id TEXT PRIMARY KEY,
  contract_id TEXT NOT NULL REFERENCES contracts(id),
  state TEXT NOT NULL CHECK (state IN ('running', 'finished', 'failed')),
  created_ms INTEGER NOT NULL,
  updated_ms INTEGER NOT NULL,
  deadline_ms INTEGER NOT NULL,
  body BLOB NOT NULL);
CREATE INDEX searches_by_state ON searches(state, created_ms);
CREATE TABLE calibrations(
  id INTEGER PRIMARY KEY,
  created_ms INTEGER NOT NULL,
  device TEXT NOT NULL,
  operation TEXT NOT NULL,
  contract_id TEXT NOT NULL,
  search_id TEXT NOT NULL,
  samples INTEGER NOT NULL,
  held_out_tau REAL NOT NULL,
  body BLOB NOT NULL);
CREATE INDEX calibrations_by_device ON calibrations(device, operation, id);
)sql";

// v9: the device whose lane ran a job's latest attempt, and each attempt's ("" for CPU jobs and
// rows written before v9).
constexpr const char* kSchemaV9 = R"sql(
ALTER TABLE jobs ADD COLUMN device TEXT NOT NULL DEFAULT '';
ALTER TABLE job_attempts ADD COLUMN device TEXT NOT NULL DEFAULT '';
)sql";

constexpr const char* kContractTriggers = R"sql(
CREATE TRIGGER contracts_immutable_update BEFORE UPDATE ON contracts
  BEGIN SELECT RAISE(ABORT, 'contracts are immutable: create a new contract'); END;
CREATE TRIGGER contracts_immutable_delete BEFORE DELETE ON contracts
  BEGIN SELECT RAISE(ABORT, 'contracts are immutable: create a new contract'); END;
)sql";

absl::StatusOr<int64_t> PragmaInt(Db& db, const char* pragma) {
  CAKE_ASSIGN_OR_RETURN(Stmt s, db.Prepare(absl::StrCat("PRAGMA ", pragma)));
  if (!s.Step()) return s.status().ok() ? absl::InternalError("empty pragma") : s.status();
  return s.Int(0);
}
}  // namespace

Ledger::Ledger() = default;
Ledger::~Ledger() = default;
Db& Ledger::db() { return conn_->db(); }

absl::StatusOr<std::unique_ptr<Ledger>> Ledger::Open(const std::string& path) {
  std::unique_ptr<Ledger> l(new Ledger());
  l->path_ = path;
  std::error_code ec;
  const auto kind = std::filesystem::status(path, ec).type();
  if (kind == std::filesystem::file_type::directory)
    return absl::FailedPreconditionError(
        absl::StrCat(path,
                     " is a directory, not a ledger file; move it away or choose another "
                     "state directory"));
  if (kind != std::filesystem::file_type::not_found && kind != std::filesystem::file_type::regular)
    return absl::FailedPreconditionError(
        absl::StrCat(path, " is not a regular file; refusing to use it as the ledger"));
  const bool existed = kind == std::filesystem::file_type::regular &&
                       std::filesystem::file_size(path, ec) > 0 && !ec;
  CAKE_ASSIGN_OR_RETURN(std::unique_ptr<Db> opened, Db::Open(path));
  l->conn_ = std::make_unique<Connection>(std::move(opened));
  l->events_ = std::make_unique<EventLog>(l->conn_.get());
  l->contracts_ = std::make_unique<ContractStore>(l->conn_.get(), l->events_.get());
  l->evidence_ = std::make_unique<EvidenceStore>(l->conn_.get());
  l->candidates_ =
      std::make_unique<CandidateStore>(l->conn_.get(), l->events_.get(), l->evidence_.get());
  l->jobs_ = std::make_unique<JobQueue>(l->conn_.get(), l->events_.get());
  l->searches_ = std::make_unique<SearchStore>(l->conn_.get());
  Db& db = l->conn_->db();
  // A ledger this process cannot write is refused now, not at the first proposal.
  if (sqlite3_db_readonly(db.raw(), "main") == 1)
    return absl::FailedPreconditionError(absl::StrCat(
        path,
        " is read-only for this process (file mode, owner or a read-only mount); caked "
        "needs to write its ledger"));
  if (existed) {
    // Read-only checks first: a foreign or damaged file is never written to.
    auto app = PragmaInt(db, "application_id");
    if (!app.ok()) {
      if (app.status().code() == absl::StatusCode::kDataLoss)
        return absl::FailedPreconditionError(absl::StrCat(path, " is not a SQLite database (",
                                                          app.status().message(),
                                                          "); refusing to use or overwrite it"));
      return absl::Status(
          app.status().code(),
          absl::StrCat("cannot read ", path, ": ", app.status().message(), db.SystemError()));
    }
    auto version = PragmaInt(db, "user_version");
    if (!version.ok()) return version.status();
    if (*app != kApplicationId)
      return absl::FailedPreconditionError(
          absl::StrCat(path, " is a SQLite file of another application (application_id ", *app,
                       ", expected ", kApplicationId, "); refusing to use or overwrite it"));
    if (*version > kSchemaVersion)
      return absl::FailedPreconditionError(
          absl::StrCat(path, " has ledger schema version ", *version, ", newer than this caked (",
                       kSchemaVersion, "); refusing to downgrade it"));
    CAKE_ASSIGN_OR_RETURN(Stmt qc, db.Prepare("PRAGMA quick_check"));
    if (!qc.Step() || qc.Text(0) != "ok")
      return absl::DataLossError(
          absl::StrCat(path, " failed quick_check: ",
                       qc.status().ok() ? qc.Text(0) : std::string(qc.status().message())));
  }
  // Each step names the ledger: a full disk or a read-only mount says so, not "not a database".
  for (const char* pragma :
       {"PRAGMA journal_mode=WAL", "PRAGMA synchronous=FULL", "PRAGMA foreign_keys=ON"})
    if (absl::Status s = db.Exec(pragma); !s.ok())
      return absl::Status(s.code(),
                          absl::StrCat(path, ": ", pragma, ": ", s.message(), db.SystemError()));
  if (absl::Status s = l->Migrate(); !s.ok())
    return absl::Status(s.code(),
                        absl::StrCat(path, ": migration: ", s.message(), db.SystemError()));
  // A write the disk must take: a full disk refuses the start instead of the first proposal.
  if (absl::Status s = l->ProbeWrite(); !s.ok())
    return absl::Status(s.code(),
                        absl::StrCat(path, ": write probe: ", s.message(), db.SystemError()));
  return l;
}

absl::Status Ledger::Migrate() {
  CAKE_ASSIGN_OR_RETURN(int64_t version, PragmaInt(db(), "user_version"));
  if (version == kSchemaVersion) return absl::OkStatus();
  CAKE_ASSIGN_OR_RETURN(Transaction tx, Transaction::Begin(db()));
  if (version == 0) {
    CAKE_RETURN_IF_ERROR(db().Exec(kSchemaV1));
    CAKE_RETURN_IF_ERROR(db().Exec(absl::StrCat("PRAGMA application_id=", kApplicationId)));
  }
  if (version < 2) CAKE_RETURN_IF_ERROR(db().Exec(kSchemaV2));
  if (version < 3) CAKE_RETURN_IF_ERROR(MigrateToV3());
  if (version < 4) CAKE_RETURN_IF_ERROR(MigrateToV4());
  if (version < 5) CAKE_RETURN_IF_ERROR(MigrateToV5());
  if (version < 6) CAKE_RETURN_IF_ERROR(db().Exec(kSchemaV6));
  if (version < 7) CAKE_RETURN_IF_ERROR(db().Exec(kSchemaV7));
  if (version < 8) CAKE_RETURN_IF_ERROR(db().Exec(kSchemaV8));
  if (version < 9) CAKE_RETURN_IF_ERROR(db().Exec(kSchemaV9));
  // Later versions add `if (version < N)` steps here, each in this transaction.
  CAKE_RETURN_IF_ERROR(db().Exec(absl::StrCat("PRAGMA user_version=", kSchemaVersion)));
  return tx.Commit();
}

absl::Status Ledger::MigrateToV3() {
  CAKE_RETURN_IF_ERROR(db().Exec(kSchemaV3));
  // Existing contracts get the digest of the body they have now; the immutability triggers
  // step aside for that one update, inside the migration's transaction.
  CAKE_RETURN_IF_ERROR(
      db().Exec("DROP TRIGGER contracts_immutable_update; "
                "DROP TRIGGER contracts_immutable_delete;"));
  std::vector<std::pair<std::string, std::string>> rows;
  {
    CAKE_ASSIGN_OR_RETURN(Stmt s, db().Prepare("SELECT id, body FROM contracts"));
    while (s.Step()) rows.emplace_back(s.Text(0), s.Blob(1));
    CAKE_RETURN_IF_ERROR(s.status());
  }
  for (const auto& [id, body] : rows) {
    CAKE_ASSIGN_OR_RETURN(Stmt up,
                          db().Prepare("UPDATE contracts SET body_sha256 = ? WHERE id = ?"));
    CAKE_RETURN_IF_ERROR(up.Bind(1, base::Sha256Hex(body)).Bind(2, id).Run());
  }
  return db().Exec(kContractTriggers);
}

namespace {

namespace pb = google::protobuf;

// Before v4 the only workload's shapes sat in the messages themselves: Row.shape and
// ValidationCase.shape (field 2, a message {1: m, 2: n, 3: k}) and RowCheck.m/n/k (fields 2-4).
// They are now unknown fields; each becomes arm 1 of ProblemShape (the first workload's arm).
pb::Message* LegacyArm(contract::ProblemShape* p) {
  const pb::FieldDescriptor* arm = p->GetDescriptor()->FindFieldByNumber(1);
  return p->GetReflection()->MutableMessage(p, arm);
}

bool UpgradeShapeHolder(pb::Message* m, contract::ProblemShape* problem) {
  pb::UnknownFieldSet* unknown = m->GetReflection()->MutableUnknownFields(m);
  bool changed = false;
  for (int i = unknown->field_count() - 1; i >= 0; --i) {
    const pb::UnknownField& f = unknown->field(i);
    if (f.number() == 2 && f.type() == pb::UnknownField::TYPE_LENGTH_DELIMITED) {
      changed |= LegacyArm(problem)->ParseFromString(f.length_delimited());
      unknown->DeleteSubrange(i, 1);
    }
  }
  return changed;
}

bool UpgradeRowCheck(evidence::RowCheck* rc) {
  pb::UnknownFieldSet* unknown = rc->GetReflection()->MutableUnknownFields(rc);
  pb::Message* arm = nullptr;
  for (int i = unknown->field_count() - 1; i >= 0; --i) {
    const pb::UnknownField& f = unknown->field(i);
    if (f.number() < 2 || f.number() > 4 || f.type() != pb::UnknownField::TYPE_VARINT) continue;
    if (arm == nullptr) arm = LegacyArm(rc->mutable_problem());
    // m, n, k were fields 2, 3, 4; they are fields 1, 2, 3 of the arm.
    const pb::FieldDescriptor* d = arm->GetDescriptor()->FindFieldByNumber(f.number() - 1);
    if (d != nullptr) arm->GetReflection()->SetInt32(arm, d, static_cast<int32_t>(f.varint()));
    unknown->DeleteSubrange(i, 1);
  }
  return arm != nullptr;
}

bool UpgradeContract(contract::Contract* c) {
  bool changed = false;
  for (contract::Row& r : *c->mutable_rows())
    changed |= UpgradeShapeHolder(&r, r.mutable_problem());
  for (contract::ValidationCase& vc : *c->mutable_validation()->mutable_cases())
    changed |= UpgradeShapeHolder(&vc, vc.mutable_problem());
  return changed;
}

bool UpgradeRecord(evidence::EvidenceRecord* r) {
  bool changed = false;
  for (evidence::RowCheck& rc : *r->mutable_cases()) changed |= UpgradeRowCheck(&rc);
  return changed;
}

bool UpgradeValidation(evidence::Validation* v) {
  bool changed = false;
  for (evidence::RowCheck& rc : *v->mutable_rows()) changed |= UpgradeRowCheck(&rc);
  for (evidence::EvidenceRecord& r : *v->mutable_records()) changed |= UpgradeRecord(&r);
  return changed;
}

}  // namespace

absl::Status Ledger::MigrateToV4() {
  // Rewrites every stored body that holds a shape; a contract's digest follows its new body.
  // Its id does not change (ids are names, not digests of the current encoding).
  CAKE_RETURN_IF_ERROR(
      db().Exec("DROP TRIGGER IF EXISTS contracts_immutable_update; "
                "DROP TRIGGER IF EXISTS contracts_immutable_delete;"));
  auto rewrite = [&](const char* table, const char* key,
                     const std::function<absl::StatusOr<std::string>(const std::string&)>& fn)
      -> absl::Status {
    std::vector<std::pair<std::string, std::string>> rows;
    {
      CAKE_ASSIGN_OR_RETURN(Stmt s,
                            db().Prepare(absl::StrCat("SELECT ", key, ", body FROM ", table)));
      while (s.Step()) rows.emplace_back(s.Text(0), s.Blob(1));
      CAKE_RETURN_IF_ERROR(s.status());
    }
    for (const auto& [k, body] : rows) {
      CAKE_ASSIGN_OR_RETURN(std::string upgraded, fn(body));
      if (upgraded.empty()) continue;
      const bool contracts = std::string(table) == "contracts";
      CAKE_ASSIGN_OR_RETURN(Stmt up, db().Prepare(absl::StrCat("UPDATE ", table, " SET body = ?",
                                                               contracts ? ", body_sha256 = ?" : "",
                                                               " WHERE ", key, " = ?")));
      up.BindBlob(1, upgraded);
      if (contracts) {
        up.Bind(2, base::Sha256Hex(upgraded)).Bind(3, k);
      } else {
        up.Bind(2, k);
      }
      CAKE_RETURN_IF_ERROR(up.Run());
    }
    return absl::OkStatus();
  };
  CAKE_RETURN_IF_ERROR(
      rewrite("contracts", "id", [](const std::string& body) -> absl::StatusOr<std::string> {
        contract::Contract c;
        if (!c.ParseFromString(body)) return absl::DataLossError("a contract body does not parse");
        return UpgradeContract(&c) ? c.SerializeAsString() : std::string();
      }));
  CAKE_RETURN_IF_ERROR(
      rewrite("validations", "id", [](const std::string& body) -> absl::StatusOr<std::string> {
        evidence::Validation v;
        if (!v.ParseFromString(body))
          return absl::DataLossError("a validation body does not parse");
        return UpgradeValidation(&v) ? v.SerializeAsString() : std::string();
      }));
  CAKE_RETURN_IF_ERROR(
      rewrite("evidence_records", "id", [](const std::string& body) -> absl::StatusOr<std::string> {
        evidence::EvidenceRecord r;
        if (!r.ParseFromString(body)) return absl::DataLossError("an evidence body does not parse");
        return UpgradeRecord(&r) ? r.SerializeAsString() : std::string();
      }));
  return db().Exec(kContractTriggers);
}

absl::Status Ledger::ProbeWrite() {
  return conn_->Atomically([&]() -> absl::Status {
    CAKE_ASSIGN_OR_RETURN(
        Stmt s, db().Prepare("INSERT OR REPLACE INTO write_probe(id, at_ms) VALUES (1, ?)"));
    return s.Bind(1, NowMs()).Run();
  });
}

absl::Status Ledger::Atomically(const std::function<absl::Status()>& fn) {
  return conn_->Atomically(fn);
}

absl::Status Ledger::MigrateToV5() {
  CAKE_RETURN_IF_ERROR(db().Exec(kSchemaV5));
  // Every earlier candidate is on "main"; its hypothesis gets its key so a repeat is matched.
  std::vector<std::pair<std::string, std::string>> keys;
  {
    CAKE_ASSIGN_OR_RETURN(Stmt s, db().Prepare("SELECT candidate_id, body FROM hypotheses"));
    while (s.Step()) {
      evidence::Hypothesis h;
      if (!h.ParseFromString(s.Blob(1))) return absl::DataLossError("a hypothesis does not parse");
      keys.emplace_back(s.Text(0), HypothesisKey(h));
    }
    CAKE_RETURN_IF_ERROR(s.status());
  }
  for (const auto& [id, key] : keys) {
    CAKE_ASSIGN_OR_RETURN(Stmt up,
                          db().Prepare("UPDATE candidates SET hypothesis_key = ? WHERE id = ?"));
    CAKE_RETURN_IF_ERROR(up.Bind(1, key).Bind(2, id).Run());
  }
  return absl::OkStatus();
}

}  // namespace cake::ledger
