// File helpers: whole-file reads for artifacts (cubins, PTX), and durable writes for the small
// files a crash or a full disk must never leave half-written (tokens, keys). Thread-safe.
#pragma once

#include <sys/types.h>

#include <filesystem>
#include <string>

#include "absl/status/statusor.h"

namespace cake::base {

// The bytes as they are, "" when the file cannot be read (callers that must tell the two apart
// check a hash or existence).
std::string ReadFileBytes(const std::filesystem::path& path);

// Writes `bytes` to a temporary file beside `path` with `mode`, fsyncs it, renames it over
// `path` and fsyncs the directory: afterwards `path` holds all of `bytes` or what it held
// before, never a prefix. The error names the step (a full disk says "No space left").
absl::Status WriteFileAtomically(const std::filesystem::path& path, const std::string& bytes,
                                 mode_t mode);

}  // namespace cake::base
