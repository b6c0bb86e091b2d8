// Limits on what a schedule may be. Agents are adversaries: every size and depth they can send
// has a bound, checked where the input enters (the parser) or in the verifier, and each refusal
// names the limit and the position. The same numbers are documented in proto/cake/ir.proto.
#pragma once

#include <cstddef>
#include <cstdint>

namespace cake::compiler {

// Bytes of schedule text accepted by the parser.
inline constexpr size_t kMaxScheduleTextBytes = 256 * 1024;
// Message nesting the text parser accepts (Module > Kernel > Operation > body ...). Bounds
// every recursive walk downstream (spans, canonical form, graph, passes, emission).
inline constexpr int kMaxTextNesting = 64;
// Operations in one module, counting nested bodies.
inline constexpr int kMaxOperations = 4096;
// Nesting of operation bodies the verifier accepts (DIAG_OP_NESTING_TOO_DEEP beyond it). Real
// schedules nest role > tile loop > k loop > consume > a few levels of ops.
inline constexpr int kMaxOpDepth = 16;
// Diagnostics kept in one analysis report; the rest are counted in one truncation note.
inline constexpr int kMaxDiagnostics = 200;
// Split-K slices per output tile (work schedule k_slices): each slice is one CTA and one FP32
// partial tile in the workspace.
inline constexpr int kMaxKSlices = 64;
// Tile rows per raster band (work schedule raster_group_m).
inline constexpr int kMaxRasterGroupM = 256;
// Bound on a persistent work schedule's CTAs (max_ctas; 0 = as many as stay resident).
inline constexpr int kMaxPersistentCtas = 1 << 20;
// Guarded members of one portfolio (the fallback not counted), and the largest divisibility
// fact a guard may state.
inline constexpr int kMaxPortfolioMembers = 16;
inline constexpr int64_t kMaxGuardMultiple = int64_t{1} << 20;

// Bounds of the sizes a schedule states (DIAG_INVALID_VALUE beyond them, at construction). They
// keep every product analysis forms far from 64-bit overflow; analysis computes them with
// CheckedInt all the same, and a figure that overflows fails its budget check.
// A constant dimension of a tensor, buffer or accumulator: 1 <= size <= 2^31.
inline constexpr int64_t kMaxDimExtent = int64_t{1} << 31;
// Dimensions of one shape.
inline constexpr int kMaxRank = 8;
// Padding elements of a row (Representation.padding_elements): 0 <= padding <= 2^16.
inline constexpr int64_t kMaxPaddingElements = int64_t{1} << 16;
// Bytes of one stage of a buffer, and of an accumulator tile: at most 2^40.
inline constexpr int64_t kMaxBufferBytes = int64_t{1} << 40;
// Warps along one side of an accumulator's warp grid (a CTA has at most 32 warps).
inline constexpr int kMaxWarpGrid = 32;
// A work tile's rows or columns, and a k-loop's tile extent: 0 <= extent <= 2^16.
inline constexpr int kMaxTileExtent = 1 << 16;

}  // namespace cake::compiler
