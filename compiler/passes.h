// Internal interface between the analysis driver and its passes. Each pass is pure: graph and
// target in; diagnostics and a count of checked conditions out. Passes run in a fixed order.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/checked_int.h"
#include "cake/ir.pb.h"
#include "diagnostics.h"
#include "graph.h"
#include "targets.h"

namespace cake::compiler {

using base::AlignUp;
using base::CheckedInt;

struct PassContext {
  const ir::Module* module = nullptr;
  const TargetInfo* target = nullptr;
  PtxVersion ptx;  // declared by the module (valid only if ptx_known)
  bool ptx_known = false;
  std::optional<PtxVersion> toolchain_ptx;  // what the pinned nvcc emits, when known
  std::vector<std::unique_ptr<KernelGraph>> graphs;
};

// Counts the conditions a pass examined (reported as coverage).
struct CheckCounter {
  int checked = 0;
  void operator++() { ++checked; }
};

using PassFn = void (*)(const PassContext&, DiagnosticSink&, CheckCounter&);

void RunConstructionPass(const PassContext&, DiagnosticSink&, CheckCounter&);
void RunAdmissionPass(const PassContext&, DiagnosticSink&, CheckCounter&);
void RunFragmentPass(const PassContext&, DiagnosticSink&, CheckCounter&);
void RunBoundsPass(const PassContext&, DiagnosticSink&, CheckCounter&);
void RunMemoryEffectsPass(const PassContext&, DiagnosticSink&, CheckCounter&);
void RunConvergencePass(const PassContext&, DiagnosticSink&, CheckCounter&);
void RunRolePass(const PassContext&, DiagnosticSink&, CheckCounter&);
void RunPipelinePass(const PassContext&, DiagnosticSink&, CheckCounter&);
void RunResourcePass(const PassContext&, DiagnosticSink&, CheckCounter&);
void RunProgramPass(const PassContext&, DiagnosticSink&, CheckCounter&);
// The fragments pass's checks of paged caches, gathers and decodes (pass_caches.cc).
void CheckCaches(const KernelGraph& g, DiagnosticSink& sink, CheckCounter& checks);
// The fragments pass's checks of register math and cross-warp reductions (pass_math.cc).
void CheckMathOps(const KernelGraph& g, DiagnosticSink& sink, CheckCounter& checks);

// --- helpers shared by passes and lowering ---

int DTypeBits(ir::DType t);
std::string DTypeName(ir::DType t);

// Constant value of a dimension, if it is a constant.
std::optional<int64_t> ConstDim(const ir::Dim& d);
// The largest divisor known for a dimension: its size if constant, the scalar's multiple_of if
// symbolic (1 when nothing is declared).
int64_t KnownMultiple(const KernelGraph& g, const ir::Dim& d);
std::string DimText(const ir::Dim& d);

// Row-major rows, plain or in one of TMA's swizzle modes.
bool IsRowMajorFamily(ir::Representation::Kind k);
// The swizzle span in bytes (32/64/128), 0 for an unswizzled representation.
int SwizzleBytes(ir::Representation::Kind k);
// Derived shared-memory bytes of one stage of a buffer (rows x padded row bytes).
CheckedInt BufferStageBytes(const ir::Buffer& b);
// Stages a buffer occupies (its pipeline's stage count, or 1).
int BufferStages(const KernelGraph& g, const ir::Buffer& b);

bool IsWarpCollective(const ir::Operation& op);

// The tiles of the innermost tile loop enclosing `n` (static or persistent work), naming its
// work schedule in `*work`; nullptr outside any tile loop.
const ir::StaticTiles* EnclosingTiles(const KernelGraph& g, const OpNode& n, std::string* work);

}  // namespace cake::compiler

namespace cake::compiler {

struct SharedRegionPlan {
  std::string name;
  int64_t offset = 0;
  int64_t bytes_per_stage = 0;
  int stages = 1;
};

// Shared-memory layout as lowering will allocate it: each buffer's stages contiguous, regions
// 128-byte aligned, in declaration (canonical) order; transaction barriers last.
// A layout whose arithmetic overflowed says so (`overflowed`, total_bytes saturated at INT64_MAX):
// the resource pass rejects it; nothing lowers it.
struct SharedPlan {
  std::vector<SharedRegionPlan> regions;
  int64_t barrier_bytes = 0;
  int64_t total_bytes = 0;
  bool overflowed = false;
};
SharedPlan PlanShared(const KernelGraph& g);

// Estimated per-thread registers: live accumulator fragments + one k-step of operand fragments
// + a fixed allowance for addresses and loop state. An estimate, labelled as such.
int EstimateRegistersPerThread(const KernelGraph& g);

}  // namespace cake::compiler
