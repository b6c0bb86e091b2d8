// Host-side inputs and checks of the consumer: fresh random BF16 inputs, and a registry of
// float64 oracles by operation. Each workload that can be exported supplies its own oracle in
// workloads/<name>/export/consumer_oracle.cc (this example's CMakeLists.txt compiles them all),
// so the example names no workload.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <random>
#include <string>
#include <vector>

namespace consumer {

using Shape = std::map<std::string, int64_t>;
using Tensors = std::map<std::string, std::vector<unsigned char>>;  // name -> bytes

float Bf16ToFloat(uint16_t b);
uint16_t FloatToBf16(float f);  // round to nearest even
std::vector<uint16_t> RandomBf16(size_t n, std::mt19937_64& rng);

struct CheckResult {
  bool passed = false;
  int64_t checked = 0;
  int64_t failed = 0;
  double worst = 0;  // worst error over its bound
  std::string first_failure;
  // One comparison: error against its bound (NaN fails).
  void Note(double error, double bound, const std::string& where);
};

template <typename T>
std::vector<T> As(const std::vector<unsigned char>& bytes) {
  std::vector<T> v(bytes.size() / sizeof(T));
  if (!bytes.empty()) __builtin_memcpy(v.data(), bytes.data(), v.size() * sizeof(T));
  return v;
}

// The outputs of `operation` at `shape` against its float64 oracle; `inputs` and `outputs` by
// tensor name.
using Oracle =
    std::function<CheckResult(const Shape& shape, const Tensors& inputs, const Tensors& outputs)>;
bool RegisterOracle(const std::string& operation, Oracle oracle);  // at static initialization
const Oracle* FindOracle(const std::string& operation);            // nullptr when none

}  // namespace consumer
