#include "graph.h"

#include "absl/strings/str_cat.h"

namespace cake::compiler {
namespace {

template <typename T>
void Index(const google::protobuf::RepeatedPtrField<T>& items,
           std::map<std::string, const T*>* out) {
  for (const T& item : items) out->emplace(item.name(), &item);
}

template <typename T>
int FindIndex(const google::protobuf::RepeatedPtrField<T>& items, const std::string& name) {
  for (int i = 0; i < items.size(); ++i)
    if (items[i].name() == name) return i;
  return -1;
}

ir::Uniformity Weaker(ir::Uniformity outer, ir::Uniformity inner) {
  auto rank = [](ir::Uniformity u) {
    switch (u) {
      case ir::UNIFORM_CTA:
        return 0;
      case ir::UNIFORM_WARP:
        return 1;
      case ir::UNIFORMITY_UNSPECIFIED:
        return 2;
      default:
        return 3;  // NON_UNIFORM
    }
  };
  return rank(inner) > rank(outer) ? inner : outer;
}

// What an operation inherits from the regions around it.
struct Context {
  std::string role, produce, consume;
  std::vector<std::string> loop_nest;
  ir::Uniformity branch_uniformity = ir::UNIFORM_CTA;
};

void AddOps(const google::protobuf::RepeatedPtrField<ir::Operation>& ops, const std::string& prefix,
            const std::string& field, OpNode* parent, const Context& ctx, KernelGraph* g) {
  for (int i = 0; i < ops.size(); ++i) {
    const ir::Operation& op = ops[i];
    auto node = std::make_unique<OpNode>();
    node->op = &op;
    node->path = absl::StrCat(prefix, ".", field, "[", i, "]");
    node->parent = parent;
    node->index_in_parent = i;
    node->depth = parent != nullptr ? parent->depth + 1 : 1;
    node->role = ctx.role;
    node->produce = ctx.produce;
    node->consume = ctx.consume;
    node->loop_nest = ctx.loop_nest;
    node->branch_uniformity = ctx.branch_uniformity;
    OpNode* raw = node.get();
    g->nodes.push_back(std::move(node));
    if (parent != nullptr) {
      parent->children.push_back(raw);
    } else {
      g->roots.push_back(raw);
    }
    if (!op.id().empty()) g->ops_by_id.emplace(op.id(), raw);
    for (const std::string& r : op.results()) g->values.emplace(r, raw);

    Context body = ctx;
    switch (op.op_case()) {
      case ir::Operation::kRoleRegion:
        body.role = op.role_region().role();
        break;
      case ir::Operation::kProduce:
        body.produce = op.produce().pipeline();
        break;
      case ir::Operation::kConsume:
        body.consume = op.consume().pipeline();
        break;
      case ir::Operation::kForEachTile:
        body.loop_nest.push_back(absl::StrCat("tile:", op.for_each_tile().work()));
        break;
      case ir::Operation::kForKTiles:
        body.loop_nest.push_back(
            absl::StrCat("k:", op.for_k_tiles().k(), ":", op.for_k_tiles().extent()));
        break;
      case ir::Operation::kIfUniform:
        body.branch_uniformity = Weaker(ctx.branch_uniformity, op.if_uniform().uniformity());
        break;
      default:
        break;
    }
    AddOps(op.body(), raw->path, "body", raw, body, g);
  }
}

}  // namespace

std::string KernelGraph::DeclPath(const std::string& field, const std::string& name) const {
  const ir::Kernel& k = *kernel;
  int i = -1;
  if (field == "scalars") i = FindIndex(k.scalars(), name);
  if (field == "tensors") i = FindIndex(k.tensors(), name);
  if (field == "roles") i = FindIndex(k.roles(), name);
  if (field == "buffers") i = FindIndex(k.buffers(), name);
  if (field == "instrs") i = FindIndex(k.instrs(), name);
  if (field == "accumulators") i = FindIndex(k.accumulators(), name);
  if (field == "pipelines") i = FindIndex(k.pipelines(), name);
  if (field == "work") i = FindIndex(k.work(), name);
  if (i < 0) return path;
  return absl::StrCat(path, ".", field, "[", i, "]");
}

bool KernelGraph::IsDeclared(const std::string& name) const {
  return scalars.count(name) || tensors.count(name) || roles.count(name) || buffers.count(name) ||
         instrs.count(name) || accumulators.count(name) || pipelines.count(name) ||
         work.count(name) || softmax_states.count(name) || caches.count(name) ||
         selections.count(name);
}

std::unique_ptr<KernelGraph> BuildKernelGraph(const ir::Kernel& kernel, int index) {
  auto g = std::make_unique<KernelGraph>();
  g->kernel = &kernel;
  g->index = index;
  g->path = absl::StrCat("kernels[", index, "]");
  Index(kernel.scalars(), &g->scalars);
  Index(kernel.tensors(), &g->tensors);
  Index(kernel.roles(), &g->roles);
  Index(kernel.buffers(), &g->buffers);
  Index(kernel.instrs(), &g->instrs);
  Index(kernel.accumulators(), &g->accumulators);
  Index(kernel.pipelines(), &g->pipelines);
  Index(kernel.work(), &g->work);
  Index(kernel.softmax_states(), &g->softmax_states);
  Index(kernel.caches(), &g->caches);
  Index(kernel.selections(), &g->selections);
  AddOps(kernel.ops(), g->path, "ops", nullptr, Context{}, g.get());
  return g;
}

std::string OpKind(const ir::Operation& op) {
  if (op.op_case() == ir::Operation::OP_NOT_SET) return "";
  const auto* field = op.GetDescriptor()->FindFieldByNumber(op.op_case());
  return field ? field->name() : "";
}

}  // namespace cake::compiler
