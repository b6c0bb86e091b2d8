// Which element of an m16n8k32 MMA over 8-bit operands (e4m3, e5m2) each lane holds, from the
// PTX ISA's fragment layouts for mma.m16n8k32 (groupID = lane / 4, threadID_in_group = lane % 4):
//   A [16 x 32], 4 registers x 4 bytes: element i (register i / 4, byte i % 4) is row groupID
//     (+ 8 when i & 4), column threadID_in_group * 4 + i % 4 (+ 16 when i & 8);
//   B [32 x 8], 2 registers x 4 bytes: element i is row (k) threadID_in_group * 4 + i % 4
//     (+ 16 when i & 4), column groupID;
//   C, D [16 x 8], 4 floats: element i is row groupID (+ 8 when i & 2), column
//     threadID_in_group * 2 + i % 2.
// The compiler and the qualification experiment pack and unpack fragments with these maps; no
// agent writes them. Pure; constexpr.
#pragma once

#include <cstdint>

namespace cake::workloads::gemm_blockscaled {

struct MatrixIndex {
  int row = 0, col = 0;
};

constexpr MatrixIndex FragmentA8(int lane, int i) {
  return {(lane >> 2) + ((i & 4) ? 8 : 0), (lane & 3) * 4 + (i & 3) + ((i & 8) ? 16 : 0)};
}
constexpr MatrixIndex FragmentB8(int lane, int i) {
  return {(lane & 3) * 4 + (i & 3) + ((i & 4) ? 16 : 0), lane >> 2};
}
constexpr MatrixIndex FragmentC(int lane, int i) {
  return {(lane >> 2) + ((i & 2) ? 8 : 0), (lane & 3) * 2 + (i & 1)};
}

// One lane's A registers from A's codes (row-major [16][32], one code per byte value).
inline void PackA8(const uint32_t* a, int lane, uint32_t (&regs)[4]) {
  for (uint32_t& r : regs) r = 0;
  for (int i = 0; i < 16; ++i) {
    const MatrixIndex e = FragmentA8(lane, i);
    regs[i / 4] |= (a[e.row * 32 + e.col] & 0xFFu) << (8 * (i % 4));
  }
}
// One lane's B registers from B's columns (8 columns of 32 codes each: b[n * 32 + k]).
inline void PackB8(const uint32_t* b, int lane, uint32_t (&regs)[2]) {
  regs[0] = regs[1] = 0;
  for (int i = 0; i < 8; ++i) {
    const MatrixIndex e = FragmentB8(lane, i);  // (k, n)
    regs[i / 4] |= (b[e.col * 32 + e.row] & 0xFFu) << (8 * (i % 4));
  }
}

}  // namespace cake::workloads::gemm_blockscaled
