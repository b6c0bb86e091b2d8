// Refused calls, for operators: every UNAUTHENTICATED and PERMISSION_DENIED answer is counted by
// reason (caked_auth_failures_total{reason}) and logged at warning with the peer, the method and
// the reason, never the token. A peer that keeps failing is logged once per interval, the line
// after saying how many were left out. Thread-safe.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>

#include "absl/base/thread_annotations.h"

namespace cake::server {

// Why a call was refused: the label of the counter.
enum class AuthFailure { kMissingToken, kUnknownToken, kRoleDenied, kClientCertificate };
const char* AuthFailureName(AuthFailure reason);

class AuthAudit {
 public:
  explicit AuthAudit(std::chrono::milliseconds log_interval = std::chrono::seconds(10))
      : log_interval_(log_interval) {}

  // Counts the refusal; logs it unless this peer was logged less than an interval ago.
  void Refused(const std::string& peer, const std::string& method, AuthFailure reason,
               const std::string& message);

  // Refusals so far by reason name (every reason present, zeros included).
  std::map<std::string, int64_t> Counts() const;

 private:
  struct PeerLog {
    std::chrono::steady_clock::time_point last;
    int64_t left_out = 0;
  };
  const std::chrono::milliseconds log_interval_;
  mutable std::mutex mu_;
  std::map<AuthFailure, int64_t> counts_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, PeerLog> peers_ ABSL_GUARDED_BY(mu_);
};

}  // namespace cake::server
