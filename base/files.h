// Whole-file reads for artifacts (cubins, PTX): the bytes as they are, "" when the file cannot
// be read (callers that must tell the two apart check a hash or existence). Thread-safe.
#pragma once

#include <filesystem>
#include <string>

namespace cake::base {

std::string ReadFileBytes(const std::filesystem::path& path);

}  // namespace cake::base
