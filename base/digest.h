// Content digests and random identifiers: SHA-256 and HMAC-SHA-256 as lower-case hex (OpenSSL),
// hex of raw bytes, and bytes from the kernel's CSPRNG. Thread-safe.
#pragma once

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace cake::base {

std::string HexOf(absl::string_view bytes);
std::string Sha256Hex(absl::string_view bytes);
std::string HmacSha256Hex(absl::string_view key, absl::string_view bytes);
// `n` bytes from getrandom(2); Internal if the kernel cannot supply them.
absl::StatusOr<std::string> RandomBytes(size_t n);

}  // namespace cake::base
