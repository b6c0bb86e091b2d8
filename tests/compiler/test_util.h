// Helpers shared by the compiler tests: locating repository files and parsing fixtures.
#pragma once

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "compiler/parse.h"

namespace cake::testing {

inline std::filesystem::path SourceDir() {
  const char* dir = std::getenv("CAKE_SOURCE_DIR");
  return dir ? std::filesystem::path(dir) : std::filesystem::current_path();
}

inline std::string ReadText(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

inline compiler::ParsedModule MustParse(const std::filesystem::path& p) {
  auto parsed = compiler::ParseModuleFile(p.string());
  if (!parsed.ok()) {
    std::fprintf(stderr, "%s\n", std::string(parsed.status().message()).c_str());
    std::abort();
  }
  return *std::move(parsed);
}

// A fresh, empty directory under the system temp dir.
inline std::filesystem::path FreshDir(const std::string& name) {
  auto dir = std::filesystem::temp_directory_path() /
             (name + "." + std::to_string(::getpid()) + "." + std::to_string(std::rand()));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

}  // namespace cake::testing
