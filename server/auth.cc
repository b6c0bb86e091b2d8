#include "auth.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "base/digest.h"
#include "base/files.h"
#include "base/status_macros.h"

namespace cake::server {
namespace fs = std::filesystem;

int TokenFileMode(Role role) { return role == Role::kOperator ? 0600 : 0640; }

absl::StatusOr<TokenTable> TokenTable::LoadOrCreate(const std::string& dir) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return absl::InternalError(absl::StrCat("cannot create ", dir, ": ", ec.message()));
  ::chmod(dir.c_str(), 0750);
  TokenTable t;
  for (Role role : {Role::kOperator, Role::kAgent, Role::kCi}) {
    const fs::path path = fs::path(dir) / RoleName(role);
    std::string text = base::ReadFileBytes(path);
    // An empty file is what a crash or a full disk left behind an older, non-atomic writer:
    // it never held a token, so a fresh one replaces it.
    if (!fs::exists(path) || text.empty()) {
      CAKE_ASSIGN_OR_RETURN(std::string raw, base::RandomBytes(32));
      text = base::HexOf(raw) + "\n";
      CAKE_RETURN_IF_ERROR(base::WriteFileAtomically(path, text, TokenFileMode(role)));
    }
    // Files of an older caked (all 0600) get the mode of their role.
    if (::chmod(path.c_str(), TokenFileMode(role)) != 0)
      return absl::FailedPreconditionError(
          absl::StrCat("cannot set the mode of ", path.string(), ": ", std::strerror(errno)));
    const std::string token(absl::StripAsciiWhitespace(text));
    if (token.size() < 16)
      return absl::FailedPreconditionError(
          absl::StrCat(path.string(), " holds no usable token (", token.size(),
                       " bytes; at least 16 expected); delete it and a new one is made at start"));
    t.by_token_[token] = role;
  }
  return t;
}

absl::StatusOr<Role> TokenTable::RoleFor(const std::string& authorization) const {
  absl::string_view v(authorization);
  if (!absl::ConsumePrefix(&v, "Bearer "))
    return absl::UnauthenticatedError("missing bearer token (authorization: Bearer <token>)");
  auto it = by_token_.find(std::string(absl::StripAsciiWhitespace(v)));
  if (it == by_token_.end()) return absl::UnauthenticatedError("unknown token");
  return it->second;
}

}  // namespace cake::server
