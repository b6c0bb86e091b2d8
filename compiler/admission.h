// Target admission as data: a finite table of instruction descriptors, each with the targets that
// admit it and the PTX ISA version that introduced it. The table is cross-checked against ptxas
// (tests/compiler/admission_ptxas_test.cc): for every descriptor x target a probe is assembled and
// ptxas's verdict must equal the table's.
#pragma once

#include <optional>
#include <span>
#include "absl/strings/string_view.h"

#include <vector>

#include "cake/ir.pb.h"
#include "targets.h"

namespace cake::compiler {

enum class Participation {
  kThread,       // each thread independently
  kWarp,         // complete converged warp (.aligned)
  kElectedLane,  // one elected lane with uniform operands
  kWarpgroup,    // four warps (datacenter)
  kCtaPair,      // two CTAs (datacenter)
};

struct MmaSignature {
  ir::MmaShape shape;
  ir::DType a;
  ir::DType b;
  ir::DType accumulator;
  ir::DType scale_format;  // DTYPE_UNSPECIFIED = unscaled (legacy) form
  int scale_group;         // K elements per scale; 0 when unscaled
};

struct InstrDescriptor {
  absl::string_view key;       // stable name used in receipts and diagnostics
  absl::string_view ptx_form;  // the PTX opcode as emitted
  PtxVersion min_ptx;
  uint32_t admitted_mask;  // bit (1 << ir::Arch) per admitting target
  Participation participation;
  absl::string_view effects;
  // SASS opcode prefix the form must produce, on SM12x targets and on sm_90 respectively.
  absl::string_view sass_sm12x;
  absl::string_view sass_sm90;
  bool datacenter_only;  // tcgen05 / TMEM / WGMMA / two-CTA: rejected at construction
  std::optional<MmaSignature> mma;
  // PTX statements that exercise exactly this form, for the ptxas cross-check. Registers r1..r15
  // (.b32), f0..f15 (.f32), rd0..rd3 (.b64), q0/q1 (.pred) and r0 = address of 4 KiB of shared
  // memory are declared by the probe harness.
  absl::string_view probe;

  bool AdmittedOn(ir::Arch arch) const { return (admitted_mask >> arch) & 1u; }
  absl::string_view SassFor(ir::Arch arch) const {
    return arch == ir::SM_90 ? sass_sm90 : sass_sm12x;
  }
};

std::span<const InstrDescriptor> InstructionTable();
const InstrDescriptor* FindInstruction(absl::string_view key);

// Descriptor of the warp MMA described by `instr`, or nullptr if no descriptor has that
// signature. `shape_known` is set when some descriptor has the shape (so the types are at fault).
const InstrDescriptor* FindMma(const ir::MmaInstr& instr, bool* shape_known);

// Descriptor keys an operation needs (empty for ops that lower to ordinary CUDA).
std::vector<const InstrDescriptor*> InstructionsForLoadForm(ir::MatrixLoadForm form);
std::vector<const InstrDescriptor*> InstructionsForTransfer(ir::Transfer transfer);

// The PTX ISA version the pinned toolchain emits, derived from its CUDA release ("13.0" -> 9.0).
std::optional<PtxVersion> PtxVersionForCudaRelease(int major, int minor);

}  // namespace cake::compiler
