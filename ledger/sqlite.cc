#include "sqlite.h"

#include "absl/strings/str_cat.h"

namespace cake::ledger {

Stmt::~Stmt() {
  if (s_ != nullptr) sqlite3_finalize(s_);
}

Stmt& Stmt::Bind(int i, int64_t v) {
  if (sqlite3_bind_int64(s_, i, v) != SQLITE_OK && status_.ok())
    status_ = absl::InternalError(sqlite3_errmsg(db_));
  return *this;
}

Stmt& Stmt::Bind(int i, absl::string_view text) {
  if (sqlite3_bind_text(s_, i, text.data(), static_cast<int>(text.size()), SQLITE_TRANSIENT) !=
          SQLITE_OK &&
      status_.ok())
    status_ = absl::InternalError(sqlite3_errmsg(db_));
  return *this;
}

Stmt& Stmt::BindBlob(int i, absl::string_view bytes) {
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
  if (rc != SQLITE_DONE) {
    const int ext = sqlite3_extended_errcode(db_);
    std::string msg = absl::StrCat(sqlite3_errmsg(db_), " (", ext, ")");
    status_ = (rc == SQLITE_CONSTRAINT)                       ? absl::FailedPreconditionError(msg)
              : (rc == SQLITE_BUSY)                           ? absl::UnavailableError(msg)
              : (rc == SQLITE_CORRUPT || rc == SQLITE_NOTADB) ? absl::DataLossError(msg)
                                                              : absl::InternalError(msg);
  }
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
  if (rc != SQLITE_OK) {
    if (rc == SQLITE_NOTADB || rc == SQLITE_CORRUPT)
      return absl::DataLossError(sqlite3_errmsg(db_));
    return absl::InternalError(absl::StrCat(sqlite3_errmsg(db_), " in: ", sql));
  }
  return Stmt(db_, s);
}

absl::Status Db::Exec(absl::string_view sql) {
  char* err = nullptr;
  const int rc = sqlite3_exec(db_, std::string(sql).c_str(), nullptr, nullptr, &err);
  if (rc == SQLITE_OK) return absl::OkStatus();
  std::string msg = err ? err : sqlite3_errmsg(db_);
  sqlite3_free(err);
  if (rc == SQLITE_NOTADB || rc == SQLITE_CORRUPT) return absl::DataLossError(msg);
  if (rc == SQLITE_BUSY) return absl::UnavailableError(msg);
  if (rc == SQLITE_CONSTRAINT) return absl::FailedPreconditionError(msg);
  return absl::InternalError(msg);
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
