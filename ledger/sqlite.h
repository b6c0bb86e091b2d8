// A thin RAII layer over the SQLite C API: a connection, prepared statements with typed binds,
// and IMMEDIATE transactions. Used only inside ledger/. A Db is not thread-safe; the Ledger
// serializes access to it.
#pragma once

#include <sqlite3.h>

#include <cstdint>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace cake::ledger {

class Db;

// No text or blob larger than this is bound: every stored value is bounded.
inline constexpr size_t kMaxBoundBytes = 32 << 20;

// The status of a SQLite result code (extended codes included): ALREADY_EXISTS for a UNIQUE or
// PRIMARY KEY conflict, RESOURCE_EXHAUSTED for a full disk, FAILED_PRECONDITION for read-only or
// permission errors, DATA_LOSS for corruption, UNAVAILABLE for busy, INTERNAL otherwise.
absl::Status StatusFor(int rc, std::string msg);

class Stmt {
 public:
  Stmt(Stmt&& o) noexcept : db_(o.db_), s_(o.s_) { o.s_ = nullptr; }
  ~Stmt();
  Stmt& Bind(int i, int64_t v);
  Stmt& Bind(int i, absl::string_view text);
  Stmt& BindBlob(int i, absl::string_view bytes);
  Stmt& BindDouble(int i, double v);
  Stmt& BindNull(int i);
  // True while rows remain; false at the end. Errors become a non-ok status().
  bool Step();
  absl::Status status() const { return status_; }
  absl::Status Run();  // steps to completion
  void Reset();        // ready to bind and run again (bindings cleared)
  int64_t Int(int col) const { return sqlite3_column_int64(s_, col); }
  double Double(int col) const { return sqlite3_column_double(s_, col); }
  std::string Text(int col) const;
  std::string Blob(int col) const;
  bool IsNull(int col) const { return sqlite3_column_type(s_, col) == SQLITE_NULL; }

 private:
  friend class Db;
  Stmt(sqlite3* db, sqlite3_stmt* s) : db_(db), s_(s) {}
  Stmt& Oversized(int i, size_t bytes);
  sqlite3* db_;
  sqlite3_stmt* s_;
  absl::Status status_;
};

class Db {
 public:
  static absl::StatusOr<std::unique_ptr<Db>> Open(const std::string& path);
  ~Db();
  absl::StatusOr<Stmt> Prepare(absl::string_view sql);
  absl::Status Exec(absl::string_view sql);
  int64_t LastInsertId() const { return sqlite3_last_insert_rowid(db_); }
  int Changes() const { return sqlite3_changes(db_); }
  absl::Status Error(absl::string_view what) const;
  // " (errno N: text)" of the last failed system call SQLite made, or "" when there was none.
  std::string SystemError() const;
  sqlite3* raw() { return db_; }

 private:
  explicit Db(sqlite3* db) : db_(db) {}
  sqlite3* db_;
};

// BEGIN IMMEDIATE ... COMMIT; rolls back unless Commit() succeeded.
class Transaction {
 public:
  static absl::StatusOr<Transaction> Begin(Db& db);
  Transaction(Transaction&& o) noexcept : db_(o.db_), done_(o.done_) { o.done_ = true; }
  ~Transaction();
  absl::Status Commit();

 private:
  explicit Transaction(Db& db) : db_(&db) {}
  Db* db_;
  bool done_ = false;
};

}  // namespace cake::ledger
