#include "ledger.h"

#include <chrono>
#include <cmath>
#include <filesystem>

#include "absl/strings/str_cat.h"
#include "base/digest.h"
#include "base/status_macros.h"
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

constexpr const char* kContractTriggers = R"sql(
CREATE TRIGGER contracts_immutable_update BEFORE UPDATE ON contracts
  BEGIN SELECT RAISE(ABORT, 'contracts are immutable: create a new contract'); END;
CREATE TRIGGER contracts_immutable_delete BEFORE DELETE ON contracts
  BEGIN SELECT RAISE(ABORT, 'contracts are immutable: create a new contract'); END;
)sql";

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

JobState ParseJobState(const std::string& s) {
  if (s == "RUNNING") return JobState::kRunning;
  if (s == "DONE") return JobState::kDone;
  if (s == "FAILED") return JobState::kFailed;
  if (s == "INTERRUPTED") return JobState::kInterrupted;
  return JobState::kQueued;
}

absl::StatusOr<int64_t> PragmaInt(Db& db, const char* pragma) {
  CAKE_ASSIGN_OR_RETURN(Stmt s, db.Prepare(absl::StrCat("PRAGMA ", pragma)));
  if (!s.Step()) return s.status().ok() ? absl::InternalError("empty pragma") : s.status();
  return s.Int(0);
}

Job ReadJob(const Stmt& s) {
  Job j;
  j.id = s.Int(0);
  j.candidate_id = s.Text(1);
  j.kind = s.Text(2);
  j.state = ParseJobState(s.Text(3));
  j.attempt = static_cast<int>(s.Int(4));
  j.request = s.Blob(5);
  j.error = s.Text(6);
  j.created_ms = s.Int(7);
  j.started_ms = s.Int(8);
  j.finished_ms = s.Int(9);
  j.worker_pid = s.Int(10);
  return j;
}

constexpr const char* kJobColumns =
    "id, candidate_id, kind, state, attempt, request, error, created_ms, started_ms, "
    "finished_ms, worker_pid";

}  // namespace

int64_t NowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

std::string JobStateName(JobState s) {
  switch (s) {
    case JobState::kQueued:
      return "QUEUED";
    case JobState::kRunning:
      return "RUNNING";
    case JobState::kDone:
      return "DONE";
    case JobState::kFailed:
      return "FAILED";
    case JobState::kInterrupted:
      return "INTERRUPTED";
  }
  return "QUEUED";
}

Ledger::~Ledger() = default;

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
  CAKE_ASSIGN_OR_RETURN(l->db_, Db::Open(path));
  Db& db = *l->db_;
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
  CAKE_ASSIGN_OR_RETURN(int64_t version, PragmaInt(*db_, "user_version"));
  if (version == kSchemaVersion) return absl::OkStatus();
  CAKE_ASSIGN_OR_RETURN(Transaction tx, Transaction::Begin(*db_));
  if (version == 0) {
    CAKE_RETURN_IF_ERROR(db_->Exec(kSchemaV1));
    CAKE_RETURN_IF_ERROR(db_->Exec(absl::StrCat("PRAGMA application_id=", kApplicationId)));
  }
  if (version < 2) CAKE_RETURN_IF_ERROR(db_->Exec(kSchemaV2));
  if (version < 3) CAKE_RETURN_IF_ERROR(MigrateToV3());
  if (version < 4) CAKE_RETURN_IF_ERROR(MigrateToV4());
  // Later versions add `if (version < N)` steps here, each in this transaction.
  CAKE_RETURN_IF_ERROR(db_->Exec(absl::StrCat("PRAGMA user_version=", kSchemaVersion)));
  return tx.Commit();
}

