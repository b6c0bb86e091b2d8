#include "auth_audit.h"

#include "spdlog/spdlog.h"

namespace cake::server {

const char* AuthFailureName(AuthFailure reason) {
  switch (reason) {
    case AuthFailure::kMissingToken:
      return "missing_token";
    case AuthFailure::kUnknownToken:
      return "unknown_token";
    case AuthFailure::kRoleDenied:
      return "role_denied";
    case AuthFailure::kClientCertificate:
      return "client_certificate";
  }
  return "unknown";
}

void AuthAudit::Refused(const std::string& peer, const std::string& method, AuthFailure reason,
                        const std::string& message) {
  const auto now = std::chrono::steady_clock::now();
  int64_t left_out = 0;
  {
    std::lock_guard<std::mutex> lock(mu_);
    ++counts_[reason];
    // Bounded memory under a flood from many peers: the table restarts when it grows large.
    if (peers_.size() > 4096) peers_.clear();
    auto [it, first] = peers_.try_emplace(peer);
    if (!first && now - it->second.last < log_interval_) {
      ++it->second.left_out;
      return;
    }
    left_out = it->second.left_out;
    it->second = PeerLog{now, 0};
  }
  spdlog::warn("refused {} from {}: {} ({}){}", method, peer, message, AuthFailureName(reason),
               left_out > 0 ? fmt::format("; {} more refusals of this peer not logged", left_out)
                            : std::string());
}

std::map<std::string, int64_t> AuthAudit::Counts() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::map<std::string, int64_t> out;
  for (AuthFailure r : {AuthFailure::kMissingToken, AuthFailure::kUnknownToken,
                        AuthFailure::kRoleDenied, AuthFailure::kClientCertificate}) {
    auto it = counts_.find(r);
    out[AuthFailureName(r)] = it == counts_.end() ? 0 : it->second;
  }
  return out;
}

}  // namespace cake::server
