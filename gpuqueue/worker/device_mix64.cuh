// splitmix64 for device code: the hash of the trusted helper kernels and of every workload's
// check kernel (workloads::Mix64 is its host twin, workloads/numeric.h).
#pragma once

#include <cstdint>

__device__ __forceinline__ uint64_t Mix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}
