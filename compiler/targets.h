// The finite table of compilation targets and their device limits. Data, not logic: admission
// and resource analysis read it; nothing derives support from compute-capability ordering.
#pragma once

#include <optional>
#include <span>
#include <string>
#include "absl/strings/string_view.h"

#include "absl/status/statusor.h"
#include "cake/ir.pb.h"

namespace cake::compiler {

struct PtxVersion {
  int major = 0;
  int minor = 0;
  auto operator<=>(const PtxVersion&) const = default;
  std::string ToString() const;
};

// Parses "MAJOR.MINOR"; nullopt on anything else.
std::optional<PtxVersion> ParsePtxVersion(absl::string_view text);

// The PTX ISA versions this project knows, ascending (used to find "the version before").
std::span<const PtxVersion> KnownPtxVersions();

struct TargetInfo {
  ir::Arch arch;
  absl::string_view name;          // "sm_120f": the -arch / .target spelling
  absl::string_view virtual_arch;  // "compute_120f": the -gencode arch= spelling
  PtxVersion min_ptx;              // oldest PTX ISA that knows this target
  int64_t shared_per_block_optin;  // bytes, dynamic shared opt-in limit per block
  int64_t registers_per_sm;
  int max_registers_per_thread;
  int max_threads_per_cta;
  // Which execution witness this project can produce for objects of this target.
  absl::string_view witness;
  // Largest thread block cluster a launch may request: the portable limit of 8 (CUDA
  // programming guide, compute capability 9.0 and later).
  int max_cluster_size = 8;
  // Hardware named barriers per CTA (bar.sync ids 0..15); id 0 is the CTA-wide barrier
  // __syncthreads and the pipelines' publish use.
  int named_barriers = 16;
};

std::span<const TargetInfo> AllTargets();
// nullptr for ARCH_UNSPECIFIED or any arch outside the table.
const TargetInfo* FindTarget(ir::Arch arch);

// Whether an object built for `t` runs on a device of compute capability major.minor: an
// arch-specific target (sm_90, sm_120a, sm_121a) on exactly its own; a family target (sm_120f)
// and plain sm_120 on any 12.x.
bool RunsOn(const TargetInfo& t, int cc_major, int cc_minor);

// Looks up "sm_120f" etc. InvalidArgument listing the admitted targets otherwise.
absl::StatusOr<const TargetInfo*> TargetByName(absl::string_view name);

// "sm_120a, sm_121a, sm_120f, sm_120, sm_90"
std::string AdmittedTargetList();

}  // namespace cake::compiler
