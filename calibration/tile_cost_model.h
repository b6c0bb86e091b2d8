// A cost model of warp-tiled kernels (a CTA tile of a GEMM-shaped problem, split into warp tiles,
// fed through a staged ring): what one schedule costs on one problem, as a handful of work terms
// derived from the tiling alone, weighted by rates fitted to one device's measured times.
//
// Terms (per the busiest SM unless said): tensor-core multiply-adds of the padded tiles; bytes
// the ring loads (L2 to shared); bytes the warps read from shared memory (ldmatrix: fewer for
// larger warp tiles); compulsory DRAM bytes (operands once, output, split-K workspace); DRAM bytes
// of the operand panels each wave of resident CTAs reads (raster bands share them); ring
// iterations a resident CTA cannot hide behind another (fewer stages or CTAs, more exposed);
// pipeline fills; epilogue elements (stored directly, or staged through shared memory); cp.async
// issue (TMA moves the same bytes without it); and one launch. The rates are fitted per device
// (Fit): a model never borrows another device's rates, and an unfitted one predicts nothing.
//
// How well it ranks is measured, not assumed: LeaveOneGroupOut fits on every problem shape but
// one and reports Kendall's tau between predicted and measured times on the held-out shape.
// Pure; thread-safe.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

namespace cake::calibration {

struct TileSchedule {
  int tile_m = 128, tile_n = 128, tile_k = 32;
  int warps_m = 2, warps_n = 2;
  int stages = 3;
  int k_slices = 1;        // split-K: CTAs per output tile
  int raster_group_m = 1;  // tile rows per raster band (1 = row-major)
  bool tma = false;        // TMA ring (else cp.async)
  bool loader_warp = false;
  bool staged_store = false;  // epilogue through shared memory
  // The epilogue reduces across column tiles (an arg-reduce): one CTA walks every column tile of
  // its row tile, and where the ring's stages hold all of k its A tile is loaded once.
  bool row_walk = false;
  int registers = 0;         // per thread, from the receipt (0: unknown, taken as 255)
  int64_t shared_bytes = 0;  // per CTA, from the receipt
};

struct GemmExtents {
  int64_t m = 0, n = 0, k = 0;
};

// The limits that decide how many CTAs an SM holds.
struct DeviceShape {
  int sm_count = 0;
  int registers_per_sm = 65536;
  int64_t shared_per_sm = 233472;  // sm_90: 228 KiB
  int threads_per_sm = 2048;
  int ctas_per_sm = 32;
};

inline constexpr int kTermCount = 11;
using Terms = std::array<double, kTermCount>;

// Each term's name, in Terms order.
const std::array<const char*, kTermCount>& TermNames();

// CTAs of one SM at a time for this schedule (at least 1).
int ResidentCtas(const TileSchedule& s, const DeviceShape& d);

Terms TileTerms(const TileSchedule& s, const GemmExtents& e, const DeviceShape& d);

struct Sample {
  Terms terms{};
  double ms = 0;      // measured median
  std::string group;  // the problem shape ("8192x8192x8192"): held out together
  std::string label;  // the schedule
};

struct FittedModel {
  Terms rates{};  // milliseconds per unit of each term, all >= 0
  bool fitted = false;
  double PredictMs(const Terms& t) const;
};

// Non-negative rates minimising the squared relative error over `samples` (coordinate descent on
// the normal equations; every sample counts alike whatever its time). Unfitted for no sample.
FittedModel Fit(const std::vector<Sample>& samples);

// Kendall's tau-b between two equally long sequences (ties in either count as neither concordant
// nor discordant); 0 for fewer than two pairs that are not tied.
double KendallTau(const std::vector<double>& a, const std::vector<double>& b);

struct HeldOutGroup {
  std::string group;
  int samples = 0;
  double tau = 0;
  std::string predicted_best;    // the schedule the model would pick
  double predicted_best_ms = 0;  // its measured time
  std::string measured_best;
  double measured_best_ms = 0;
};

// For each group: fit on the others, rank the group's samples.
std::vector<HeldOutGroup> LeaveOneGroupOut(const std::vector<Sample>& samples);

}  // namespace cake::calibration
