// The lowering seam: each lowering states what it matches, the instruction forms it requires,
// the workload (contract operation) its kernels compute and the launch they need (the argument
// list and the grid as formulas, report.LaunchSpec). Analysis asks the registry whether any
// lowering covers a verified schedule (unknown otherwise, never approximated); compilation
// lowers with the one that matched. compiler.cc and the analysis passes name no lowering and no
// workload. A lowering lives in compiler/lowerings/<name>/ and registers itself at
// static-initialization time (CAKE_REGISTER_LOWERING; its library is linked whole).
// Registered lowerings are immutable and thread-safe; Match and Lower are pure.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "cake/ir.pb.h"
#include "cake/report.pb.h"
#include "graph.h"
#include "passes.h"
#include "targets.h"

namespace cake::compiler {

// What a lowering produced: deterministic CUDA C++ (identical schedule + target => identical
// bytes), the op-id -> line-range map, the launch, and the instruction forms the SASS must show.
struct LoweredKernel {
  std::string text;
  std::string kernel_symbol;
  std::vector<report::SourceRange> op_lines;  // sorted by first line
  int64_t dynamic_shared_bytes = 0;
  report::LaunchSpec launch;
  struct Form {
    std::string op_id;
    std::string instruction;  // an admission-table instruction name, e.g. "mma.m16n8k16.bf16.f32"
  };
  std::vector<Form> forms;
  std::vector<SharedRegionPlan> shared_regions;
};

class Lowering {
 public:
  virtual ~Lowering() = default;
  virtual std::string name() const = 0;     // "warp_gemm"
  virtual std::string version() const = 0;  // "warp_gemm/1": part of every artifact key
  // The contract operation its kernels compute (workloads/workload.h).
  virtual std::string operation() const = 0;
  // One line for people: what it covers.
  virtual std::string summary() const = 0;
  // The admission-table instructions its kernels use.
  virtual std::vector<std::string> required_instructions() const = 0;
  // OK when this lowering covers the module's kernel; otherwise why not (the first mismatch).
  virtual absl::Status Match(const ir::Module& module, const KernelGraph& g) const = 0;
  // Lowers a matched, verified module.
  virtual absl::StatusOr<LoweredKernel> Lower(const ir::Module& module, const KernelGraph& g,
                                              const TargetInfo& target,
                                              const std::string& schedule_hash) const = 0;
  // Fills `launch` of a receipt this lowering made before receipts carried one; false if it
  // cannot (then the receipt must be compiled again).
  virtual bool UpgradeReceipt(report::LoweringReceipt* receipt) const { return false; }
};

// Registered lowerings, by name order.
std::vector<const Lowering*> AllLowerings();
const Lowering* LoweringByName(const std::string& name);
// The lowering that covers the module's kernel, or nullptr with each lowering's reason in
// `why_not` ("warp_gemm: ...; <next lowering>: ...").
const Lowering* MatchLowering(const ir::Module& module, const KernelGraph& g,
                              std::string* why_not = nullptr);
// Fills a receipt's launch when an older version of its lowering left it out (legacy receipts);
// true if the receipt now has one.
bool EnsureLaunchSpec(report::LoweringReceipt* receipt);

bool RegisterLowering(std::unique_ptr<Lowering> l);
#define CAKE_REGISTER_LOWERING(Type)                                   \
  [[maybe_unused]] static const bool cake_lowering_registered_##Type = \
      ::cake::compiler::RegisterLowering(std::make_unique<Type>())

}  // namespace cake::compiler
