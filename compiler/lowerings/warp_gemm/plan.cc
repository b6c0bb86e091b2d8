#include "plan.h"

#include "absl/strings/str_cat.h"

namespace cake::compiler {
namespace {

absl::Status Unsupported(absl::string_view why) {
  return absl::UnimplementedError(absl::StrCat("warp_gemm lowering: ", why));
}

bool SymbolIs(const ir::Dim& d, std::string* out) {
  if (d.kind_case() != ir::Dim::kSymbol) return false;
  if (out->empty()) *out = d.symbol();
  return *out == d.symbol();
}

}  // namespace

absl::StatusOr<WarpGemmPlan> PlanWarpGemm(const ir::Module& module, const KernelGraph& g) {
  if (module.kernels_size() != 1) return Unsupported("a single-kernel module is required");
  const ir::Kernel& k = *g.kernel;
  WarpGemmPlan p;
  p.kernel_name = k.name();

  // Structure: role_region { for_each_tile { for_k_tiles { produce, consume }, store } }.
  if (g.roots.size() != 1 || !g.roots[0]->op->has_role_region())
    return Unsupported("one top-level role_region is required");
  const OpNode* role = g.roots[0];
  if (role->children.size() != 1 || !role->children[0]->op->has_for_each_tile())
    return Unsupported("the role region must hold exactly one for_each_tile");
  const OpNode* tiles = role->children[0];
  if (tiles->children.size() != 2 || !tiles->children[0]->op->has_for_k_tiles() ||
      !tiles->children[1]->op->has_store_accumulator())
    return Unsupported("the tile loop must hold for_k_tiles followed by store_accumulator");
  const OpNode* kloop = tiles->children[0];
  const OpNode* store = tiles->children[1];
  if (kloop->children.size() != 2 || !kloop->children[0]->op->has_produce() ||
      !kloop->children[1]->op->has_consume())
    return Unsupported("the k loop must hold produce followed by consume");
  const OpNode* produce = kloop->children[0];
  const OpNode* consume = kloop->children[1];
  p.op_role = role->op->id();
  p.op_tiles = tiles->op->id();
  p.op_kloop = kloop->op->id();
  p.op_produce = produce->op->id();
  p.op_consume = consume->op->id();
  p.op_store = store->op->id();

  // Work schedule.
  auto wi = g.work.find(tiles->op->for_each_tile().work());
  if (wi == g.work.end() || !wi->second->has_static_tiles())
    return Unsupported("static_tiles work schedule required");
  const ir::StaticTiles& st = wi->second->static_tiles();
  p.tile_m = st.tile_m();
  p.tile_n = st.tile_n();
  p.tile_k = kloop->op->for_k_tiles().extent();
  if (p.tile_k % 16 != 0) return Unsupported("k-tile must be a multiple of 16");

  // Role covers the whole CTA.
  auto ri = g.roles.find(role->op->role_region().role());
  if (ri == g.roles.end()) return Unsupported("unknown role");
  p.threads = k.launch().threads_per_cta();
  if (ri->second->warps_size() * 32 != p.threads)
    return Unsupported("a single role owning every warp is required");
  if (ri->second->register_budget() != 0) return Unsupported("register budgets are not lowered");

  // Instruction.
  if (k.instrs_size() != 1) return Unsupported("exactly one MMA instruction is required");
  const ir::MmaInstr& instr = k.instrs(0);
  if (instr.family() != ir::WARP_SYNC || instr.shape() != ir::M16N8K16 || instr.a() != ir::BF16 ||
      instr.b() != ir::BF16 || instr.accumulator() != ir::F32 || instr.has_block_scale())
    return Unsupported("only mma.sync m16n8k16 BF16 x BF16 -> F32 is lowered");

  // Accumulator.
  if (k.accumulators_size() != 1) return Unsupported("exactly one accumulator is required");
  const ir::Accumulator& acc = k.accumulators(0);
  p.warps_m = acc.partition().rows();
  p.warps_n = acc.partition().cols();
  if (p.warps_m * p.warps_n * 32 != p.threads)
    return Unsupported("the accumulator warp grid must cover every warp");
  if (acc.init() != ir::Accumulator::ZERO) return Unsupported("accumulator init must be ZERO");
  if (p.tile_m % (16 * p.warps_m) != 0 || p.tile_n % (8 * p.warps_n) != 0)
    return Unsupported("tile does not divide into warp fragments");

  // Pipeline.
  if (k.pipelines_size() != 1) return Unsupported("exactly one pipeline is required");
  const ir::Pipeline& pipe = k.pipelines(0);
  if (pipe.transfer() != ir::CP_ASYNC) return Unsupported("only CP_ASYNC pipelines are lowered");
  p.stages = pipe.stages();
  if (p.stages < 1 || p.stages > 4) return Unsupported("1..4 stages are lowered");

  // Copies.
  if (produce->children.size() != 2) return Unsupported("produce must hold two copies");
  const ir::Buffer* abuf = nullptr;
  const ir::Buffer* bbuf = nullptr;
  for (const OpNode* c : produce->children) {
    if (!c->op->has_copy()) return Unsupported("produce may only hold copies");
    const ir::Copy& copy = c->op->copy();
    if (copy.transfer() != ir::CP_ASYNC || copy.vector_bytes() != 16)
      return Unsupported("copies must be 16-byte cp.async");
    auto bi = g.buffers.find(copy.dst());
    if (bi == g.buffers.end()) return Unsupported("copy destination unknown");
    const bool zero_fill = copy.mask() == ir::MASK_ZERO_FILL;
    if (copy.origin() == ir::Copy::TILE_M_K) {
      p.a = copy.src();
      abuf = bi->second;
      p.op_copy_a = c->op->id();
      p.mask_mk = zero_fill;
    } else if (copy.origin() == ir::Copy::TILE_N_K) {
      p.b = copy.src();
      bbuf = bi->second;
      p.op_copy_b = c->op->id();
      p.mask_mk = p.mask_mk || zero_fill;
    } else {
      return Unsupported("copy origin must be TILE_M_K or TILE_N_K");
    }
  }
  if (abuf == nullptr || bbuf == nullptr) return Unsupported("one A copy and one B copy required");

  // Consume: two matrix loads, one mma, release.
  if (consume->children.size() != 4 || !consume->children[3]->op->has_release())
    return Unsupported("consume must hold two matrix loads, an mma and a release");
  for (int i = 0; i < 3; ++i) {
    const ir::Operation& op = *consume->children[i]->op;
    if (op.has_matrix_load()) {
      const ir::MatrixLoad& ml = op.matrix_load();
      if (ml.operand() == ir::OPERAND_A) {
        if (ml.form() != ir::LDMATRIX_X4 || ml.src() != abuf->name())
          return Unsupported("operand A is loaded with LDMATRIX_X4 from the A stage");
        p.op_load_a = op.id();
      } else {
        if ((ml.form() != ir::LDMATRIX_X4 && ml.form() != ir::LDMATRIX_X2) ||
            ml.src() != bbuf->name())
          return Unsupported("operand B is loaded with LDMATRIX_X4/X2 from the B stage");
        p.b_load_x4 = ml.form() == ir::LDMATRIX_X4;
        p.op_load_b = op.id();
      }
    } else if (op.has_mma()) {
      p.op_mma = op.id();
    } else {
      return Unsupported("unexpected operation in consume");
    }
  }
  p.op_release = consume->children[3]->op->id();
  if (p.op_load_a.empty() || p.op_load_b.empty() || p.op_mma.empty())
    return Unsupported("consume needs an A load, a B load and an mma");
  if (p.b_load_x4 && (p.tile_n / p.warps_n / 8) % 2 != 0)
    return Unsupported("LDMATRIX_X4 for B needs an even number of n8 tiles per warp");

  // Tensors: A [M,K], B [N,K], C [M,N], row-major, 16-byte aligned.
  auto ta = g.tensors.find(p.a), tb = g.tensors.find(p.b);
  p.c = store->op->store_accumulator().dst();
  auto tc = g.tensors.find(p.c);
  if (ta == g.tensors.end() || tb == g.tensors.end() || tc == g.tensors.end())
    return Unsupported("tensor params unresolved");
  const ir::TensorParam &A = *ta->second, &B = *tb->second, &C = *tc->second;
  if (A.dtype() != ir::BF16 || B.dtype() != ir::BF16) return Unsupported("A and B must be BF16");
  if (C.dtype() != ir::BF16 && C.dtype() != ir::F32) return Unsupported("C must be BF16 or F32");
  p.out_dtype = C.dtype();
  for (const ir::TensorParam* t : {&A, &B, &C})
    if (t->shape().dims_size() != 2 ||
        (t->representation().kind() != ir::Representation::ROW_MAJOR &&
         t->representation().kind() != ir::Representation::KIND_UNSPECIFIED))
      return Unsupported("tensors must be 2-D row-major");
  if (!SymbolIs(A.shape().dims(0), &p.m) || !SymbolIs(A.shape().dims(1), &p.k) ||
      !SymbolIs(B.shape().dims(0), &p.n) || !SymbolIs(B.shape().dims(1), &p.k) ||
      !SymbolIs(C.shape().dims(0), &p.m) || !SymbolIs(C.shape().dims(1), &p.n))
    return Unsupported("shapes must be A[M,K], B[N,K], C[M,N] over scalar symbols");
  if (store->op->store_accumulator().cast() != C.dtype())
    return Unsupported("store cast must equal C's dtype");
  p.mask_store = store->op->store_accumulator().mask() != ir::MASK_NONE;

  // Shared representations.
  auto check_repr = [&](const ir::Buffer& b, int rows, ir::Representation::Kind* kind,
                        int* pad) -> absl::Status {
    if (b.dtype() != ir::BF16 || b.shape().dims_size() != 2 ||
        ConstDim(b.shape().dims(0)).value_or(0) != rows ||
        ConstDim(b.shape().dims(1)).value_or(0) != p.tile_k)
      return Unsupported(
          absl::StrCat("stage buffer '", b.name(), "' must be BF16 [", rows, ", ", p.tile_k, "]"));
    *kind = b.representation().kind();
    *pad = b.representation().padding_elements();
    if (*kind == ir::Representation::ROW_MAJOR) {
      if (*pad % 8 != 0) return Unsupported("padding must keep 16-byte rows");
    } else if (*kind == ir::Representation::SWIZZLE_64B) {
      if (p.tile_k != 32 || *pad != 0) return Unsupported("SWIZZLE_64B needs k-tile 32, no pad");
    } else if (*kind == ir::Representation::SWIZZLE_128B) {
      if (p.tile_k != 64 || *pad != 0) return Unsupported("SWIZZLE_128B needs k-tile 64, no pad");
    } else {
      return Unsupported("stage representation must be ROW_MAJOR, SWIZZLE_64B or SWIZZLE_128B");
    }
    if (b.pipeline() != pipe.name()) return Unsupported("stage buffers belong to the pipeline");
    return absl::OkStatus();
  };
  absl::Status s = check_repr(*abuf, p.tile_m, &p.a_repr, &p.a_padding);
  if (!s.ok()) return s;
  s = check_repr(*bbuf, p.tile_n, &p.b_repr, &p.b_padding);
  if (!s.ok()) return s;

  p.shared = PlanShared(g);
  for (const SharedRegionPlan& r : p.shared.regions) {
    if (r.name == abuf->name()) {
      p.a_offset = r.offset;
      p.a_stage_bytes = r.bytes_per_stage;
    }
    if (r.name == bbuf->name()) {
      p.b_offset = r.offset;
      p.b_stage_bytes = r.bytes_per_stage;
    }
  }
  if (p.shared.regions.size() != 2) return Unsupported("exactly two shared buffers are lowered");
  return p;
}

}  // namespace cake::compiler
