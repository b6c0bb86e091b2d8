// One daemon per state directory: an exclusive flock(2) on STATE_DIR/caked.lock, held for the
// daemon's life (as etcd's and PostgreSQL's data-directory locks are), with the owner's pid and
// listen address written in it. A second caked on the same directory is refused before it
// touches anything there (its ledger, its workers' folders, its socket). The kernel drops the
// lock when the owner dies, however it dies. Move-only; not thread-safe.
#pragma once

#include <string>

#include "absl/status/statusor.h"

namespace cake::server {

class StateLock {
 public:
  // FailedPrecondition naming the owner's pid and address when another process still holds the
  // lock after 3 s (a crashed caked's child holds it until its exec).
  static absl::StatusOr<StateLock> Acquire(const std::string& state_dir, const std::string& listen);

  StateLock(StateLock&& other) noexcept : fd_(other.fd_) { other.fd_ = -1; }
  StateLock& operator=(StateLock&&) = delete;
  StateLock(const StateLock&) = delete;
  ~StateLock();

 private:
  explicit StateLock(int fd) : fd_(fd) {}
  int fd_ = -1;
};

}  // namespace cake::server