absl::Status Ledger::MigrateToV3() {
  CAKE_RETURN_IF_ERROR(db_->Exec(kSchemaV3));
  // Existing contracts get the digest of the body they have now; the immutability triggers
  // step aside for that one update, inside the migration's transaction.
  CAKE_RETURN_IF_ERROR(
      db_->Exec("DROP TRIGGER contracts_immutable_update; "
                "DROP TRIGGER contracts_immutable_delete;"));
  std::vector<std::pair<std::string, std::string>> rows;
  {
    CAKE_ASSIGN_OR_RETURN(Stmt s, db_->Prepare("SELECT id, body FROM contracts"));
    while (s.Step()) rows.emplace_back(s.Text(0), s.Blob(1));
    CAKE_RETURN_IF_ERROR(s.status());
  }
  for (const auto& [id, body] : rows) {
    CAKE_ASSIGN_OR_RETURN(Stmt up,
                          db_->Prepare("UPDATE contracts SET body_sha256 = ? WHERE id = ?"));
    CAKE_RETURN_IF_ERROR(up.Bind(1, base::Sha256Hex(body)).Bind(2, id).Run());
  }
  return db_->Exec(kContractTriggers);
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
      db_->Exec("DROP TRIGGER IF EXISTS contracts_immutable_update; "
                "DROP TRIGGER IF EXISTS contracts_immutable_delete;"));
  auto rewrite = [&](const char* table, const char* key,
                     const std::function<absl::StatusOr<std::string>(const std::string&)>& fn)
      -> absl::Status {
    std::vector<std::pair<std::string, std::string>> rows;
    {
      CAKE_ASSIGN_OR_RETURN(Stmt s,
                            db_->Prepare(absl::StrCat("SELECT ", key, ", body FROM ", table)));
      while (s.Step()) rows.emplace_back(s.Text(0), s.Blob(1));
      CAKE_RETURN_IF_ERROR(s.status());
    }
    for (const auto& [k, body] : rows) {
      CAKE_ASSIGN_OR_RETURN(std::string upgraded, fn(body));
      if (upgraded.empty()) continue;
      const bool contracts = std::string(table) == "contracts";
      CAKE_ASSIGN_OR_RETURN(Stmt up, db_->Prepare(absl::StrCat("UPDATE ", table, " SET body = ?",
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
  return db_->Exec(kContractTriggers);
}

absl::Status Ledger::ProbeWrite() {
  return Atomically([&]() -> absl::Status {
    CAKE_ASSIGN_OR_RETURN(
        Stmt s, db_->Prepare("INSERT OR REPLACE INTO write_probe(id, at_ms) VALUES (1, ?)"));
    return s.Bind(1, NowMs()).Run();
  });
}

absl::Status Ledger::Atomically(const std::function<absl::Status()>& fn) {
  std::lock_guard<std::recursive_mutex> lock(mu_);
  if (depth_ > 0) return fn();
  CAKE_ASSIGN_OR_RETURN(Transaction tx, Transaction::Begin(*db_));
  ++depth_;
  absl::Status s = fn();
  --depth_;
  if (!s.ok()) return s;  // tx rolls back
  return tx.Commit();
}

absl::StatusOr<RecoveryReport> Ledger::BeginBoot(const std::string& boot_id, int max_attempts) {
  RecoveryReport report;
  boot_id_ = boot_id;
  absl::Status s = Atomically([&]() -> absl::Status {
    CAKE_ASSIGN_OR_RETURN(
        Stmt running,
        db_->Prepare(absl::StrCat("SELECT ", kJobColumns, " FROM jobs WHERE state = 'RUNNING'")));
    while (running.Step()) report.interrupted.push_back(ReadJob(running));
    CAKE_RETURN_IF_ERROR(running.status());
    for (const Job& j : report.interrupted) {
      CAKE_ASSIGN_OR_RETURN(
          Stmt rec,
          db_->Prepare(
              "INSERT OR IGNORE INTO job_attempts(job_id, attempt, outcome, error, finished_ms) "
              "VALUES (?, ?, 'INTERRUPTED', 'daemon restarted while the job ran', ?)"));
      CAKE_RETURN_IF_ERROR(rec.Bind(1, j.id).Bind(2, j.attempt).Bind(3, NowMs()).Run());
      // Only crashes count: attempts a graceful shutdown killed were re-queued as SHUTDOWN.
      CAKE_ASSIGN_OR_RETURN(Stmt n, db_->Prepare("SELECT COUNT(*) FROM job_attempts WHERE "
                                                 "job_id = ? AND outcome = 'INTERRUPTED'"));
      n.Bind(1, j.id);
      if (!n.Step()) return n.status().ok() ? absl::InternalError("no count") : n.status();
      const int64_t crashes = n.Int(0);
      const bool retry = crashes < max_attempts;
      const std::string error =
          retry ? ""
                : absl::StrCat("interrupted by daemon crashes in ", crashes, " of ", max_attempts,
                               " allowed attempts; giving up");
      CAKE_ASSIGN_OR_RETURN(
          Stmt up,
          db_->Prepare("UPDATE jobs SET state = ?, error = ?, worker_pid = 0 WHERE id = ?"));
      CAKE_RETURN_IF_ERROR(
          up.Bind(1, retry ? "QUEUED" : "FAILED").Bind(2, error).Bind(3, j.id).Run());
      CAKE_RETURN_IF_ERROR(AddEvent(
          retry ? "job_requeued" : "job_failed", j.candidate_id, j.id,
          absl::StrCat(j.kind, " job ", j.id, " was running when the daemon stopped (attempt ",
                       j.attempt, "); ", retry ? "re-queued" : error)));
      if (retry) {
        ++report.requeued;
      } else {
        ++report.failed;
        Job failed = j;
        failed.state = JobState::kFailed;
        failed.error = error;
        report.gave_up.push_back(std::move(failed));
      }
    }
    return absl::OkStatus();
  });
  if (!s.ok()) return s;
  CAKE_ASSIGN_OR_RETURN(int64_t queued, CountJobs(JobState::kQueued));
  report.queued = static_cast<int>(queued);
  return report;
}

absl::StatusOr<bool> Ledger::InsertContract(const std::string& id, const contract::Contract& c) {
  std::lock_guard<std::recursive_mutex> lock(mu_);
  const std::string body = c.SerializeAsString();
  CAKE_ASSIGN_OR_RETURN(Stmt s, db_->Prepare("INSERT OR IGNORE INTO contracts(id, name, body, "
                                             "created_ms, body_sha256) VALUES (?, ?, ?, ?, ?)"));
  CAKE_RETURN_IF_ERROR(s.Bind(1, id)
                           .Bind(2, c.name())
                           .BindBlob(3, body)
                           .Bind(4, NowMs())
                           .Bind(5, base::Sha256Hex(body))
                           .Run());
  return db_->Changes() == 0;
}

absl::StatusOr<contract::Contract> Ledger::GetContract(const std::string& id) {
  std::lock_guard<std::recursive_mutex> lock(mu_);
  CAKE_ASSIGN_OR_RETURN(Stmt s,
                        db_->Prepare("SELECT body, body_sha256 FROM contracts WHERE id = ?"));
  s.Bind(1, id);
  if (!s.Step()) {
    CAKE_RETURN_IF_ERROR(s.status());
    return absl::NotFoundError(absl::StrCat("no contract '", id, "'"));
  }
  return VerifiedContract(id, s.Blob(0), s.Text(1));
}

absl::StatusOr<std::vector<std::pair<std::string, contract::Contract>>> Ledger::ListContracts(
    std::vector<std::string>* corrupt) {
  std::lock_guard<std::recursive_mutex> lock(mu_);
  CAKE_ASSIGN_OR_RETURN(
      Stmt s, db_->Prepare("SELECT id, body, body_sha256 FROM contracts ORDER BY created_ms, id"));
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

absl::Status Ledger::SetIncumbent(const std::string& contract_id, const std::string& candidate_id,
                                  const std::string& reason) {
  return Atomically([&]() -> absl::Status {
    CAKE_ASSIGN_OR_RETURN(std::string previous, Incumbent(contract_id));
    CAKE_ASSIGN_OR_RETURN(
        Stmt up,
        db_->Prepare("INSERT INTO incumbents(contract_id, candidate_id, since_ms) VALUES (?, ?, ?) "
                     "ON CONFLICT(contract_id) DO UPDATE SET candidate_id = excluded.candidate_id, "
                     "since_ms = excluded.since_ms"));
    CAKE_RETURN_IF_ERROR(up.Bind(1, contract_id).Bind(2, candidate_id).Bind(3, NowMs()).Run());
    CAKE_ASSIGN_OR_RETURN(
        Stmt p,
        db_->Prepare(
            "INSERT INTO promotions(contract_id, candidate_id, previous_id, reason, created_ms) "
            "VALUES (?, ?, ?, ?, ?)"));
    CAKE_RETURN_IF_ERROR(p.Bind(1, contract_id)
                             .Bind(2, candidate_id)
                             .Bind(3, previous)
                             .Bind(4, reason)
                             .Bind(5, NowMs())
                             .Run());
    return AddEvent(
        "promoted", candidate_id, 0,
        absl::StrCat("incumbent of ", contract_id, ": ", candidate_id,
                     previous.empty() ? "" : absl::StrCat(" (was ", previous, ")"), ": ", reason));
  });
}

absl::StatusOr<std::string> Ledger::Incumbent(const std::string& contract_id) {
  std::lock_guard<std::recursive_mutex> lock(mu_);
  CAKE_ASSIGN_OR_RETURN(Stmt s,
                        db_->Prepare("SELECT candidate_id FROM incumbents WHERE contract_id = ?"));
  s.Bind(1, contract_id);
  if (s.Step()) return s.Text(0);
  CAKE_RETURN_IF_ERROR(s.status());
  return std::string();
}

absl::StatusOr<Ledger::Inserted> Ledger::InsertCandidate(const evidence::Candidate& c,
                                                         const std::string& idempotency_key) {
  Inserted result;
  absl::Status st = Atomically([&]() -> absl::Status {
    CAKE_ASSIGN_OR_RETURN(
        Stmt same,
        db_->Prepare("SELECT id FROM candidates WHERE contract_id = ? AND schedule_hash = ?"));
    same.Bind(1, c.contract_id()).Bind(2, c.schedule_hash());
    if (same.Step()) {
      result.id = same.Text(0);
      result.existed = true;
      return absl::OkStatus();
    }
    CAKE_RETURN_IF_ERROR(same.status());
    CAKE_ASSIGN_OR_RETURN(Stmt seq,
                          db_->Prepare("SELECT COALESCE(MAX(seq), 0) + 1 FROM candidates"));
    if (!seq.Step()) return seq.status();
    const int64_t n = seq.Int(0);
    result.id = absl::StrCat("c", n, "-", c.schedule_hash().substr(0, 8));
    CAKE_ASSIGN_OR_RETURN(
        Stmt ins,
        db_->Prepare(
            "INSERT INTO candidates(id, seq, contract_id, schedule_hash, schedule_text, state, "
            "proposer, idempotency_key, created_ms) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)"));
    ins.Bind(1, result.id)
        .Bind(2, n)
        .Bind(3, c.contract_id())
        .Bind(4, c.schedule_hash())
        .Bind(5, c.schedule_text())
        .Bind(6, static_cast<int64_t>(c.state()))
        .Bind(7, c.proposer());
    if (idempotency_key.empty()) {
      ins.BindNull(8);
    } else {
      ins.Bind(8, idempotency_key);
    }
    CAKE_RETURN_IF_ERROR(ins.Bind(9, c.created_unix_ms()).Run());
    if (c.has_hypothesis()) {
      CAKE_ASSIGN_OR_RETURN(
          Stmt h, db_->Prepare("INSERT INTO hypotheses(candidate_id, body) VALUES (?, ?)"));
      CAKE_RETURN_IF_ERROR(
          h.Bind(1, result.id).BindBlob(2, c.hypothesis().SerializeAsString()).Run());
    }
    return AddEvent("proposed", result.id, 0,
                    absl::StrCat("proposed by ", c.proposer(), " for contract ", c.contract_id()));
  });
  if (!st.ok()) return st;
  return result;
}

absl::StatusOr<std::string> Ledger::CandidateForKey(const std::string& idempotency_key) {
  std::lock_guard<std::recursive_mutex> lock(mu_);
  CAKE_ASSIGN_OR_RETURN(Stmt s,
                        db_->Prepare("SELECT id FROM candidates WHERE idempotency_key = ?"));
  s.Bind(1, idempotency_key);
  if (s.Step()) return s.Text(0);
  CAKE_RETURN_IF_ERROR(s.status());
  return std::string();
}

absl::StatusOr<std::optional<std::pair<std::string, int64_t>>> Ledger::MeasureForKey(
    const std::string& idempotency_key) {
  std::lock_guard<std::recursive_mutex> lock(mu_);
  CAKE_ASSIGN_OR_RETURN(Stmt s,
                        db_->Prepare("SELECT candidate_id, job_id FROM measure_requests WHERE "
                                     "idempotency_key = ?"));
  s.Bind(1, idempotency_key);
  if (s.Step()) return std::make_optional(std::make_pair(s.Text(0), s.Int(1)));
  CAKE_RETURN_IF_ERROR(s.status());
  return std::optional<std::pair<std::string, int64_t>>();
}

absl::Status Ledger::InsertMeasureRequest(const std::string& idempotency_key,
                                          const std::string& candidate, int64_t job_id) {
  std::lock_guard<std::recursive_mutex> lock(mu_);
  CAKE_ASSIGN_OR_RETURN(Stmt s,
                        db_->Prepare("INSERT INTO measure_requests(idempotency_key, "
                                     "candidate_id, job_id, created_ms) VALUES (?, ?, ?, ?)"));
  return s.Bind(1, idempotency_key).Bind(2, candidate).Bind(3, job_id).Bind(4, NowMs()).Run();
}

absl::Status Ledger::SetCandidateState(const std::string& id, evidence::CandidateState state,
                                       evidence::CandidateState rejected_at,
                                       const std::string& note) {
  return Atomically([&]() -> absl::Status {
    CAKE_ASSIGN_OR_RETURN(
        Stmt s,
        db_->Prepare(
            "UPDATE candidates SET state = ?, rejected_at = ?, status_note = ? WHERE id = ?"));
    CAKE_RETURN_IF_ERROR(s.Bind(1, static_cast<int64_t>(state))
                             .Bind(2, static_cast<int64_t>(rejected_at))
                             .Bind(3, note)
                             .Bind(4, id)
                             .Run());
    if (db_->Changes() == 0) return absl::NotFoundError(absl::StrCat("no candidate ", id));
    return AddEvent(
        "state", id, 0,
        absl::StrCat(evidence::CandidateState_Name(state),
                     state == evidence::REJECTED
                         ? absl::StrCat(" at ", evidence::CandidateState_Name(rejected_at))
                         : "",
                     note.empty() ? "" : absl::StrCat(": ", note)));
  });
}

absl::Status Ledger::PutAnalysis(const std::string& candidate, const report::AnalysisReport& r) {
  std::lock_guard<std::recursive_mutex> lock(mu_);
  CAKE_ASSIGN_OR_RETURN(
      Stmt s,
      db_->Prepare("INSERT OR REPLACE INTO analysis_reports(candidate_id, target, verdict, body) "
                   "VALUES (?, ?, ?, ?)"));
  return s.Bind(1, candidate)
      .Bind(2, r.target())
      .Bind(3, static_cast<int64_t>(r.verdict()))
      .BindBlob(4, r.SerializeAsString())
      .Run();
}

absl::Status Ledger::PutReceipt(const std::string& candidate, const report::LoweringReceipt& r) {
  return Atomically([&]() -> absl::Status {
    CAKE_ASSIGN_OR_RETURN(
        Stmt a,
        db_->Prepare(
            "INSERT OR IGNORE INTO artifacts(key, dir, cubin_sha256, target) VALUES (?, ?, ?, ?)"));
    CAKE_RETURN_IF_ERROR(a.Bind(1, r.artifact_key())
                             .Bind(2, r.artifact_dir())
                             .Bind(3, r.cubin_sha256())
                             .Bind(4, r.target())
                             .Run());
    CAKE_ASSIGN_OR_RETURN(
        Stmt s,
        db_->Prepare(
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

absl::StatusOr<report::LoweringReceipt> Ledger::GetReceipt(const std::string& candidate,
                                                           const std::string& target) {
  std::lock_guard<std::recursive_mutex> lock(mu_);
  CAKE_ASSIGN_OR_RETURN(
      Stmt s, db_->Prepare("SELECT body FROM receipts WHERE candidate_id = ? AND target = ?"));
  s.Bind(1, candidate).Bind(2, target);
  if (!s.Step()) {
    CAKE_RETURN_IF_ERROR(s.status());
    return absl::NotFoundError(absl::StrCat("no ", target, " receipt for ", candidate));
  }
  report::LoweringReceipt r;
  if (!r.ParseFromString(s.Blob(0))) return absl::DataLossError("receipt does not parse");
  return r;
}

absl::Status Ledger::PutValidation(const std::string& candidate, int64_t job_id,
                                   const evidence::Validation& v) {
  std::lock_guard<std::recursive_mutex> lock(mu_);
  CAKE_ASSIGN_OR_RETURN(Stmt s, db_->Prepare("INSERT INTO validations(candidate_id, job_id, "
                                             "passed, body, created_ms) VALUES (?,?,?,?,?)"));
  return s.Bind(1, candidate)
      .Bind(2, job_id)
      .Bind(3, v.passed() ? 1 : 0)
      .BindBlob(4, v.SerializeAsString())
      .Bind(5, NowMs())
      .Run();
}

absl::Status Ledger::PutMeasurement(const std::string& candidate, const evidence::Measurement& m) {
  return Atomically([&]() -> absl::Status {
    CAKE_ASSIGN_OR_RETURN(
        Stmt s,
        db_->Prepare("INSERT INTO measurements(candidate_id, incumbent_id, run, verdict, "
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
    const int64_t mid = db_->LastInsertId();
    // Every raw sample, in order, with its clocks, spans and whether the verdict kept it.
    CAKE_ASSIGN_OR_RETURN(
        Stmt smp,
        db_->Prepare("INSERT INTO measurement_samples(measurement_id, row, pair, challenger_first, "
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

absl::Status Ledger::PutEvidence(const std::string& candidate, int64_t job_id,
                                 const evidence::EvidenceRecord& r) {
  std::lock_guard<std::recursive_mutex> lock(mu_);
  evidence::EvidenceRecord stored = r;
  stored.set_job_id(job_id);
  if (stored.created_unix_ms() == 0) stored.set_created_unix_ms(NowMs());
  CAKE_ASSIGN_OR_RETURN(
      Stmt s, db_->Prepare("INSERT INTO evidence_records(candidate_id, job_id, kind, tool, status, "
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

absl::StatusOr<std::vector<evidence::EvidenceRecord>> Ledger::LatestEvidence(
    const std::string& candidate) {
  std::lock_guard<std::recursive_mutex> lock(mu_);
  CAKE_ASSIGN_OR_RETURN(
      Stmt s, db_->Prepare("SELECT body FROM evidence_records WHERE id IN (SELECT MAX(id) FROM "
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

absl::StatusOr<evidence::Candidate> Ledger::GetCandidate(const std::string& id) {
  std::lock_guard<std::recursive_mutex> lock(mu_);
  CAKE_ASSIGN_OR_RETURN(
      Stmt s,
      db_->Prepare(
          "SELECT id, contract_id, schedule_hash, schedule_text, state, rejected_at, status_note, "
          "proposer, created_ms FROM candidates WHERE id = ?"));
  s.Bind(1, id);
  if (!s.Step()) {
    CAKE_RETURN_IF_ERROR(s.status());
    return absl::NotFoundError(absl::StrCat("no candidate '", id, "'"));
  }
  evidence::Candidate c;
  c.set_id(s.Text(0));
  c.set_contract_id(s.Text(1));
  c.set_schedule_hash(s.Text(2));
  c.set_schedule_text(s.Text(3));
  c.set_state(static_cast<evidence::CandidateState>(s.Int(4)));
  c.set_rejected_at(static_cast<evidence::CandidateState>(s.Int(5)));
  c.set_status_note(s.Text(6));
  c.set_proposer(s.Text(7));
  c.set_created_unix_ms(s.Int(8));
  CAKE_ASSIGN_OR_RETURN(Stmt h, db_->Prepare("SELECT body FROM hypotheses WHERE candidate_id = ?"));
  h.Bind(1, id);
  if (h.Step()) c.mutable_hypothesis()->ParseFromString(h.Blob(0));
  CAKE_ASSIGN_OR_RETURN(
      Stmt a,
      db_->Prepare(
          "SELECT body FROM analysis_reports WHERE candidate_id = ? ORDER BY target LIMIT 1"));
  a.Bind(1, id);
  if (a.Step()) c.mutable_analysis()->ParseFromString(a.Blob(0));
  CAKE_ASSIGN_OR_RETURN(
      Stmt r,
      db_->Prepare("SELECT body FROM receipts WHERE candidate_id = ? ORDER BY target DESC"));
  r.Bind(1, id);
  // The compile-target receipt (sm_12x sorts after sm_90 descending) is the one shown.
  if (r.Step()) c.mutable_receipt()->ParseFromString(r.Blob(0));
  CAKE_ASSIGN_OR_RETURN(
      Stmt v,
      db_->Prepare("SELECT body FROM validations WHERE candidate_id = ? ORDER BY id DESC LIMIT 1"));
  v.Bind(1, id);
  if (v.Step()) c.mutable_validation()->ParseFromString(v.Blob(0));
  CAKE_ASSIGN_OR_RETURN(
      Stmt m, db_->Prepare("SELECT body FROM measurements WHERE candidate_id = ? ORDER BY id"));
  m.Bind(1, id);
  while (m.Step()) c.add_measurements()->ParseFromString(m.Blob(0));
  CAKE_ASSIGN_OR_RETURN(std::vector<evidence::EvidenceRecord> records, LatestEvidence(id));
  for (evidence::EvidenceRecord& rec : records) *c.add_evidence() = std::move(rec);
  for (const auto& d : c.analysis().diagnostics()) *c.add_diagnostics() = d;
  for (const auto& d : c.receipt().failures()) *c.add_diagnostics() = d;
  return c;
}

absl::StatusOr<Ledger::CandidatePage> Ledger::ListCandidates(const std::string& contract_id,
                                                             int limit, int64_t before_seq) {
  std::vector<std::pair<std::string, int64_t>> ids;
  const int64_t want = limit > 0 ? limit : 1000;
  {
    std::lock_guard<std::recursive_mutex> lock(mu_);
    CAKE_ASSIGN_OR_RETURN(
        Stmt s, db_->Prepare("SELECT id, seq FROM candidates WHERE (? = '' OR contract_id = ?) AND "
                             "(? = 0 OR seq < ?) ORDER BY seq DESC LIMIT ?"));
    s.Bind(1, contract_id).Bind(2, contract_id).Bind(3, before_seq).Bind(4, before_seq);
    s.Bind(5, want + 1);  // one more tells whether another page exists
    while (s.Step()) ids.emplace_back(s.Text(0), s.Int(1));
    CAKE_RETURN_IF_ERROR(s.status());
  }
  CandidatePage page;
  page.more = static_cast<int64_t>(ids.size()) > want;
  if (page.more) ids.pop_back();
  for (const auto& [id, seq] : ids) {
    CAKE_ASSIGN_OR_RETURN(evidence::Candidate c, GetCandidate(id));
    page.candidates.push_back(std::move(c));
    page.last_seq = seq;
  }
  return page;
}

absl::StatusOr<std::vector<std::string>> Ledger::CandidatesInState(const std::string& contract_id,
                                                                   evidence::CandidateState state) {
  std::lock_guard<std::recursive_mutex> lock(mu_);
  CAKE_ASSIGN_OR_RETURN(
      Stmt s,
      db_->Prepare("SELECT id FROM candidates WHERE contract_id = ? AND state = ? ORDER BY seq"));
  s.Bind(1, contract_id).Bind(2, static_cast<int64_t>(state));
  std::vector<std::string> ids;
  while (s.Step()) ids.push_back(s.Text(0));
  CAKE_RETURN_IF_ERROR(s.status());
  return ids;
}

absl::StatusOr<std::map<std::string, int64_t>> Ledger::CandidateCounts() {
  std::lock_guard<std::recursive_mutex> lock(mu_);
  CAKE_ASSIGN_OR_RETURN(Stmt s,
                        db_->Prepare("SELECT state, COUNT(*) FROM candidates GROUP BY state"));
  std::map<std::string, int64_t> out;
  while (s.Step())
    out[evidence::CandidateState_Name(static_cast<evidence::CandidateState>(s.Int(0)))] = s.Int(1);
  CAKE_RETURN_IF_ERROR(s.status());
  return out;
}

absl::StatusOr<int64_t> Ledger::EnqueueJob(const std::string& candidate, const std::string& kind,
                                           const std::string& request) {
  int64_t id = 0;
  absl::Status st = Atomically([&]() -> absl::Status {
    CAKE_ASSIGN_OR_RETURN(
        Stmt s, db_->Prepare("INSERT INTO jobs(candidate_id, kind, state, request, created_ms) "
                             "VALUES (?, ?, 'QUEUED', ?, ?)"));
    CAKE_RETURN_IF_ERROR(
        s.Bind(1, candidate).Bind(2, kind).BindBlob(3, request).Bind(4, NowMs()).Run());
    id = db_->LastInsertId();
    return AddEvent("job_queued", candidate, id, absl::StrCat(kind, " job ", id, " queued"));
  });
  if (!st.ok()) return st;
  return id;
}

absl::StatusOr<std::vector<Job>> Ledger::QueuedJobs() {
  std::lock_guard<std::recursive_mutex> lock(mu_);
  CAKE_ASSIGN_OR_RETURN(
      Stmt s, db_->Prepare(absl::StrCat("SELECT ", kJobColumns,
                                        " FROM jobs WHERE state = 'QUEUED' ORDER BY id")));
  std::vector<Job> out;
  while (s.Step()) out.push_back(ReadJob(s));
  CAKE_RETURN_IF_ERROR(s.status());
  return out;
}

absl::StatusOr<int64_t> Ledger::CountJobs(JobState state) {
  std::lock_guard<std::recursive_mutex> lock(mu_);
  CAKE_ASSIGN_OR_RETURN(Stmt s, db_->Prepare("SELECT COUNT(*) FROM jobs WHERE state = ?"));
  s.Bind(1, JobStateName(state));
  if (!s.Step()) return s.status();
  return s.Int(0);
}

absl::StatusOr<Job> Ledger::GetJob(int64_t id) {
  std::lock_guard<std::recursive_mutex> lock(mu_);
  CAKE_ASSIGN_OR_RETURN(
      Stmt s, db_->Prepare(absl::StrCat("SELECT ", kJobColumns, " FROM jobs WHERE id = ?")));
  s.Bind(1, id);
  if (!s.Step()) {
    CAKE_RETURN_IF_ERROR(s.status());
    return absl::NotFoundError(absl::StrCat("no job ", id));
  }
  return ReadJob(s);
}

absl::Status Ledger::MarkJobRunning(int64_t id, int64_t pid) {
  return Atomically([&]() -> absl::Status {
    CAKE_ASSIGN_OR_RETURN(Stmt s, db_->Prepare("UPDATE jobs SET state = 'RUNNING', attempt = "
                                               "attempt + 1, boot_id = ?, started_ms = ?, "
                                               "worker_pid = ? WHERE id = ? AND state = 'QUEUED'"));
    CAKE_RETURN_IF_ERROR(s.Bind(1, boot_id_).Bind(2, NowMs()).Bind(3, pid).Bind(4, id).Run());
    if (db_->Changes() == 0) return absl::FailedPreconditionError("job is not queued");
    return absl::OkStatus();
  });
}

absl::Status Ledger::SetJobPid(int64_t id, int64_t pid) {
  std::lock_guard<std::recursive_mutex> lock(mu_);
  CAKE_ASSIGN_OR_RETURN(Stmt s, db_->Prepare("UPDATE jobs SET worker_pid = ? WHERE id = ?"));
  return s.Bind(1, pid).Bind(2, id).Run();
}

absl::Status Ledger::RequeueAfterShutdown(int64_t id) {
  return Atomically([&]() -> absl::Status {
    CAKE_ASSIGN_OR_RETURN(Job j, GetJob(id));
    if (j.state != JobState::kRunning) return absl::OkStatus();
    CAKE_ASSIGN_OR_RETURN(
        Stmt rec, db_->Prepare("INSERT OR IGNORE INTO job_attempts(job_id, attempt, outcome, "
                               "error, finished_ms) VALUES (?, ?, 'SHUTDOWN', "
                               "'killed by a graceful daemon stop', ?)"));
    CAKE_RETURN_IF_ERROR(rec.Bind(1, id).Bind(2, j.attempt).Bind(3, NowMs()).Run());
    CAKE_ASSIGN_OR_RETURN(
        Stmt up, db_->Prepare("UPDATE jobs SET state = 'QUEUED', worker_pid = 0 WHERE id = ?"));
    CAKE_RETURN_IF_ERROR(up.Bind(1, id).Run());
    return AddEvent("job_requeued", j.candidate_id, id,
                    absl::StrCat(j.kind, " job ", id, " stopped by the daemon's shutdown (attempt ",
                                 j.attempt, "); re-queued"));
  });
}

absl::Status Ledger::FinishJob(int64_t id, bool ok, const std::string& error) {
  return Atomically([&]() -> absl::Status {
    CAKE_ASSIGN_OR_RETURN(Job j, GetJob(id));
    // A job ends once: finishing an already finished one (recovery gave up on it) records
    // nothing more.
    if (j.state == JobState::kDone || j.state == JobState::kFailed) return absl::OkStatus();
    CAKE_ASSIGN_OR_RETURN(
        Stmt rec,
        db_->Prepare("INSERT INTO job_attempts(job_id, attempt, outcome, error, finished_ms) "
                     "VALUES (?, ?, ?, ?, ?)"));
    CAKE_RETURN_IF_ERROR(rec.Bind(1, id)
                             .Bind(2, j.attempt)
                             .Bind(3, ok ? "DONE" : "FAILED")
                             .Bind(4, error)
                             .Bind(5, NowMs())
                             .Run());
    CAKE_ASSIGN_OR_RETURN(
        Stmt s, db_->Prepare("UPDATE jobs SET state = ?, error = ?, finished_ms = ? WHERE id = ?"));
    CAKE_RETURN_IF_ERROR(
        s.Bind(1, ok ? "DONE" : "FAILED").Bind(2, error).Bind(3, NowMs()).Bind(4, id).Run());
    if (!ok)
      CAKE_RETURN_IF_ERROR(AddEvent("job_failed", j.candidate_id, id,
                                    absl::StrCat(j.kind, " job ", id, " failed: ", error)));
    return absl::OkStatus();
  });
}

absl::StatusOr<std::vector<Job>> Ledger::RecentFailedJobs(int limit) {
  std::lock_guard<std::recursive_mutex> lock(mu_);
  CAKE_ASSIGN_OR_RETURN(Stmt s, db_->Prepare(absl::StrCat(
                                    "SELECT ", kJobColumns,
                                    " FROM jobs WHERE state = 'FAILED' ORDER BY id DESC LIMIT ?")));
  s.Bind(1, limit);
  std::vector<Job> out;
  while (s.Step()) out.push_back(ReadJob(s));
  CAKE_RETURN_IF_ERROR(s.status());
  return out;
}

absl::Status Ledger::AddEvent(const std::string& kind, const std::string& candidate, int64_t job_id,
                              const std::string& message) {
  std::lock_guard<std::recursive_mutex> lock(mu_);
  CAKE_ASSIGN_OR_RETURN(Stmt s, db_->Prepare("INSERT INTO events(created_ms, kind, candidate_id, "
                                             "job_id, message) VALUES (?,?,?,?,?)"));
  return s.Bind(1, NowMs()).Bind(2, kind).Bind(3, candidate).Bind(4, job_id).Bind(5, message).Run();
}

absl::StatusOr<std::vector<Event>> Ledger::EventsAfter(int64_t after_id, int limit) {
  std::lock_guard<std::recursive_mutex> lock(mu_);
  CAKE_ASSIGN_OR_RETURN(
      Stmt s,
      db_->Prepare(
          "SELECT id, created_ms, kind, candidate_id, job_id, message FROM events WHERE id > ? "
          "ORDER BY id LIMIT ?"));
  s.Bind(1, after_id).Bind(2, limit);
  std::vector<Event> out;
  while (s.Step()) {
    Event e;
    e.id = s.Int(0);
    e.created_ms = s.Int(1);
    e.kind = s.Text(2);
    e.candidate_id = s.Text(3);
    e.job_id = s.Int(4);
    e.message = s.Text(5);
    out.push_back(e);
  }
  CAKE_RETURN_IF_ERROR(s.status());
  return out;
}

}  // namespace cake::ledger
