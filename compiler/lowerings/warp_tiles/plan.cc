// PlanWarpTiles: the recognizer of the warp-tiled schedules (warp_tiles.h), and the checks on
// what TMA needs of the copied tensors. Pure; thread-compatible.
#include <algorithm>
#include <map>
#include <set>

#include "absl/strings/str_cat.h"
#include "compiler/admission.h"
#include "warp_tiles.h"

namespace cake::compiler {

absl::Status LoweringUnsupported(const std::string& lowering, absl::string_view why) {
  return absl::UnimplementedError(absl::StrCat(lowering, " lowering: ", why));
}

bool SymbolIs(const ir::Dim& d, std::string* out) {
  if (d.kind_case() != ir::Dim::kSymbol) return false;
  if (out->empty()) *out = d.symbol();
  return *out == d.symbol();
}

absl::StatusOr<WarpTiles> PlanWarpTiles(const ir::Module& module, const KernelGraph& g,
                                        const std::string& lowering) {
  const auto Unsupported = [](const std::string& who, absl::string_view why) {
    return LoweringUnsupported(who, why);
  };
  if (module.kernels_size() != 1)
    return Unsupported(lowering, "a single-kernel module is required");
  const ir::Kernel& k = *g.kernel;
  WarpTiles t;

  // Structure: role_region { for_each_tile { for_k_tiles { produce, consume }, epilogue } }, or
  // warp-specialized: a loader role_region { for_each_tile { for_k_tiles { produce } } } beside
  // a compute role_region { for_each_tile { for_k_tiles { consume }, epilogue } }.
  if (g.roots.empty() || g.roots.size() > 2)
    return Unsupported(lowering, "one role_region, or a loader's and a computer's, is required");
  for (const OpNode* root : g.roots)
    if (!root->op->has_role_region())
      return Unsupported(lowering, "every top-level operation must be a role_region");
  t.warp_specialized = g.roots.size() == 2;
  // The compute region holds the epilogue (its tile loop has two children).
  // A region may open with unit scales (scale_unit) for a block-scaled MMA, before its tile loop.
  std::set<std::string> unit_scale_values;
  auto tile_loop_of = [&](const OpNode* region) -> const OpNode* {
    const OpNode* loop = nullptr;
    for (const OpNode* c : region->children) {
      if (c->op->has_scale_unit() && loop == nullptr && c->op->scale_unit().format() == ir::UE8M0 &&
          c->op->results_size() == 1) {
        unit_scale_values.insert(c->op->results(0));
      } else if (c->op->has_for_each_tile() && loop == nullptr) {
        loop = c;
      } else {
        return nullptr;
      }
    }
    return loop;
  };
  const OpNode* role = g.roots[0];
  const OpNode* loader = nullptr;
  if (t.warp_specialized) {
    // The loader's tile loop holds its k loop alone; the compute role's also its epilogue.
    const OpNode* first_tiles = tile_loop_of(g.roots[0]);
    const bool loader_first = first_tiles != nullptr && first_tiles->children.size() == 1;
    role = g.roots[loader_first ? 1 : 0];
    loader = g.roots[loader_first ? 0 : 1];
  }
  const OpNode* tiles = tile_loop_of(role);
  if (tiles == nullptr)
    return Unsupported(lowering, "the role region must hold exactly one for_each_tile");
  if (tiles->children.size() != 2 || !tiles->children[0]->op->has_for_k_tiles())
    return Unsupported(lowering, "the tile loop must hold for_k_tiles followed by one epilogue");
  const OpNode* kloop = tiles->children[0];
  t.epilogue = tiles->children[1];
  const OpNode* produce = nullptr;
  const OpNode* consume = nullptr;
  if (!t.warp_specialized) {
    if (kloop->children.size() != 2 || !kloop->children[0]->op->has_produce() ||
        !kloop->children[1]->op->has_consume())
      return Unsupported(lowering, "the k loop must hold produce followed by consume");
    produce = kloop->children[0];
    consume = kloop->children[1];
  } else {
    if (kloop->children.size() != 1 || !kloop->children[0]->op->has_consume())
      return Unsupported(lowering, "the compute role's k loop must hold one consume");
    consume = kloop->children[0];
    const OpNode* load_tiles = tile_loop_of(loader);
    if (load_tiles == nullptr || load_tiles->children.size() != 1 ||
        !load_tiles->children[0]->op->has_for_k_tiles())
      return Unsupported(lowering, "the loader role region must hold one tile loop over k-tiles");
    const OpNode* load_k = load_tiles->children[0];
    if (load_k->children.size() != 1 || !load_k->children[0]->op->has_produce())
      return Unsupported(lowering, "the loader's k loop must hold one produce");
    // One iteration domain: the same tiles and the same k-tiles (the pipeline verifier
    // rejects a mismatch; lowering relies on it).
    if (load_tiles->op->for_each_tile().work() != tiles->op->for_each_tile().work() ||
        load_k->op->for_k_tiles().k() != kloop->op->for_k_tiles().k() ||
        load_k->op->for_k_tiles().extent() != kloop->op->for_k_tiles().extent())
      return Unsupported(lowering, "the loader and compute loops must cover the same tiles and k");
    produce = load_k->children[0];
    t.op_loader_role = loader->op->id();
    t.op_loader_tiles = load_tiles->op->id();
    t.op_loader_kloop = load_k->op->id();
  }
  t.op_role = role->op->id();
  t.op_tiles = tiles->op->id();
  t.op_kloop = kloop->op->id();
  t.op_produce = produce->op->id();
  t.op_consume = consume->op->id();

  // Work schedule.
  auto wi = g.work.find(tiles->op->for_each_tile().work());
  if (wi == g.work.end() || (!wi->second->has_static_tiles() && !wi->second->has_persistent()))
    return Unsupported(lowering, "a static_tiles or persistent work schedule required");
  t.persistent = wi->second->has_persistent();
  if (t.persistent) t.max_ctas = wi->second->persistent().max_ctas();
  const ir::StaticTiles& st =
      t.persistent ? wi->second->persistent().tiles() : wi->second->static_tiles();
  t.tile_m = st.tile_m();
  t.tile_n = st.tile_n();
  t.tile_k = kloop->op->for_k_tiles().extent();  // elements here; 16-bit units after planning
  t.k_slices = std::max(st.k_slices(), 1);
  t.k_merge_none = t.k_slices > 1 && st.k_merge() != ir::K_MERGE_ORDERED_WORKSPACE;
  t.raster_group_m = std::max(st.raster_group_m(), 1);

  // Roles: one covering the whole CTA, or a compute role of contiguous warps and a one-warp
  // loader.
  auto ri = g.roles.find(role->op->role_region().role());
  if (ri == g.roles.end()) return Unsupported(lowering, "unknown role");
  t.threads = k.launch().threads_per_cta();
  // A kernel lowered without its declared cluster would run, but not as the schedule says.
  if (k.launch().cluster_size() > 1)
    return Unsupported(lowering, "thread block clusters are not lowered (cluster_size > 1)");
  const ir::Role& compute_role = *ri->second;
  t.compute_warps = compute_role.warps_size();
  t.first_compute_warp = t.compute_warps > 0 ? compute_role.warps(0) : 0;
  for (int i = 0; i < t.compute_warps; ++i)
    if (compute_role.warps(i) != t.first_compute_warp + i)
      return Unsupported(lowering, "the compute role's warps must be contiguous and ascending");
  if (!t.warp_specialized) {
    if (compute_role.register_budget() != 0)
      return Unsupported(lowering, "register budgets are lowered beside a loader warpgroup only");
    if (t.compute_warps * 32 != t.threads)
      return Unsupported(lowering, "a single role owning every warp is required");
  } else {
    auto li = g.roles.find(loader->op->role_region().role());
    if (li == g.roles.end()) return Unsupported(lowering, "unknown loader role");
    const ir::Role& loader_role = *li->second;
    t.loader_warps = loader_role.warps_size();
    t.loader_warp = t.loader_warps > 0 ? loader_role.warps(0) : -1;
    for (int i = 0; i < t.loader_warps; ++i)
      if (loader_role.warps(i) != t.loader_warp + i)
        return Unsupported(lowering, "the loader role's warps must be contiguous and ascending");
    // Registers move between roles by setmaxnreg, which every warp of a warpgroup executes: a
    // budgeted loader is a whole warpgroup (the verifier checks alignment and the SM's total).
    t.compute_registers = compute_role.register_budget();
    t.loader_registers = loader_role.register_budget();
    if ((t.compute_registers == 0) != (t.loader_registers == 0))
      return Unsupported(lowering, "both roles state a register budget, or neither");
    if (t.compute_registers == 0 && t.loader_warps != 1)
      return Unsupported(lowering, "an unbudgeted loader role is one warp");
    if (t.compute_registers != 0 && t.loader_warps != 4)
      return Unsupported(lowering, "a loader with a register budget is one warpgroup (4 warps)");
    if ((t.compute_warps + t.loader_warps) * 32 != t.threads)
      return Unsupported(lowering, "the compute warps and the loader warps must be every warp");
  }

  // Instruction.
  if (k.instrs_size() != 1) return Unsupported(lowering, "exactly one MMA instruction is required");
  const ir::MmaInstr& instr = k.instrs(0);
  const bool bf16 = instr.shape() == ir::M16N8K16 && instr.a() == ir::BF16 &&
                    instr.b() == ir::BF16 && !instr.has_block_scale();
  // 8-bit: legacy e4m3/e5m2, or the block-scaled kind::mxf8f6f4 with UE8M0 per 32 (unit scales).
  const bool fp8 = instr.shape() == ir::M16N8K32 &&
                   (instr.a() == ir::E4M3 || instr.a() == ir::E5M2) && instr.b() == instr.a() &&
                   (!instr.has_block_scale() || (instr.block_scale().format() == ir::UE8M0 &&
                                                 instr.block_scale().group_size() == 32));
  // NVFP4: E2M1 packed operands, kind::mxf4nvf4 with UE4M3 scale tensors per 16.
  const bool fp4 = instr.shape() == ir::M16N8K64 && instr.a() == ir::E2M1 &&
                   instr.b() == ir::E2M1 && instr.has_block_scale() &&
                   instr.block_scale().format() == ir::UE4M3 &&
                   instr.block_scale().group_size() == 16;
  if (instr.family() != ir::WARP_SYNC || instr.accumulator() != ir::F32 || (!bf16 && !fp8 && !fp4))
    return Unsupported(
        lowering,
        "only mma.sync m16n8k16 BF16, m16n8k32 E4M3/E5M2 (legacy, or block-scaled "
        "with UE8M0 per 32) and m16n8k64 E2M1 (block-scaled with UE4M3 per 16) -> F32 are "
        "lowered");
  bool shape_known = false;
  const InstrDescriptor* form = FindMma(instr, &shape_known);
  if (form == nullptr) return Unsupported(lowering, "no admission-table form for the MMA");
  t.mma_key = std::string(form->key);
  t.mma_ptx = std::string(form->ptx_form);
  t.unit_scales = fp8 && instr.has_block_scale();
  t.elements_per_unit = fp4 ? 4 : fp8 ? 2 : 1;
  // In elements: a k step of the MMA, 16 BF16, 32 FP8 or 64 FP4 (two 16-byte chunks of a row).
  if (t.tile_k % (16 * t.elements_per_unit) != 0)
    return Unsupported(lowering, fp4   ? "a 4-bit k-tile must be a multiple of 64"
                                 : fp8 ? "an 8-bit k-tile must be a multiple of 32"
                                       : "k-tile must be a multiple of 16");

  for (const ir::TensorParam& tp : k.tensors())
    for (const std::string& other : tp.may_alias()) {
      t.may_alias.insert(tp.name());
      t.may_alias.insert(other);
    }

  // Accumulator.
  if (k.accumulators_size() != 1)
    return Unsupported(lowering, "exactly one accumulator is required");
  const ir::Accumulator& acc = k.accumulators(0);
  t.warps_m = acc.partition().rows();
  t.warps_n = acc.partition().cols();
  if (t.warps_m * t.warps_n != t.compute_warps)
    return Unsupported(lowering, "the accumulator warp grid must cover the compute role's warps");
  if (acc.init() != ir::Accumulator::ZERO)
    return Unsupported(lowering, "accumulator init must be ZERO");
  if (t.tile_m % (16 * t.warps_m) != 0 || t.tile_n % (8 * t.warps_n) != 0)
    return Unsupported(lowering, "tile does not divide into warp fragments");

  // Pipeline.
  if (k.pipelines_size() != 1) return Unsupported(lowering, "exactly one pipeline is required");
  const ir::Pipeline& pipe = k.pipelines(0);
  if (pipe.transfer() != ir::CP_ASYNC && pipe.transfer() != ir::TMA)
    return Unsupported(lowering, "only CP_ASYNC and TMA pipelines are lowered");
  t.transfer = pipe.transfer();
  if (t.elements_per_unit > 1 && t.transfer != ir::CP_ASYNC)
    return Unsupported(lowering, "8-bit and 4-bit operands are lowered with CP_ASYNC stages only");
  t.stages = pipe.stages();
  if (t.warp_specialized && t.transfer != ir::TMA)
    return Unsupported(lowering, "a loader warp is lowered for TMA pipelines only");
  if (t.stages < 1 || t.stages > 4) return Unsupported(lowering, "1..4 stages are lowered");

  // Copies.
  if (produce->children.size() != 2) return Unsupported(lowering, "produce must hold two copies");
  const ir::Buffer* abuf = nullptr;
  const ir::Buffer* bbuf = nullptr;
  for (const OpNode* c : produce->children) {
    if (!c->op->has_copy()) return Unsupported(lowering, "produce may only hold copies");
    const ir::Copy& copy = c->op->copy();
    if (copy.transfer() != t.transfer)
      return Unsupported(lowering, "copies must use the pipeline's transfer");
    if (t.transfer == ir::CP_ASYNC && copy.vector_bytes() != 16)
      return Unsupported(lowering, "cp.async copies must be 16-byte");
    auto bi = g.buffers.find(copy.dst());
    if (bi == g.buffers.end()) return Unsupported(lowering, "copy destination unknown");
    const bool zero_fill = copy.mask() == ir::MASK_ZERO_FILL;
    if (copy.origin() == ir::Copy::TILE_M_K) {
      t.a = copy.src();
      abuf = bi->second;
      t.op_copy_a = c->op->id();
      t.mask_mk = zero_fill;
    } else if (copy.origin() == ir::Copy::TILE_N_K) {
      t.b = copy.src();
      bbuf = bi->second;
      t.op_copy_b = c->op->id();
      t.mask_mk = t.mask_mk || zero_fill;
    } else {
      return Unsupported(lowering, "copy origin must be TILE_M_K or TILE_N_K");
    }
  }
  if (abuf == nullptr || bbuf == nullptr)
    return Unsupported(lowering, "one A copy and one B copy required");

  // Consume: two matrix loads, one mma, release (last; earlier only with the pipeline rules
  // unchecked, and only for TMA, where the lowering can place the arrive at the first k step).
  // A block-scaled MMA over scale tensors adds their two scale loads.
  const size_t consume_ops = fp4 ? 6 : 4;
  if (consume->children.size() != consume_ops)
    return Unsupported(lowering, fp4 ? "consume must hold two matrix loads, two scale loads, an "
                                       "mma and a release"
                                     : "consume must hold two matrix loads, an mma and a release");
  std::map<std::string, const ir::Operation*> scale_loads;  // by result
  int release_at = -1, last_read_at = -1;
  for (int i = 0; i < static_cast<int>(consume_ops); ++i) {
    const ir::Operation& op = *consume->children[i]->op;
    if (op.has_scale_load() && fp4) {
      // Read straight from global memory: each lane's word is one row's (A) or column's (B)
      // four scales of one MMA k step.
      if (!g.tensors.count(op.scale_load().src()) || op.results_size() != 1)
        return Unsupported(lowering, "a scale load reads a global scale tensor into one value");
      std::string& tensor = op.scale_load().operand() == ir::OPERAND_A ? t.scale_a : t.scale_b;
      std::string& id = op.scale_load().operand() == ir::OPERAND_A ? t.op_scale_a : t.op_scale_b;
      if (!tensor.empty()) return Unsupported(lowering, "one scale load per operand");
      tensor = op.scale_load().src();
      id = op.id();
      scale_loads[op.results(0)] = &op;
    } else if (op.has_release()) {
      if (!t.op_release.empty()) return Unsupported(lowering, "consume holds two releases");
      t.op_release = op.id();
      release_at = i;
    } else if (op.has_matrix_load()) {
      last_read_at = i;
      const ir::MatrixLoad& ml = op.matrix_load();
      if (ml.operand() == ir::OPERAND_A) {
        if (ml.form() != ir::LDMATRIX_X4 || ml.src() != abuf->name())
          return Unsupported(lowering, "operand A is loaded with LDMATRIX_X4 from the A stage");
        t.op_load_a = op.id();
      } else {
        if ((ml.form() != ir::LDMATRIX_X4 && ml.form() != ir::LDMATRIX_X2) ||
            ml.src() != bbuf->name())
          return Unsupported(lowering, "operand B is loaded with LDMATRIX_X4/X2 from the B stage");
        t.b_load_x4 = ml.form() == ir::LDMATRIX_X4;
        t.op_load_b = op.id();
      }
    } else if (op.has_mma()) {
      t.op_mma = op.id();
      if (fp4 && (!scale_loads.count(op.mma().scale_a()) || !scale_loads.count(op.mma().scale_b())))
        return Unsupported(lowering,
                           "the MMA's scales are the consume's scale loads, loaded before it");
      // Scale tensors (scale_load) are not lowered yet: a block-scaled MMA takes unit scales.
      if (t.unit_scales && (!unit_scale_values.count(op.mma().scale_a()) ||
                            !unit_scale_values.count(op.mma().scale_b())))
        return Unsupported(lowering,
                           "a block-scaled MMA is lowered with unit scales (scale_unit) only");
    } else {
      return Unsupported(lowering, "unexpected operation in consume");
    }
  }
  if (t.op_load_a.empty() || t.op_load_b.empty() || t.op_mma.empty() || t.op_release.empty())
    return Unsupported(lowering, "consume needs an A load, a B load, an mma and a release");
  if (fp4 && (t.scale_a.empty() || t.scale_b.empty()))
    return Unsupported(lowering, "a scale load for each operand is required");
  if (fp4 && t.k_slices > 1)
    return Unsupported(lowering, "scale tensors are lowered without split-K");
  t.release_early = release_at < last_read_at;  // a release after the loads reads registers only
  // Persistent CTAs carry one TMA ring's phase across their tiles (one role: thread 0 refills).
  if (t.persistent &&
      (t.transfer != ir::TMA || t.warp_specialized || t.k_slices > 1 || t.release_early))
    return Unsupported(lowering,
                       "a persistent tile loop is lowered for one-role TMA pipelines without "
                       "split-K only");
  if (t.release_early && (t.transfer != ir::TMA || t.warp_specialized))
    return Unsupported(lowering,
                       "a release before the consume's last read is lowered for TMA without a "
                       "loader warp only");
  if (t.b_load_x4 && (t.tile_n / t.warps_n / 8) % 2 != 0)
    return Unsupported(lowering, "LDMATRIX_X4 for B needs an even number of n8 tiles per warp");

  // Shared representations.
  auto check_repr = [&](const ir::Buffer& b, int rows, ir::Representation::Kind* kind,
                        int* pad) -> absl::Status {
    const ir::DType operand = t.elements_per_unit > 1 ? instr.a() : ir::BF16;
    if (b.dtype() != operand || b.shape().dims_size() != 2 ||
        ConstDim(b.shape().dims(0)).value_or(0) != rows ||
        ConstDim(b.shape().dims(1)).value_or(0) != t.tile_k)
      return Unsupported(
          lowering, absl::StrCat("stage buffer '", b.name(), "' must be ", ir::DType_Name(operand),
                                 " [", rows, ", ", t.tile_k, "]"));
    *kind = b.representation().kind();
    *pad = b.representation().padding_elements();
    if (t.elements_per_unit == 2 && *kind != ir::Representation::ROW_MAJOR)
      return Unsupported(lowering, "8-bit stages are lowered ROW_MAJOR (padded) only");
    if (t.elements_per_unit == 4 && *kind != ir::Representation::PACKED_FP4)
      return Unsupported(lowering, "4-bit stages are lowered PACKED_FP4 (padded) only");
    if (*kind == ir::Representation::ROW_MAJOR || *kind == ir::Representation::PACKED_FP4) {
      // Padding in bits (16 / elements_per_unit an element) keeps 16-byte rows.
      if (*pad * 16 / t.elements_per_unit % 128 != 0)
        return Unsupported(lowering, "padding must keep 16-byte rows");
    } else if (*kind == ir::Representation::SWIZZLE_64B) {
      if (t.tile_k != 32 || *pad != 0)
        return Unsupported(lowering, "SWIZZLE_64B needs k-tile 32, no pad");
    } else if (*kind == ir::Representation::SWIZZLE_128B) {
      if (t.tile_k != 64 || *pad != 0)
        return Unsupported(lowering, "SWIZZLE_128B needs k-tile 64, no pad");
    } else {
      return Unsupported(lowering,
                         "stage representation must be ROW_MAJOR, SWIZZLE_64B or SWIZZLE_128B");
    }
    if (b.pipeline() != pipe.name())
      return Unsupported(lowering, "stage buffers belong to the pipeline");
    // A TMA box lands dense, in the tensor map's swizzle; ldmatrix then reads it with the same
    // pattern (SwizzleExpr is TMA's 64 B / 128 B pattern for 64 B / 128 B rows; a row-major
    // stage takes the box unswizzled). A padded row-major stage reads other bytes than the box
    // wrote: analysis rejects it (DIAG_PIPE_TMA_LAYOUT); lowered only with the pipeline rules
    // unchecked, as written, so that rule's hazard can be shown on a GPU.
    if (t.transfer == ir::TMA && rows > 256)
      return Unsupported(lowering, "a TMA box has at most 256 rows");
    return absl::OkStatus();
  };
  absl::Status s = check_repr(*abuf, t.tile_m, &t.a_repr, &t.a_padding);
  if (!s.ok()) return s;
  s = check_repr(*bbuf, t.tile_n, &t.b_repr, &t.b_padding);
  if (!s.ok()) return s;
  if (t.elements_per_unit > 1) {  // from here on, 16-bit units of adjacent K elements
    t.tile_k /= t.elements_per_unit;
    t.a_padding /= t.elements_per_unit;
    t.b_padding /= t.elements_per_unit;
  }

  t.shared = PlanShared(g);
  for (const SharedRegionPlan& r : t.shared.regions) {
    if (r.name == abuf->name()) {
      t.a_offset = r.offset;
      t.a_stage_bytes = r.bytes_per_stage;
    }
    if (r.name == bbuf->name()) {
      t.b_offset = r.offset;
      t.b_stage_bytes = r.bytes_per_stage;
    }
  }
  if (t.shared.regions.size() != 2)
    return Unsupported(lowering, "exactly two shared buffers are lowered");
  if (t.transfer == ir::TMA) {
    // The swizzle pattern repeats every 8 rows of the swizzle span: each stage must start on
    // such a boundary (the dynamic shared base is 1024-byte aligned, checked in the kernel).
    const int64_t atom = t.tile_k * 2 * 8;
    for (int64_t v : {t.a_offset, t.a_stage_bytes, t.b_offset, t.b_stage_bytes})
      if (v % atom != 0)
        return Unsupported(lowering, absl::StrCat("TMA stages must be ", atom, "-byte aligned"));
    if (t.a_stage_bytes != int64_t{t.tile_m} * (t.tile_k + t.a_padding) * 2 ||
        t.b_stage_bytes != int64_t{t.tile_n} * (t.tile_k + t.b_padding) * 2)
      return Unsupported(lowering, "TMA stages must be exactly one box (plus padding)");
    t.barrier_offset = t.shared.total_bytes - t.shared.barrier_bytes;
    if (t.shared.barrier_bytes < 16 * t.stages || t.barrier_offset % 8 != 0)
      return Unsupported(lowering, "no mbarrier storage planned for the TMA stages");
  }
  return t;
}

absl::Status CheckTmaSources(const WarpTiles& t, const KernelGraph& g, const std::string& k,
                             const std::string& lowering) {
  if (t.transfer != ir::TMA) return absl::OkStatus();
  for (const std::string& name : {t.a, t.b}) {
    auto ti = g.tensors.find(name);
    if (ti == g.tensors.end()) return LoweringUnsupported(lowering, "TMA source unresolved");
    if (ti->second->alignment_bytes() < 16 || ti->second->alignment_bytes() % 16 != 0)
      return LoweringUnsupported(
          lowering, absl::StrCat("a TMA source needs 16-byte alignment; '", name, "' declares ",
                                 ti->second->alignment_bytes()));
  }
  auto si = g.scalars.find(k);
  if (si == g.scalars.end() || si->second->multiple_of() <= 0 || si->second->multiple_of() % 8 != 0)
    return LoweringUnsupported(lowering,
                               absl::StrCat("a TMA row pitch must be a multiple of 16 bytes: '", k,
                                            "' needs multiple_of 8"));
  return absl::OkStatus();
}

}  // namespace cake::compiler
