// Per-role bearer tokens. Tokens live in files under STATE_DIR/tokens/{operator,agent,ci}
// (created on first start from getrandom); clients read them from a file, never from argv, and
// send `authorization: Bearer <token>`. Modes, set at every start: tokens/ 0750; operator 0600
// (the daemon's user only); agent and ci 0640, so members of the daemon's group (the unit's
// Group=) can run cakectl status, propose and measure, but not create contracts.
// Thread-safe after construction.
#pragma once

#include <map>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "orchestrator.h"

namespace cake::server {

// The mode each role's token file gets.
int TokenFileMode(Role role);

class TokenTable {
 public:
  // Loads (creating when absent) the three token files under `dir`.
  static absl::StatusOr<TokenTable> LoadOrCreate(const std::string& dir);
  // The role of `authorization` metadata ("Bearer <token>"); UNAUTHENTICATED otherwise.
  absl::StatusOr<Role> RoleFor(const std::string& authorization) const;

 private:
  std::map<std::string, Role> by_token_;
};

}  // namespace cake::server
