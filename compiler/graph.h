// The typed graph of one kernel: name-resolved declarations and the operation tree with each
// operation's context (enclosing role, pipeline stage, loop nest, branch uniformity). Built once
// per analysis from a parsed module; immutable afterwards, so passes may share it.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "cake/ir.pb.h"

namespace cake::compiler {

struct OpNode {
  const ir::Operation* op = nullptr;
  std::string path;  // "kernels[0].ops[1].body[0]"
  const OpNode* parent = nullptr;
  int index_in_parent = 0;
  int depth = 1;  // 1 for a kernel's top-level ops
  std::vector<const OpNode*> children;
  std::string role;     // enclosing role_region, "" outside any
  std::string produce;  // enclosing produce's pipeline, "" outside
  std::string consume;  // enclosing consume's pipeline, "" outside
  // The enclosing loop headers, outermost first, as "tile:WORK" / "k:SYMBOL:EXTENT".
  std::vector<std::string> loop_nest;
  // The weakest enclosing if_uniform's uniformity; UNIFORM_CTA outside any branch.
  ir::Uniformity branch_uniformity = ir::UNIFORM_CTA;
};

struct KernelGraph {
  const ir::Kernel* kernel = nullptr;
  int index = 0;
  std::string path;  // "kernels[0]"
  std::map<std::string, const ir::ScalarParam*> scalars;
  std::map<std::string, const ir::TensorParam*> tensors;
  std::map<std::string, const ir::Role*> roles;
  std::map<std::string, const ir::Buffer*> buffers;
  std::map<std::string, const ir::MmaInstr*> instrs;
  std::map<std::string, const ir::Accumulator*> accumulators;
  std::map<std::string, const ir::Pipeline*> pipelines;
  std::map<std::string, const ir::WorkSchedule*> work;
  std::map<std::string, const ir::SoftmaxState*> softmax_states;
  std::map<std::string, const ir::PagedCache*> caches;
  std::map<std::string, const ir::SparseSelection*> selections;
  std::map<std::string, const OpNode*> values;  // SSA result -> defining op
  std::map<std::string, const OpNode*> ops_by_id;
  std::vector<std::unique_ptr<OpNode>> nodes;  // preorder
  std::vector<const OpNode*> roots;

  // Path of a declaration, e.g. DeclPath("buffers", "a_ring") -> "kernels[0].buffers[2]".
  std::string DeclPath(const std::string& field, const std::string& name) const;
  bool IsDeclared(const std::string& name) const;
};

// Builds the graph; duplicate names keep their first declaration (the construction pass reports
// the duplicates).
std::unique_ptr<KernelGraph> BuildKernelGraph(const ir::Kernel& kernel, int index);

// Which operation kind a node holds, as its text-format field name ("mma", "copy", ...).
std::string OpKind(const ir::Operation& op);

}  // namespace cake::compiler
