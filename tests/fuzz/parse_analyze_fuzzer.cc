// libFuzzer entry point: parse -> analyze on every target -> emit. Build with
// `cmake -DCAKE_FUZZ=ON -DCMAKE_CXX_COMPILER=clang++` and run with tests/fuzz/seeds as corpus.
#include <cstddef>
#include <cstdint>
#include <string>

#include "compiler/compiler.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  auto parsed = cake::compiler::ParseModuleText(text, "fuzz.textproto");
  if (!parsed.ok()) return 0;
  for (const auto& t : cake::compiler::AllTargets()) (void)cake::compiler::Emit(*parsed, t);
  return 0;
}
