#include "targets.h"

#include <array>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace cake::compiler {
namespace {

constexpr absl::string_view kNoSm120Witness =
    "compile + SASS inspection only: no SM120 execution witness";

// SM120/SM121: 99 KiB (101,376 B) dynamic shared per block opt-in, 64 Ki registers per SM.
// H200 (sm_90): 227 KiB (232,448 B) per block opt-in.
constexpr std::array<TargetInfo, 5> kTargets = {{
    {ir::SM_120A, "sm_120a", "compute_120a", {8, 7}, 101376, 65536, 255, 1024, kNoSm120Witness},
    {ir::SM_121A, "sm_121a", "compute_121a", {8, 8}, 101376, 65536, 255, 1024, kNoSm120Witness},
    {ir::SM_120F, "sm_120f", "compute_120f", {8, 8}, 101376, 65536, 255, 1024, kNoSm120Witness},
    // Plain sm_120 admits only the portable forms: a schedule with SM12x-specific ones (the
    // block-scaled MMA) is refused naming the target, never retargeted.
    {ir::SM_120, "sm_120", "compute_120", {8, 7}, 101376, 65536, 255, 1024, kNoSm120Witness},
    {ir::SM_90,
     "sm_90",
     "compute_90",
     {7, 8},
     232448,
     65536,
     255,
     1024,
     "Hopper witness: executable on an H200 (sm_90); not an SM120 execution witness"},
}};

constexpr std::array<PtxVersion, 20> kPtxVersions = {
    {{6, 0}, {6, 1}, {6, 2}, {6, 3}, {6, 4}, {6, 5}, {7, 0}, {7, 1}, {7, 2}, {7, 3},
     {7, 4}, {7, 5}, {7, 6}, {7, 7}, {7, 8}, {8, 0}, {8, 1}, {8, 2}, {8, 3}, {8, 4}}};
constexpr std::array<PtxVersion, 6> kPtxVersionsLate = {
    {{8, 5}, {8, 6}, {8, 7}, {8, 8}, {9, 0}, {9, 1}}};

}  // namespace

std::string PtxVersion::ToString() const { return absl::StrCat(major, ".", minor); }

std::optional<PtxVersion> ParsePtxVersion(absl::string_view text) {
  std::vector<absl::string_view> parts = absl::StrSplit(text, '.');
  if (parts.size() != 2) return std::nullopt;
  PtxVersion v;
  if (!absl::SimpleAtoi(parts[0], &v.major) || !absl::SimpleAtoi(parts[1], &v.minor))
    return std::nullopt;
  if (v.major < 1 || v.major > 99 || v.minor < 0 || v.minor > 9) return std::nullopt;
  return v;
}

std::span<const PtxVersion> KnownPtxVersions() {
  static const std::vector<PtxVersion> all = [] {
    std::vector<PtxVersion> v(kPtxVersions.begin(), kPtxVersions.end());
    v.insert(v.end(), kPtxVersionsLate.begin(), kPtxVersionsLate.end());
    return v;
  }();
  return all;
}

std::span<const TargetInfo> AllTargets() { return kTargets; }

bool RunsOn(const TargetInfo& t, int cc_major, int cc_minor) {
  switch (t.arch) {
    case ir::SM_90:
      return cc_major == 9 && cc_minor == 0;
    case ir::SM_120A:
      return cc_major == 12 && cc_minor == 0;
    case ir::SM_121A:
      return cc_major == 12 && cc_minor == 1;
    case ir::SM_120F:
    case ir::SM_120:
      return cc_major == 12;
    default:
      return false;
  }
}

const TargetInfo* FindTarget(ir::Arch arch) {
  for (const TargetInfo& t : kTargets)
    if (t.arch == arch) return &t;
  return nullptr;
}

absl::StatusOr<const TargetInfo*> TargetByName(absl::string_view name) {
  for (const TargetInfo& t : kTargets)
    if (t.name == name) return &t;
  return absl::InvalidArgumentError(
      absl::StrCat("unknown target '", name, "'; admitted targets: ", AdmittedTargetList()));
}

std::string AdmittedTargetList() {
  std::string out;
  for (const TargetInfo& t : kTargets) absl::StrAppend(&out, out.empty() ? "" : ", ", t.name);
  return out;
}

}  // namespace cake::compiler
