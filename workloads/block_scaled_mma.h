// A CPU model of one warp-level MMA of SM12x over narrow formats (mma.sync m16n8k32 / m16n8k64),
// the oracle of the block-scaled GEMM workload: D = C + (A . scale_A)(B . scale_B), where each
// scale covers `group` consecutive elements of K in one row of A or one column of B.
//
// What it computes is the mathematical result, rounded once: every product is exact (a narrow
// value has at most 4 significant bits, a scale at most 4), the sum of C and all k products is
// accumulated exactly, and that sum is rounded to FP32 to nearest even. The hardware's internal
// accumulation (order, width, rounding of partial sums) is not specified by PTX, so the model
// does not claim bit identity with it: `Tolerance` bounds the difference for a datapath that
// rounds, in any direction, after each of its k + 1 additions in FP32. Non-finite inputs follow
// IEEE: NaN anywhere (an element, a scale, C) gives NaN, infinities of both signs give NaN.
// Pure functions; thread-safe.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "workloads/narrow_float.h"

namespace cake::workloads {

// PTX's `.kind` of an mma.sync over narrow formats.
enum class MmaKind {
  kLegacyF8,  // mma.sync.m16n8k32.f32.{e4m3,e5m2}: no .kind, no scales
  kF8F6F4,    // kind::f8f6f4: FP8/FP6/FP4 operands, no scales
  kMxF8F6F4,  // kind::mxf8f6f4.block_scale.scale_vec::1X: UE8M0 per 32 elements
  kMxF4,      // kind::mxf4.block_scale.scale_vec::2X: E2M1, UE8M0 per 32 elements
  kMxF4NvF4,  // kind::mxf4nvf4.block_scale: E2M1, UE8M0 per 32 (2X) or UE4M3 per 16 (4X)
};

struct MmaForm {
  MmaKind kind = MmaKind::kLegacyF8;
  NarrowFormat a = NarrowFormat::kE4M3, b = NarrowFormat::kE4M3;
  int k = 32;
  std::optional<NarrowFormat> scale;  // none for kLegacyF8 and kF8F6F4
  int group = 0;                      // elements of K per scale; 0 without scales
  std::string Describe() const;       // the PTX qualifiers, e.g. "kind::mxf4nvf4 ... ue4m3 x16"
};

// The form, or InvalidArgument naming what PTX does not allow: operand formats outside the kind,
// a scale type or a group size (scale_vec) that does not match the kind (naming both).
absl::StatusOr<MmaForm> MakeMmaForm(MmaKind kind, NarrowFormat a, NarrowFormat b,
                                    std::optional<NarrowFormat> scale = std::nullopt,
                                    int group = 0);

// The operands of one m16n8kK MMA, as codes of the form's formats (A row-major [16][k]; B as its
// 8 columns, each [k]; scales [16][k / group] and [8][k / group]) and C [16][8] row-major.
struct MmaOperands {
  std::vector<uint32_t> a, b, scale_a, scale_b;
  std::vector<float> c;
};

// D [16][8] row-major; InvalidArgument when an operand has the wrong size or a code outside its
// format.
absl::StatusOr<std::vector<float>> MmaReference(const MmaForm& form, const MmaOperands& operands);

// Per element of D: the largest |hardware - MmaReference| for a datapath that rounds to FP32 after
// each addition: (k + 1) * 2^-23 * (|c| + sum |products|), plus the reference's own half ulp.
absl::StatusOr<std::vector<double>> Tolerance(const MmaForm& form, const MmaOperands& operands);

// The block-scaled GEMM's oracle, C[M,N] = A[M,K] (. scale_A) * B[N,K]^T (. scale_B), built on
// the same exact sum: every element is its exact value rounded once to FP32 (a kernel's own
// accumulation differs within Tolerance's bound per k-step MMA). A [M][K] and B [N][K] hold codes
// of the form's formats; scales [M][K / group] and [N][K / group] (none for unscaled forms);
// K a multiple of the group. InvalidArgument for sizes or codes that do not fit.
struct GemmOperands {
  int m = 0, n = 0, k = 0;
  std::vector<uint32_t> a, b, scale_a, scale_b;
};
absl::StatusOr<std::vector<float>> GemmReference(const MmaForm& form, const GemmOperands& g);

// The exact sum of doubles, rounded once to FP32 (nearest even; overflow to infinity; subnormal
// results rounded at 2^-149). Exposed for tests; at most 2^20 terms.
class ExactSum {
 public:
  // False (and nothing added) for a finite term of 2^430 or more, or with bits below 2^-400.
  [[nodiscard]] bool Add(double term);
  float RoundToFloat() const;

 private:
  // Fixed point with the least significant bit at 2^-kLowBit: every finite double product of
  // the forms above (|x| within 2^-300 .. 2^300, 53 significant bits) lands inside.
  static constexpr int kLowBit = 400, kLimbs = 14;  // 896 bits: 2^-400 .. 2^496
  std::vector<uint64_t> positive_ = std::vector<uint64_t>(kLimbs, 0);
  std::vector<uint64_t> negative_ = std::vector<uint64_t>(kLimbs, 0);
  bool nan_ = false, plus_infinity_ = false, minus_infinity_ = false;
};

}  // namespace cake::workloads
