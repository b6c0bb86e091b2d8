// The SQLite connection the ledger's stores share, and transaction nesting. Internal to ledger/.
//
// Thread-safety: Lock() serializes every statement; Atomically() holds the lock for the whole
// transaction, so a store's call made inside another's transaction joins it.
#pragma once

#include <functional>
#include <memory>
#include <mutex>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "sqlite.h"

namespace cake::ledger {

class Connection {
 public:
  explicit Connection(std::unique_ptr<Db> db) : db_(std::move(db)) {}

  std::unique_lock<std::recursive_mutex> Lock() {
    return std::unique_lock<std::recursive_mutex>(mu_);
  }
  // Only while Lock() or Atomically() is held.
  Db& db() { return *db_; }

  // Runs fn inside one IMMEDIATE transaction (nested calls join it).
  absl::Status Atomically(const std::function<absl::Status()>& fn) {
    std::lock_guard<std::recursive_mutex> lock(mu_);
    if (depth_ > 0) return fn();
    absl::StatusOr<Transaction> tx = Transaction::Begin(*db_);
    if (!tx.ok()) return tx.status();
    ++depth_;
    absl::Status s = fn();
    --depth_;
    if (!s.ok()) return s;  // tx rolls back
    return tx->Commit();
  }

 private:
  std::recursive_mutex mu_;
  int depth_ ABSL_GUARDED_BY(mu_) = 0;
  std::unique_ptr<Db> db_;
};

}  // namespace cake::ledger
