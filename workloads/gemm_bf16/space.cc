#include "space.h"

#include <set>
#include <tuple>
#include <utility>

#include "absl/strings/str_cat.h"

namespace cake::workloads::gemm_bf16 {
namespace {

ir::Dim Sym(const std::string& s) {
  ir::Dim d;
  d.set_symbol(s);
  return d;
}
ir::Dim Size(int64_t n) {
  ir::Dim d;
  d.set_size(n);
  return d;
}

ir::TensorParam* AddTensor(ir::Kernel* k, const std::string& name, ir::DType t, ir::Access access,
                           const std::string& rows, const std::string& cols) {
  ir::TensorParam* p = k->add_tensors();
  p->set_name(name);
  p->set_dtype(t);
  p->set_access(access);
  p->set_alignment_bytes(16);
  *p->mutable_shape()->add_dims() = Sym(rows);
  *p->mutable_shape()->add_dims() = Sym(cols);
  p->mutable_representation()->set_kind(ir::Representation::ROW_MAJOR);
  return p;
}

ir::Operation* Op(google::protobuf::RepeatedPtrField<ir::Operation>* ops, const std::string& id) {
  ir::Operation* op = ops->Add();
  op->set_id(id);
  return op;
}

}  // namespace

std::string WarpGemmParams::Describe() const {
  std::string repr = smem == ir::Representation::ROW_MAJOR     ? absl::StrCat("pad", padding)
                     : smem == ir::Representation::SWIZZLE_64B ? "swz64"
                                                               : "swz128";
  return absl::StrCat(
      tile_m, "x", tile_n, "x", tile_k, " w", warps_m, "x", warps_n, " s", stages, " ", repr,
      b_load_x4 ? " x4" : " x2", out == ir::F32 ? " f32" : " bf16",
      transfer == ir::TMA ? " tma" : "",
      !warp_specialized  ? ""
      : loader_warps > 1 ? absl::StrCat(" ws", loader_warps)
                         : " ws",
      compute_registers > 0 ? absl::StrCat(" r", compute_registers, "/", loader_registers) : "",
      k_slices > 1 ? absl::StrCat(" k", k_slices) : "",
      k_slices > 1 && k_merge != ir::K_MERGE_ORDERED_WORKSPACE ? " unmerged" : "",
      raster_group_m > 1 ? absl::StrCat(" g", raster_group_m) : "", stage_store ? " st" : "",
      !persistent    ? ""
      : max_ctas > 0 ? absl::StrCat(" p", max_ctas)
                     : " p");
}

ir::Module MakeWarpGemm(const WarpGemmParams& p) {
  ir::Module m;
  m.set_name(p.name);
  m.mutable_target()->set_arch(p.arch);
  m.mutable_target()->set_ptx_version(p.ptx_version);
  ir::Kernel* k = m.add_kernels();
  k->set_name(p.name);
  for (const char* s : {"M", "N", "K"}) {
    ir::ScalarParam* sp = k->add_scalars();
    sp->set_name(s);
    sp->set_dtype(ir::S32);
    sp->set_min(std::string(s) == "K" ? 8 : 1);
    if (std::string(s) == "K") sp->set_multiple_of(8);
  }
  AddTensor(k, "A", ir::BF16, ir::READ_ONLY, "M", "K");
  AddTensor(k, "B", ir::BF16, ir::READ_ONLY, "N", "K");
  AddTensor(k, "C", p.out, ir::WRITE_ONLY, "M", "N");
  const int warps = p.warps_m * p.warps_n;
  const int loader_warps = p.warp_specialized ? p.loader_warps : 0;
  k->mutable_launch()->set_threads_per_cta(32 * (warps + loader_warps));
  ir::Role* role = k->add_roles();
  role->set_name("compute");
  for (int w = 0; w < warps; ++w) role->add_warps(w);
  role->set_issuer(ir::Role::ALL_LANES);
  if (p.compute_registers > 0) role->set_register_budget(p.compute_registers);
  const std::string producer = p.warp_specialized ? "loader" : "compute";
  if (p.warp_specialized) {
    ir::Role* loader = k->add_roles();
    loader->set_name(producer);
    for (int w = warps; w < warps + loader_warps; ++w) loader->add_warps(w);  // after the grid
    loader->set_issuer(ir::Role::ELECTED_LANE);
    if (p.loader_registers > 0) loader->set_register_budget(p.loader_registers);
  }
  ir::MmaInstr* instr = k->add_instrs();
  instr->set_name("mma");
  instr->set_family(ir::WARP_SYNC);
  instr->set_shape(ir::M16N8K16);
  instr->set_a(ir::BF16);
  instr->set_b(ir::BF16);
  instr->set_accumulator(ir::F32);
  ir::Accumulator* acc = k->add_accumulators();
  acc->set_name("acc");
  acc->set_dtype(ir::F32);
  acc->set_owner("compute");
  acc->set_mma("mma");
  acc->set_init(ir::Accumulator::ZERO);
  *acc->mutable_shape()->add_dims() = Size(p.tile_m);
  *acc->mutable_shape()->add_dims() = Size(p.tile_n);
  acc->mutable_partition()->set_rows(p.warps_m);
  acc->mutable_partition()->set_cols(p.warps_n);
  ir::Pipeline* pipe = k->add_pipelines();
  pipe->set_name("ab");
  pipe->set_stages(p.stages);
  pipe->set_transfer(p.transfer);
  pipe->add_producers(producer);
  pipe->add_consumers("compute");
  for (auto [name, rows] :
       {std::pair<const char*, int>{"a_stage", p.tile_m}, {"b_stage", p.tile_n}}) {
    ir::Buffer* b = k->add_buffers();
    b->set_name(name);
    b->set_space(ir::SHARED);
    b->set_dtype(ir::BF16);
    b->set_pipeline("ab");
    b->set_alignment_bytes(128);
    *b->mutable_shape()->add_dims() = Size(rows);
    *b->mutable_shape()->add_dims() = Size(p.tile_k);
    b->mutable_representation()->set_kind(p.smem);
    if (p.smem == ir::Representation::ROW_MAJOR)
      b->mutable_representation()->set_padding_elements(p.padding);
  }
  ir::WorkSchedule* work = k->add_work();
  work->set_name("tiles");
  ir::StaticTiles* tiles_of_c =
      p.persistent ? work->mutable_persistent()->mutable_tiles() : work->mutable_static_tiles();
  if (p.persistent && p.max_ctas > 0) work->mutable_persistent()->set_max_ctas(p.max_ctas);
  tiles_of_c->set_output("C");
  tiles_of_c->set_tile_m(p.tile_m);
  tiles_of_c->set_tile_n(p.tile_n);
  if (p.k_slices > 1) {
    tiles_of_c->set_k_slices(p.k_slices);
    tiles_of_c->set_k_merge(p.k_merge);
  }
  if (p.raster_group_m > 1) tiles_of_c->set_raster_group_m(p.raster_group_m);

  ir::Operation* main = Op(k->mutable_ops(), "main");
  main->mutable_role_region()->set_role("compute");
  ir::Operation* tiles = Op(main->mutable_body(), "tile_loop");
  tiles->mutable_for_each_tile()->set_work("tiles");
  ir::Operation* kloop = Op(tiles->mutable_body(), "k_loop");
  kloop->mutable_for_k_tiles()->set_k("K");
  kloop->mutable_for_k_tiles()->set_extent(p.tile_k);
  // The fill runs in the compute role's k loop, or in the loader's own loop over the same tiles
  // and k-tiles.
  ir::Operation* fill_loop = kloop;
  if (p.warp_specialized) {
    ir::Operation* load = Op(k->mutable_ops(), "load_role");
    load->mutable_role_region()->set_role(producer);
    ir::Operation* load_tiles = Op(load->mutable_body(), "load_tiles");
    load_tiles->mutable_for_each_tile()->set_work("tiles");
    fill_loop = Op(load_tiles->mutable_body(), "load_k");
    fill_loop->mutable_for_k_tiles()->set_k("K");
    fill_loop->mutable_for_k_tiles()->set_extent(p.tile_k);
  }
  ir::Operation* fill = Op(fill_loop->mutable_body(), "fill");
  fill->mutable_produce()->set_pipeline("ab");
  for (auto [id, src, dst, origin] :
       {std::tuple<const char*, const char*, const char*, ir::Copy::Origin>{
            "copy_a", "A", "a_stage", ir::Copy::TILE_M_K},
        {"copy_b", "B", "b_stage", ir::Copy::TILE_N_K}}) {
    ir::Copy* c = Op(fill->mutable_body(), id)->mutable_copy();
    c->set_src(src);
    c->set_dst(dst);
    c->set_transfer(p.transfer);
    c->set_vector_bytes(16);
    c->set_mask(ir::MASK_ZERO_FILL);
    c->set_origin(origin);
  }
  ir::Operation* read = Op(kloop->mutable_body(), "read");
  read->mutable_consume()->set_pipeline("ab");
  ir::Operation* la = Op(read->mutable_body(), "load_a");
  la->add_results("fa");
  la->mutable_matrix_load()->set_src("a_stage");
  la->mutable_matrix_load()->set_operand(ir::OPERAND_A);
  la->mutable_matrix_load()->set_mma("mma");
  la->mutable_matrix_load()->set_form(ir::LDMATRIX_X4);
  ir::Operation* lb = Op(read->mutable_body(), "load_b");
  lb->add_results("fb");
  lb->mutable_matrix_load()->set_src("b_stage");
  lb->mutable_matrix_load()->set_operand(ir::OPERAND_B);
  lb->mutable_matrix_load()->set_mma("mma");
  lb->mutable_matrix_load()->set_form(p.b_load_x4 ? ir::LDMATRIX_X4 : ir::LDMATRIX_X2);
  ir::Mma* mma = Op(read->mutable_body(), "mma_step")->mutable_mma();
  mma->set_instr("mma");
  mma->set_a("fa");
  mma->set_b("fb");
  mma->set_acc("acc");
  Op(read->mutable_body(), "release")->mutable_release()->set_pipeline("ab");
  ir::StoreAccumulator* st = Op(tiles->mutable_body(), "store")->mutable_store_accumulator();
  st->set_acc("acc");
  st->set_dst("C");
  st->set_cast(p.out);
  st->set_mask(ir::MASK_BOUNDS);
  if (p.stage_store) st->set_stage_in_shared(true);
  return m;
}

namespace {

void AddPoint(std::vector<WarpGemmParams>& out, int tm, int tn, int tk, int wm, int wn, int stages,
              ir::Representation::Kind r, ir::Transfer transfer = ir::CP_ASYNC) {
  WarpGemmParams p;
  p.tile_m = tm;
  p.tile_n = tn;
  p.tile_k = tk;
  p.warps_m = wm;
  p.warps_n = wn;
  p.stages = stages;
  p.smem = r;
  p.padding = r == ir::Representation::ROW_MAJOR ? 8 : 0;
  p.transfer = transfer;
  out.push_back(p);
}

}  // namespace

std::vector<WarpGemmParams> WarpGemmCandidates() {
  std::vector<WarpGemmParams> out;
  auto add = [&](int tm, int tn, int tk, int wm, int wn, int stages, ir::Representation::Kind r) {
    AddPoint(out, tm, tn, tk, wm, wn, stages, r);
  };
  using R = ir::Representation;
  add(128, 128, 32, 2, 2, 3, R::ROW_MAJOR);  // [0]: the baseline's geometry
  // First after the baseline, the fastest SM120-legal point measured per clock on sm_90
  // (evidence/gemm_bench/staged_store: TMA ring, raster bands of 16 rows, staged epilogue).
  AddPoint(out, 128, 128, 64, 2, 2, 3, R::SWIZZLE_128B, ir::TMA);
  out.back().raster_group_m = 16;
  out.back().stage_store = true;
  add(128, 128, 32, 2, 2, 4, R::SWIZZLE_64B);
  add(128, 128, 64, 2, 2, 3, R::SWIZZLE_128B);
  add(128, 256, 32, 2, 4, 3, R::SWIZZLE_64B);
  add(256, 128, 32, 4, 2, 3, R::SWIZZLE_64B);
  add(128, 128, 32, 2, 4, 4, R::SWIZZLE_64B);
  add(64, 128, 64, 2, 2, 4, R::SWIZZLE_128B);
  add(128, 64, 32, 2, 2, 2, R::ROW_MAJOR);
  return out;
}

std::vector<WarpGemmParams> WarpGemmFamily() {
  std::vector<WarpGemmParams> out = WarpGemmCandidates();
  auto add = [&](int tm, int tn, int tk, int wm, int wn, int stages, ir::Representation::Kind r) {
    AddPoint(out, tm, tn, tk, wm, wn, stages, r);
  };
  using R = ir::Representation;
  // Eight warps of 64x64 (the classic mma.sync shape), deeper rings, k-tile 64; every ring fits
  // SM120's 101,376 B of shared memory per block.
  add(128, 256, 32, 2, 4, 4, R::SWIZZLE_64B);
  add(128, 256, 64, 2, 4, 2, R::SWIZZLE_128B);
  add(256, 128, 32, 4, 2, 4, R::SWIZZLE_64B);
  add(256, 128, 64, 4, 2, 2, R::SWIZZLE_128B);
  // Skinny M: short CTA tiles so more CTAs share N.
  add(16, 128, 64, 1, 4, 4, R::SWIZZLE_128B);
  add(32, 128, 64, 1, 4, 4, R::SWIZZLE_128B);
  add(64, 64, 64, 2, 2, 4, R::SWIZZLE_128B);
  add(64, 128, 64, 1, 4, 4, R::SWIZZLE_128B);
  add(16, 64, 64, 1, 2, 4, R::SWIZZLE_128B);
  // The same rings filled by TMA: one thread issues a stage's two boxes, so the compute warps
  // issue no copy or address arithmetic in the main loop.
  auto tma = [&](int tm, int tn, int tk, int wm, int wn, int stages, ir::Representation::Kind r) {
    AddPoint(out, tm, tn, tk, wm, wn, stages, r, ir::TMA);
  };
  tma(128, 256, 64, 2, 4, 2, R::SWIZZLE_128B);
  tma(256, 128, 64, 4, 2, 2, R::SWIZZLE_128B);
  tma(128, 256, 32, 2, 4, 4, R::SWIZZLE_64B);
  tma(256, 128, 32, 4, 2, 4, R::SWIZZLE_64B);
  tma(128, 128, 64, 2, 2, 3, R::SWIZZLE_128B);
  tma(128, 128, 32, 2, 2, 4, R::SWIZZLE_64B);
  tma(64, 128, 64, 1, 4, 4, R::SWIZZLE_128B);
  tma(64, 64, 64, 2, 2, 4, R::SWIZZLE_128B);
  tma(32, 128, 64, 1, 4, 4, R::SWIZZLE_128B);
  tma(16, 128, 64, 1, 4, 4, R::SWIZZLE_128B);
  // A loader warp fills the ring; the four compute warps only wait, read and release. (Eight
  // compute warps of 64x64 beside a loader spill: ptxas sizes registers for 12 warps, 168 per
  // thread, and sm_90 has no setmaxnreg to move the loader's registers to them.)
  tma(128, 128, 64, 2, 2, 3, R::SWIZZLE_128B);
  out.back().warp_specialized = true;
  // Banded tile order: row-major order puts the ~264 resident 128x128 CTAs of a large GEMM on
  // 4 tile rows and 64 tile columns, so B streams from DRAM once per 4 rows (ncu at 8192^3:
  // DRAM 81 % busy, L2 hit rate 56 %). Bands of 16 rows make the resident set near square.
  for (auto [tm, tn, wm, wn, stages, group] :
       {std::tuple{128, 128, 2, 2, 3, 16}, std::tuple{128, 128, 2, 2, 3, 8},
        std::tuple{128, 256, 2, 4, 2, 16}, std::tuple{256, 128, 4, 2, 2, 8}}) {
    tma(tm, tn, 64, wm, wn, stages, R::SWIZZLE_128B);
    out.back().raster_group_m = group;
  }
  // The same through a shared staging tile: 16-byte stores of whole row chunks instead of
  // 4-byte fragment pairs spread over 8 rows per instruction (the banded TMA point with a staged
  // store is among the candidates).
  add(128, 128, 32, 2, 2, 4, R::SWIZZLE_64B);  // cp.async
  out.back().stage_store = true;
  tma(128, 128, 64, 2, 2, 3, R::SWIZZLE_128B);  // a loader warp
  out.back().warp_specialized = true;
  out.back().stage_store = true;
  // Persistent CTAs: one wave of resident CTAs walks all the tiles, so a tile's epilogue
  // overlaps the fill of the CTA's next tile (one wave at 2048^3 leaves nothing to overlap).
  tma(128, 128, 64, 2, 2, 3, R::SWIZZLE_128B);
  out.back().raster_group_m = 16;
  out.back().persistent = true;
  // Skinny M leaves SMs idle (16x8192 is 64 tiles of 16x128): split-K puts 2-4 CTAs on each
  // tile and merges their FP32 partials through the workspace.
  for (auto [tm, tn, wm, wn, slices] :
       {std::tuple{16, 128, 1, 4, 4}, std::tuple{16, 128, 1, 4, 2}, std::tuple{64, 64, 2, 2, 2},
        std::tuple{32, 128, 1, 4, 2}}) {
    tma(tm, tn, 64, wm, wn, 4, R::SWIZZLE_128B);
    out.back().k_slices = slices;
  }
  return out;
}

std::vector<WarpGemmParams> WarpGemmSearchSpace() {
  std::vector<WarpGemmParams> out = WarpGemmCandidates();
  std::set<std::string> seen;
  for (const WarpGemmParams& p : out) seen.insert(p.Describe());
  constexpr int64_t kSm120SharedPerBlock = 101376;
  using R = ir::Representation;
  for (auto [tm, tn] : {std::pair{64, 64}, std::pair{64, 128}, std::pair{128, 64},
                        std::pair{128, 128}, std::pair{128, 256}, std::pair{256, 128}})
    for (auto [wm, wn] :
         {std::pair{2, 2}, std::pair{1, 4}, std::pair{4, 1}, std::pair{2, 4}, std::pair{4, 2}}) {
      const int warp_m = tm / wm, warp_n = tn / wn;
      if (warp_m < 32 || warp_m > 64 || warp_n < 32 || warp_n > 64) continue;
      for (int tk : {32, 64})
        for (int stages : {2, 3, 4}) {
          if (int64_t{stages} * (tm + tn) * tk * 2 > kSm120SharedPerBlock) continue;
          for (ir::Transfer transfer : {ir::CP_ASYNC, ir::TMA})
            for (int group : {1, 8, 16})
              for (bool staged : {false, true}) {
                // A staged epilogue reuses the ring for the tile (rows padded by 16 bytes).
                if (staged && int64_t{tm} * (tn + 8) * 2 > int64_t{stages} * (tm + tn) * tk * 2)
                  continue;
                AddPoint(out, tm, tn, tk, wm, wn, stages,
                         tk == 32 ? R::SWIZZLE_64B : R::SWIZZLE_128B, transfer);
                out.back().raster_group_m = group;
                out.back().stage_store = staged;
                if (!seen.insert(out.back().Describe()).second) out.pop_back();
              }
        }
    }
  return out;
}

std::vector<WarpGemmParams> WarpGemmSm90OnlyPoints() {
  std::vector<WarpGemmParams> out;
  using R = ir::Representation;
  auto tma = [&](int tm, int tn, int tk, int wm, int wn, int stages) {
    AddPoint(out, tm, tn, tk, wm, wn, stages, R::SWIZZLE_128B, ir::TMA);
  };
  tma(128, 256, 64, 2, 4, 3);  // 144 KiB ring
  tma(128, 256, 64, 2, 4, 4);  // 192 KiB
  tma(256, 128, 64, 4, 2, 3);
  tma(256, 128, 64, 4, 2, 4);
  tma(128, 128, 64, 2, 2, 4);  // 128 KiB: one CTA per SM
  tma(128, 128, 64, 2, 2, 4);  // the same with a loader warp
  out.back().warp_specialized = true;
  // The widest rings in bands (one CTA per SM: ~132 resident tiles).
  tma(128, 256, 64, 2, 4, 3);
  out.back().raster_group_m = 16;
  tma(128, 256, 64, 2, 4, 3);
  out.back().raster_group_m = 16;
  out.back().stage_store = true;
  tma(128, 256, 64, 2, 4, 3);
  out.back().raster_group_m = 16;
  out.back().persistent = true;
  tma(256, 128, 64, 4, 2, 4);
  out.back().raster_group_m = 8;
  return out;
}

}  // namespace cake::workloads::gemm_bf16
