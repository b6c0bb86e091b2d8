#include "auth.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"

namespace cake::server {
namespace fs = std::filesystem;

absl::StatusOr<TokenTable> TokenTable::LoadOrCreate(const std::string& dir) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  ::chmod(dir.c_str(), 0700);
  TokenTable t;
  for (Role role : {Role::kOperator, Role::kAgent, Role::kCi}) {
    const fs::path path = fs::path(dir) / RoleName(role);
    if (!fs::exists(path)) {
      unsigned char raw[32];
      std::ifstream urandom("/dev/urandom", std::ios::binary);
      urandom.read(reinterpret_cast<char*>(raw), sizeof(raw));
      if (!urandom) return absl::InternalError("cannot read /dev/urandom");
      static constexpr char kHex[] = "0123456789abcdef";
      std::string token;
      for (unsigned char b : raw) {
        token.push_back(kHex[b >> 4]);
        token.push_back(kHex[b & 15]);
      }
      const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL, 0600);
      if (fd < 0) return absl::InternalError(absl::StrCat("cannot create ", path.string()));
      token.push_back('\n');
      const bool ok = ::write(fd, token.data(), token.size()) == static_cast<ssize_t>(token.size());
      ::close(fd);
      if (!ok) return absl::InternalError(absl::StrCat("cannot write ", path.string()));
    }
    std::ifstream in(path);
    std::stringstream s;
    s << in.rdbuf();
    const std::string token(absl::StripAsciiWhitespace(s.str()));
    if (token.size() < 16)
      return absl::FailedPreconditionError(absl::StrCat(path.string(), " holds no usable token"));
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
