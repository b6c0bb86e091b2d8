// Per-role bearer tokens. Tokens live in files under STATE_DIR/tokens/{operator,agent,ci}
// (mode 0600, created on first start from /dev/urandom); clients read them from a file, never
// from argv, and send `authorization: Bearer <token>`. Thread-safe after construction.
#pragma once

#include <map>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "orchestrator.h"

namespace cake::server {

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
