#include "oracle.h"

#include <cstring>

namespace consumer {

float Bf16ToFloat(uint16_t b) {
  const uint32_t bits = uint32_t{b} << 16;
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

uint16_t FloatToBf16(float f) {
  uint32_t bits;
  std::memcpy(&bits, &f, 4);
  const uint32_t rounding = 0x7FFF + ((bits >> 16) & 1);
  return static_cast<uint16_t>((bits + rounding) >> 16);
}

std::vector<uint16_t> RandomBf16(size_t n, std::mt19937_64& rng) {
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::vector<uint16_t> out(n);
  for (uint16_t& v : out) v = FloatToBf16(u(rng));
  return out;
}

void CheckResult::Note(double error, double bound, const std::string& where) {
  ++checked;
  const double over = error / bound;
  if (!(over <= 1.0) && failed++ == 0) first_failure = where;  // NaN fails too
  if (!(over <= worst)) worst = over;
}

namespace {

std::map<std::string, Oracle>& Registry() {
  static std::map<std::string, Oracle> oracles;
  return oracles;
}

}  // namespace

bool RegisterOracle(const std::string& operation, Oracle oracle) {
  Registry()[operation] = std::move(oracle);
  return true;
}

const Oracle* FindOracle(const std::string& operation) {
  auto it = Registry().find(operation);
  return it == Registry().end() ? nullptr : &it->second;
}

}  // namespace consumer
