// Text that leaves the daemon in a protobuf `string` field must be valid UTF-8 (a client's
// runtime refuses the whole reply otherwise). Bytes from other processes (a worker's stderr)
// may be anything, and a cut at a byte offset can split a character: these helpers cut at
// character boundaries and repair what is not UTF-8. Pure functions; thread-safe.
#pragma once

#include <cstddef>
#include <string>

#include "absl/strings/string_view.h"

namespace cake::base {

// `s` with every byte sequence that is not well-formed UTF-8 replaced by U+FFFD.
std::string ValidUtf8(absl::string_view s);

// The longest prefix (suffix) of ValidUtf8(s) of at most `max_bytes` bytes that ends (starts) on
// a character boundary.
std::string Utf8Prefix(absl::string_view s, size_t max_bytes);
std::string Utf8Suffix(absl::string_view s, size_t max_bytes);

// Utf8Prefix plus "..." when anything was cut (the result may then be max_bytes + 3 long).
std::string ClipUtf8(absl::string_view s, size_t max_bytes);

}  // namespace cake::base
