#include "sqlite.h"

#include <cstring>

#include "absl/strings/str_cat.h"

namespace cake::ledger {

absl::Status StatusFor(int rc, std::string msg) {
  // Extended result codes are on: the primary code is the low byte.
  const int primary = rc & 0xff;
  // A UNIQUE or PRIMARY KEY conflict is the "already exists" of a concurrent insert; other
  // constraints (NOT NULL, triggers, foreign keys) mean the state must change first.
  if (rc == SQLITE_CONSTRAINT_UNIQUE || rc == SQLITE_CONSTRAINT_PRIMARYKEY)
    return absl::AlreadyExistsError(msg);
  switch (primary) {
    case SQLITE_CONSTRAINT:
      return absl::FailedPreconditionError(msg);
    case SQLITE_BUSY:
    case SQLITE_LOCKED:
      return absl::UnavailableError(msg);
    case SQLITE_CORRUPT:
    case SQLITE_NOTADB:
      return absl::DataLossError(msg);
    case SQLITE_FULL:
      return absl::ResourceExhaustedError(absl::StrCat("disk full: ", msg));
    case SQLITE_READONLY:
    case SQLITE_PERM:
    case SQLITE_CANTOPEN:
      return absl::FailedPreconditionError(msg);
    default:
      return absl::InternalError(msg);
  }
}

Stmt& Stmt::Oversized(int i, size_t bytes) {
  if (status_.ok())
    status_ = absl::ResourceExhaustedError(absl::StrCat("value ", i, " is ", bytes,
                                                        " bytes (the ledger stores at most ",
                                                        kMaxBoundBytes, " per value)"));
  return *this;
}

Stmt::~Stmt() {
  if (s_ != nullptr) sqlite3_finalize(s_);
}

Stmt& Stmt::Bind(int i, int64_t v) {
  if (sqlite3_bind_int64(s_, i, v) != SQLITE_OK && status_.ok())
    status_ = absl::InternalError(sqlite3_errmsg(db_));
  return *this;
}

Stmt& Stmt::Bind(int i, absl::string_view text) {
  if (text.size() > kMaxBoundBytes) return Oversized(i, text.size());
  if (sqlite3_bind_text(s_, i, text.data(), static_cast<int>(text.size()), SQLITE_TRANSIENT) !=
          SQLITE_OK &&
      status_.ok())
    status_ = absl::InternalError(sqlite3_errmsg(db_));
  return *this;
}

Stmt& Stmt::BindBlob(int i, absl::string_view bytes) {
  if (bytes.size() > kMaxBoundBytes) return Oversized(i, bytes.size());
  if (sqlite3_bind_blob(s_, i, bytes.data(), static_cast<int>(bytes.size()), SQLITE_TRANSIENT) !=
          SQLITE_OK &&
      status_.ok())
    status_ = absl::InternalError(sqlite3_errmsg(db_));
  return *this;
}

Stmt& Stmt::BindDouble(int i, double v) {
  if (sqlite3_bind_double(s_, i, v) != SQLITE_OK && status_.ok())
    status_ = absl::InternalError(sqlite3_errmsg(db_));
  return *this;
}

Stmt& Stmt::BindNull(int i) {
  sqlite3_bind_null(s_, i);
  return *this;
}

bool Stmt::Step() {
  if (!status_.ok()) return false;
  const int rc = sqlite3_step(s_);
  if (rc == SQLITE_ROW) return true;
  if (rc != SQLITE_DONE) status_ = StatusFor(rc, absl::StrCat(sqlite3_errmsg(db_), " (", rc, ")"));
  return false;
}

void Stmt::Reset() {
  sqlite3_reset(s_);
  sqlite3_clear_bindings(s_);
  status_ = absl::OkStatus();
}

absl::Status Stmt::Run() {
  while (Step()) {
  }
  return status_;
}

std::string Stmt::Text(int col) const {
  const unsigned char* t = sqlite3_column_text(s_, col);
  return t ? std::string(reinterpret_cast<const char*>(t),
                         static_cast<size_t>(sqlite3_column_bytes(s_, col)))
           : std::string();
}

std::string Stmt::Blob(int col) const {
  const void* b = sqlite3_column_blob(s_, col);
  return b ? std::string(static_cast<const char*>(b),
                         static_cast<size_t>(sqlite3_column_bytes(s_, col)))
           : std::string();
}

absl::StatusOr<std::unique_ptr<Db>> Db::Open(const std::string& path) {
  sqlite3* raw = nullptr;
  const int rc =
      sqlite3_open_v2(path.c_str(), &raw,
                      SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, nullptr);
  std::unique_ptr<Db> db(new Db(raw));
  if (rc != SQLITE_OK)
    return absl::UnavailableError(
        absl::StrCat("cannot open ", path, ": ", raw ? sqlite3_errmsg(raw) : "out of memory"));
  sqlite3_extended_result_codes(raw, 1);
  sqlite3_busy_timeout(raw, 5000);
  return db;
}

Db::~Db() {
  if (db_ != nullptr) sqlite3_close_v2(db_);
}

absl::StatusOr<Stmt> Db::Prepare(absl::string_view sql) {
  sqlite3_stmt* s = nullptr;
  const int rc = sqlite3_prepare_v2(db_, sql.data(), static_cast<int>(sql.size()), &s, nullptr);
  if (rc != SQLITE_OK) return StatusFor(rc, absl::StrCat(sqlite3_errmsg(db_), " in: ", sql));
  return Stmt(db_, s);
}

absl::Status Db::Exec(absl::string_view sql) {
  char* err = nullptr;
  const int rc = sqlite3_exec(db_, std::string(sql).c_str(), nullptr, nullptr, &err);
  if (rc == SQLITE_OK) return absl::OkStatus();
  std::string msg = err ? err : sqlite3_errmsg(db_);
  sqlite3_free(err);
  return StatusFor(rc, std::move(msg));
}

std::string Db::SystemError() const {
  const int e = sqlite3_system_errno(db_);
  return e == 0 ? "" : absl::StrCat(" (errno ", e, ": ", std::strerror(e), ")");
}

absl::Status Db::Error(absl::string_view what) const {
  return absl::InternalError(absl::StrCat(what, ": ", sqlite3_errmsg(db_)));
}

absl::StatusOr<Transaction> Transaction::Begin(Db& db) {
  absl::Status s = db.Exec("BEGIN IMMEDIATE");
  if (!s.ok()) return s;
  return Transaction(db);
}

Transaction::~Transaction() {
  if (!done_) (void)db_->Exec("ROLLBACK");
}

absl::Status Transaction::Commit() {
  absl::Status s = db_->Exec("COMMIT");
  if (s.ok()) done_ = true;
  return s;
}

}  // namespace cake::ledger
