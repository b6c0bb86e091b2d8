#include "warp_tiles.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"

namespace cake::compiler {
namespace {

// Writes a block of source text, one line at a time.
void Lines(SourceWriter& w, absl::string_view text) {
  for (absl::string_view line : absl::StrSplit(text, '\n')) w.Line(std::string(line));
}

// A persistent CTA counts its ring's generations in steps g over all its tiles (g = local tile
// x k_tiles + kt), where one tile's k loop counts kt over k_tiles. The protocol text names the
// ring's step `$kt`, its bound `$k_tiles` and its unit `$unit`; this fills them in for the CTA's
// form (explicit placeholders: a rewrite of ordinary text could also hit text it was not meant
// for).
std::string InSteps(const WarpTiles& t, absl::string_view text) {
  return absl::StrReplaceAll(text, {{"$kt", t.persistent ? "g" : "kt"},
                                    {"$k_tiles", t.persistent ? "steps" : "k_tiles"},
                                    {"$unit", t.persistent ? "step" : "tile"}});
}

std::string SwizzleExpr(ir::Representation::Kind kind) {
  switch (kind) {
    case ir::Representation::SWIZZLE_64B:
      return "((row >> 1) & 3)";
    case ir::Representation::SWIZZLE_128B:
      return "(row & 7)";
    default:
      return "0";
  }
}

}  // namespace

report::LaunchSpec::Arg TmaLaunchArg(const WarpTiles& t, const std::string& tensor,
                                     const std::string& rows, const std::string& k, int box_rows) {
  report::LaunchSpec::Arg a;
  a.set_kind(report::LaunchSpec::Arg::TENSOR_MAP);
  a.set_name(tensor);
  a.set_rows(rows);
  a.set_cols(k);
  a.set_box_rows(box_rows);
  a.set_box_cols(t.tile_k);
  a.set_element_bytes(2);
  // The stage's swizzle span (a row of the box); a row-major stage takes the box unswizzled.
  const ir::Representation::Kind kind = tensor == t.a ? t.a_repr : t.b_repr;
  a.set_swizzle_bytes(kind == ir::Representation::ROW_MAJOR ? 0 : t.tile_k * 2);
  return a;
}

std::string KTileIndex(const WarpTiles& t) { return t.k_slices > 1 ? "(kt_first + kt)" : "kt"; }

std::string RestrictQualifier(const WarpTiles& t, const std::string& tensor) {
  return t.may_alias.count(tensor) ? "" : "__restrict__ ";
}

std::vector<std::string> WarpMainloopInstructions() {
  return {"cp.async.cg.16",       "cp.async.bulk.tensor.2d",   "mbarrier.init",
          "fence.mbarrier_init",  "mbarrier.arrive.expect_tx", "mbarrier.try_wait.parity",
          "mbarrier.arrive",      "fence.proxy.async",         "ldmatrix.m8n8.x4.b16",
          "ldmatrix.m8n8.x2.b16", "mma.m16n8k16.bf16.f32"};
}

std::vector<LoweredKernel::Form> WarpMainloopForms(const WarpTiles& t) {
  const char* copy = t.transfer == ir::TMA ? "cp.async.bulk.tensor.2d" : "cp.async.cg.16";
  std::vector<LoweredKernel::Form> forms = {
      {t.op_copy_a, copy},
      {t.op_copy_b, copy},
      {t.op_load_a, "ldmatrix.m8n8.x4.b16"},
      {t.op_load_b, t.b_load_x4 ? "ldmatrix.m8n8.x4.b16" : "ldmatrix.m8n8.x2.b16"},
      {t.op_mma, t.mma_key}};
  if (t.loader_registers > 0) {  // the registers really move: USETMAXREG in the SASS
    forms.push_back({t.op_loader_role, "setmaxnreg.dec"});
    forms.push_back({t.op_role, "setmaxnreg.inc"});
  }
  return forms;
}

void EmitWarpTileConstants(const WarpTiles& t, SourceWriter& w) {
  w.Line(absl::StrCat("constexpr int kTileM = ", t.tile_m, ", kTileN = ", t.tile_n,
                      ", kTileK = ", t.tile_k, ";"));
  w.Line(absl::StrCat("constexpr int kWarpsM = ", t.warps_m, ", kWarpsN = ", t.warps_n,
                      ", kStages = ", t.stages, ", kThreads = ", t.threads, ";"));
  if (t.elements_per_unit == 2)
    w.Line("// 8-bit operands, moved and loaded as 16-bit units of two adjacent K elements.");
  if (t.elements_per_unit == 4)
    w.Line(
        "// E2M1 operands packed two to a byte, moved and loaded as 16-bit units of four K "
        "elements.");
  if (t.unit_scales)
    w.Line("constexpr uint32_t kUnitScales = 0x7F7F7F7Fu;  // UE8M0 127 = 1.0 in every byte");
  // The threads that consume (and release) stages: the compute role's, beside the loader warp.
  if (t.warp_specialized)
    w.Line(absl::StrCat("constexpr int kComputeThreads = ", t.compute_warps * 32,
                        ", kFirstComputeWarp = ", t.first_compute_warp, ", kLoaderWarp = ",
                        t.loader_warp, ", kLoaderWarps = ", t.loader_warps, ";"));
  w.Line("constexpr int kWarpTileM = kTileM / kWarpsM, kWarpTileN = kTileN / kWarpsN;");
  if (t.k_slices > 1) w.Line(absl::StrCat("constexpr int kKSlices = ", t.k_slices, ";"));
  w.Line("constexpr int kFragsM = kWarpTileM / 16, kFragsN = kWarpTileN / 8;");
  w.Line(absl::StrCat("constexpr int kRowA = kTileK + ", t.a_padding, ", kRowB = kTileK + ",
                      t.b_padding, ";  // elements per shared row"));
  w.Line(absl::StrCat("constexpr uint32_t kOffsetA = ", t.a_offset,
                      ", kStageBytesA = ", t.a_stage_bytes, ";"));
  w.Line(absl::StrCat("constexpr uint32_t kOffsetB = ", t.b_offset,
                      ", kStageBytesB = ", t.b_stage_bytes, ";"));
  if (t.transfer != ir::TMA) w.Line("constexpr int kChunksPerRow = kTileK / 8;  // 16-byte chunks");
  w.Line("");
  w.Line("// Element offset of 16-byte chunk `chunk` of row `row` inside one stage.");
  w.Line("__device__ __forceinline__ uint32_t OffsetA(int row, int chunk) {");
  w.Line(absl::StrCat("  return row * kRowA + ((chunk ^ ", SwizzleExpr(t.a_repr), ") * 8);"));
  w.Line("}");
  w.Line("__device__ __forceinline__ uint32_t OffsetB(int row, int chunk) {");
  w.Line(absl::StrCat("  return row * kRowB + ((chunk ^ ", SwizzleExpr(t.b_repr), ") * 8);"));
  w.Line("}");
  w.Line("");
  if (t.transfer == ir::TMA) {
    w.Line(absl::StrCat("constexpr uint32_t kBarrierOffset = ", t.barrier_offset,
                        ";  // full[kStages], then empty[kStages] (8-byte mbarriers)"));
    // The bytes the two boxes deliver (the transfer's geometry, not the stage's size: a padded
    // stage holds more).
    w.Line(absl::StrCat("constexpr uint32_t kTmaBytes = ", int64_t{t.tile_m} * t.tile_k * 2, " + ",
                        int64_t{t.tile_n} * t.tile_k * 2, ";  // both boxes of a stage"));
    Lines(w,
          R"cuda(

// A CUtensorMap, built by the launcher and passed by value (__grid_constant__).
struct __align__(64) TensorMap {
  unsigned long long opaque[16];
};

// One box (rows from `row`, columns from `col`) into shared `dst`; the copy adds its bytes to the
// transaction count of the mbarrier at `bar`. Out-of-bounds elements read as zero.
__device__ __forceinline__ void TmaLoad(uint32_t dst, const TensorMap& map, int col, int row,
                                        uint32_t bar) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes "
      "[%0], [%1, {%2, %3}], [%4];\n" ::"r"(dst),
      "l"(reinterpret_cast<uint64_t>(&map)), "r"(col), "r"(row), "r"(bar)
      : "memory");
}

// Spins until the mbarrier at `bar` has completed its phase of parity `parity`.
__device__ __forceinline__ void WaitStage(uint32_t bar, uint32_t parity) {
  asm volatile(
      "{\n .reg .pred ready;\n WAIT:\n"
      " mbarrier.try_wait.parity.shared::cta.b64 ready, [%0], %1;\n"
      " @!ready bra WAIT;\n}\n" ::"r"(bar), "r"(parity)
      : "memory");
})cuda");
    return;
  }
  w.Line("__device__ __forceinline__ void CopyChunk(uint32_t dst, const void* src, bool valid) {");
  w.Line("  // Zero-fill: a source size of 0 writes 16 zero bytes and reads nothing.");
  w.Line(
      "  asm volatile(\"cp.async.cg.shared.global [%0], [%1], 16, %2;\\n\" ::\"r\"(dst), "
      "\"l\"(src),");
  w.Line("               \"r\"(valid ? 16 : 0));");
  w.Line("}");
}

namespace {

void EmitZeroAccumulator(SourceWriter& w) {
  w.Line("#pragma unroll");
  w.Line("  for (int i = 0; i < kFragsM; ++i)");
  w.Line("#pragma unroll");
  w.Line("    for (int j = 0; j < kFragsN; ++j)");
  w.Line("#pragma unroll");
  w.Line("      for (int r = 0; r < 4; ++r) acc[i][j][r] = 0.0f;");
}

// Persistent: CTA blockIdx.x walks tiles blockIdx.x, + gridDim.x, ... (the launch starts no
// more CTAs than stay resident), in the static grid's order (EmitTileOrigin); `steps` counts
// its k-tiles over all of them.
void EmitPersistentTiles(const WarpTiles& t, const MainloopTerms& terms, SourceWriter& w) {
  Lines(
      w,
      absl::StrReplaceAll(
          R"cuda(  const int tiles_m = (ROWS_A + kTileM - 1) / kTileM, tiles_n = (ROWS_B + kTileN - 1) / kTileN;
  const long long tiles = (long long)tiles_m * tiles_n;
  const int my_tiles = blockIdx.x < tiles ? int((tiles - 1 - blockIdx.x) / gridDim.x) + 1 : 0;
  if ((long long)my_tiles * k_tiles > 0x7fffffff) __trap();  // steps count in 32 bits
  const int steps = my_tiles * k_tiles;)cuda",
          {{"ROWS_A", terms.a_rows}, {"ROWS_B", terms.b_rows}}));
  EmitTileOrigin(t, "tiles_m", "tiles_n", w);
}

void EmitCpAsyncProducer(const WarpTiles& t, const MainloopTerms& terms, SourceWriter& w) {
  // Producer: one stage of A and B, 16-byte cp.async chunks, tails zero-filled. Where the CTA's
  // threads cover whole rows in passes of a multiple of 8 rows (the common case), each thread
  // copies the same chunk column of rows r0, r0 + R, ...: its source pointer, destination offset
  // (the swizzle depends on a row's low three bits only) and row bounds are computed once, so a
  // copy is an add, a select and the cp.async.
  const int chunks_per_row = t.tile_k / 8;
  auto strided = [&](int rows) {
    return t.threads % chunks_per_row == 0 && (t.threads / chunks_per_row) % 8 == 0 &&
           (rows * chunks_per_row) % t.threads == 0 && rows * chunks_per_row / t.threads <= 32;
  };
  const bool a_strided = strided(t.tile_m), b_strided = strided(t.tile_n);
  if (a_strided || b_strided) {
    w.Line("  constexpr int kRowsPerPass = kThreads / kChunksPerRow;");
    w.Line("  const int p_row = tid / kChunksPerRow, p_chunk = tid % kChunksPerRow;");
  }
  auto emit_setup = [&](bool use, const char* name, const std::string& tensor, const char* rows,
                        const std::string& row_origin, const std::string& extent,
                        const char* offset_fn) {
    if (!use) return;
    w.Line(
        absl::StrCat("  constexpr int kPasses", name, " = ", rows, " * kChunksPerRow / kThreads;"));
    w.Line(absl::StrCat("  const __nv_bfloat16* const src_", name, " = ", tensor, " + int64_t(",
                        row_origin, " + p_row) * ", terms.k, " + p_chunk * 8;"));
    w.Line(absl::StrCat("  const int64_t pass_stride_", name, " = int64_t(kRowsPerPass) * ",
                        terms.k, ";"));
    w.Line(absl::StrCat("  const uint32_t dst_", name, " = ", offset_fn, "(p_row, p_chunk) * 2;"));
    w.Line(absl::StrCat("  uint32_t rows_ok_", name,
                        " = 0;  // bit i: row p_row + i * kRowsPerPass exists"));
    w.Line("#pragma unroll");
    w.Line(absl::StrCat("  for (int i = 0; i < kPasses", name, "; ++i)"));
    w.Line(absl::StrCat("    if (", row_origin, " + p_row + i * kRowsPerPass < ", extent,
                        ") rows_ok_", name, " |= 1u << i;"));
  };
  emit_setup(a_strided, "A", terms.a_ptr, "kTileM", terms.a_row0, terms.a_rows, "OffsetA");
  emit_setup(b_strided, "B", terms.b_ptr, "kTileN", terms.b_row0, terms.b_rows, "OffsetB");
  w.Begin(t.op_produce);
  w.Line("  auto produce = [&](int stage, int kt) {");
  if (a_strided || b_strided) {
    if (t.mask_mk)
      w.Line(absl::StrCat("    const bool k_ok = ", KTileIndex(t), " * kTileK + p_chunk * 8 < ",
                          terms.k, ";"));
    else
      w.Line("    const bool k_ok = true;  // full tiles proven by the contract");
  }
  auto emit_copy = [&](bool use_strided, const char* name, const std::string& op,
                       const std::string& tensor, const char* rows, const std::string& row_origin,
                       const std::string& extent, const char* offset_fn, const char* offset,
                       const char* stage_bytes, const std::string& when) {
    w.Begin(op);
    w.Line(when.empty() ? "    {" : absl::StrCat("    if (", when, ") {"));
    if (use_strided) {
      w.Line("#pragma unroll");
      w.Line(absl::StrCat("    for (int i = 0; i < kPasses", name, "; ++i) {"));
      if (t.mask_mk)
        w.Line(absl::StrCat("      const bool valid = k_ok && ((rows_ok_", name, " >> i) & 1u);"));
      else
        w.Line("      const bool valid = true;  // full tiles proven by the contract");
      w.Line(absl::StrCat("      const __nv_bfloat16* src = valid ? src_", name,
                          " + i * pass_stride_", name, " + ", KTileIndex(t), " * kTileK : ", tensor,
                          ";"));
      w.Line(absl::StrCat("      CopyChunk(smem_base + ", offset, " + stage * ", stage_bytes,
                          " + dst_", name, " + i * kRowsPerPass * ",
                          std::string(name) == "A" ? "kRowA" : "kRowB", " * 2, src, valid);"));
      w.Line("    }");
    } else {
      w.Line(absl::StrCat("    constexpr int kChunks = ", rows, " * kChunksPerRow;"));
      w.Line("#pragma unroll");
      w.Line("    for (int i = 0; i < (kChunks + kThreads - 1) / kThreads; ++i) {");
      w.Line("      const int c = tid + i * kThreads;");
      w.Line("      if (kChunks % kThreads != 0 && c >= kChunks) break;");
      w.Line("      const int row = c / kChunksPerRow, chunk = c % kChunksPerRow;");
      w.Line(absl::StrCat("      const int g_row = ", row_origin, " + row, g_k = ", KTileIndex(t),
                          " * kTileK + chunk * 8;"));
      if (t.mask_mk)
        w.Line(
            absl::StrCat("      const bool valid = g_row < ", extent, " && g_k < ", terms.k, ";"));
      else
        w.Line("      const bool valid = true;  // full tiles proven by the contract");
      w.Line(absl::StrCat("      const __nv_bfloat16* src = valid ? ", tensor,
                          " + int64_t(g_row) * ", terms.k, " + g_k : ", tensor, ";"));
      w.Line(absl::StrCat("      CopyChunk(smem_base + ", offset, " + stage * ", stage_bytes, " + ",
                          offset_fn, "(row, chunk) * 2, src, valid);"));
      w.Line("    }");
    }
    w.Line("    }");
    w.End(op);
  };
  emit_copy(a_strided, "A", t.op_copy_a, terms.a_ptr, "kTileM", terms.a_row0, terms.a_rows,
            "OffsetA", "kOffsetA", "kStageBytesA", terms.a_copy_when);
  emit_copy(b_strided, "B", t.op_copy_b, terms.b_ptr, "kTileN", terms.b_row0, terms.b_rows,
            "OffsetB", "kOffsetB", "kStageBytesB", "");
  w.Line("  };");
  w.End(t.op_produce);
  w.Line("");
}

// Producer: one elected thread arms the stage's mbarrier with the boxes' bytes and issues the two
// box copies; the mbarrier's phase completes when both boxes have landed (Filling -> Ready).
void EmitTmaProducer(const WarpTiles& t, const MainloopTerms& terms, SourceWriter& w) {
  w.Begin(t.op_produce);
  if (t.persistent) {
    // A step's tile may be the next one: its origin comes from the producer's own cursor, not
    // from m0/n0. produce runs for steps 0, 1, 2, ... in order, so the cursor advances by one
    // k-tile per call and the origin (64-bit band arithmetic) is computed once per tile, not per
    // step on thread 0's critical path.
    w.Line(absl::StrCat("  int producer_kt = 0, producer_local = 0, ", terms.a_row0, " = 0, ",
                        terms.b_row0, " = 0;  // thread 0's cursor"));
    w.Line("  auto produce = [&](int stage, int /*step: the cursor's next*/) {  // thread 0 only");
    w.Line("    const int kt = producer_kt;");
    w.Line(
        absl::StrCat("    if (kt == 0) TileOrigin(blockIdx.x + (long long)producer_local * "
                     "gridDim.x, ",
                     terms.a_row0, ", ", terms.b_row0, ");"));
    w.Line("    if (++producer_kt == k_tiles) producer_kt = 0, ++producer_local;");
  } else {
    w.Line("  auto produce = [&](int stage, int kt) {  // thread 0 only");
  }
  w.Line("    const uint32_t bar = smem_base + kBarrierOffset + stage * 8;");
  w.Line(
      "    asm volatile(\"mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\\n\" "
      "::\"r\"(bar),");
  w.Line("                 \"r\"(kTmaBytes)");
  w.Line("                 : \"memory\");");
  w.Begin(t.op_copy_a);
  w.Line(absl::StrCat("    TmaLoad(smem_base + kOffsetA + stage * kStageBytesA, ", terms.a_map,
                      ", ", KTileIndex(t), " * kTileK, ", terms.a_row0, ", bar);"));
  w.End(t.op_copy_a);
  w.Begin(t.op_copy_b);
  w.Line(absl::StrCat("    TmaLoad(smem_base + kOffsetB + stage * kStageBytesB, ", terms.b_map,
                      ", ", KTileIndex(t), " * kTileK, ", terms.b_row0, ", bar);"));
  w.End(t.op_copy_b);
  w.Line("  };");
  w.End(t.op_produce);
  w.Line("");
}

void EmitFragmentSteps(const WarpTiles& t, const MainloopTerms& terms, SourceWriter& w) {
  // Consumer pieces: ldmatrix fragments of one 16-wide k step of a stage into fragment buffer
  // `buf`, and the mma.sync over a buffer. Two buffers, so the next step's loads are in flight
  // while this step's mma issue (the loops are unrolled; `buf` and `ks` are constants).
  w.Line("  uint32_t a_frag[2][kFragsM][4], b_frag[2][kFragsN][2];");
  w.Begin(t.op_consume);
  // Rows of one thread's fragments differ by multiples of 8, and every representation's swizzle
  // depends only on a row's low three bits, so one swizzle term per thread serves all of them and
  // each fragment's address is a per-step base plus an immediate.
  w.Line("  const int a_row0 = warp_m * kWarpTileM + (lane & 15);");
  w.Line(
      "  const uint32_t a_swz = OffsetA(a_row0, 0) - a_row0 * kRowA;  // element offset of chunk "
      "0");
  if (t.b_load_x4)
    w.Line("  const int b_row0 = warp_n * kWarpTileN + (lane & 7) + ((lane >> 4) << 3);");
  else
    w.Line("  const int b_row0 = warp_n * kWarpTileN + (lane & 7);");
  w.Line("  const uint32_t b_swz = OffsetB(b_row0, 0) - b_row0 * kRowB;");
  w.Line("  auto load_frags = [&](int buf, int stage, int ks) {");
  w.Line(
      "    const uint32_t a_k = smem_base + kOffsetA + stage * kStageBytesA + a_row0 * kRowA * 2 "
      "+");
  w.Line("                         ((((ks * 2 + (lane >> 4)) * 8) ^ a_swz) * 2);");
  w.Line(
      "    const uint32_t b_k = smem_base + kOffsetB + stage * kStageBytesB + b_row0 * kRowB * 2 "
      "+");
  w.Line("                         ((((ks * 2 + ((lane >> 3) & 1)) * 8) ^ b_swz) * 2);");
  w.Begin(t.op_load_a);
  w.Line("#pragma unroll");
  w.Line("    for (int i = 0; i < kFragsM; ++i) {");
  w.Line("      const uint32_t addr = a_k + i * 16 * kRowA * 2;");
  w.Line("      asm volatile(\"ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\\n\"");
  w.Line("                   : \"=r\"(a_frag[buf][i][0]), \"=r\"(a_frag[buf][i][1]),");
  w.Line("                     \"=r\"(a_frag[buf][i][2]), \"=r\"(a_frag[buf][i][3])");
  w.Line("                   : \"r\"(addr));");
  w.Line("    }");
  w.End(t.op_load_a);
  w.Begin(t.op_load_b);
  if (t.b_load_x4) {
    w.Line("#pragma unroll");
    w.Line("    for (int j = 0; j < kFragsN; j += 2) {");
    w.Line("      const uint32_t addr = b_k + j * 8 * kRowB * 2;");
    w.Line(
        "      asm volatile(\"ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\\n\"");
    w.Line("                   : \"=r\"(b_frag[buf][j][0]), \"=r\"(b_frag[buf][j][1]),");
    w.Line("                     \"=r\"(b_frag[buf][j + 1][0]), \"=r\"(b_frag[buf][j + 1][1])");
    w.Line("                   : \"r\"(addr));");
    w.Line("    }");
  } else {
    w.Line("#pragma unroll");
    w.Line("    for (int j = 0; j < kFragsN; ++j) {");
    w.Line("      const uint32_t addr = b_k + j * 8 * kRowB * 2;");
    w.Line("      asm volatile(\"ldmatrix.sync.aligned.m8n8.x2.shared.b16 {%0,%1}, [%2];\\n\"");
    w.Line("                   : \"=r\"(b_frag[buf][j][0]), \"=r\"(b_frag[buf][j][1])");
    w.Line("                   : \"r\"(addr));");
    w.Line("    }");
  }
  w.End(t.op_load_b);
  w.Line("  };");
  const bool scale_tensors = !t.scale_a.empty();
  w.Begin(t.op_mma);
  w.Line(scale_tensors ? "  auto mma_frags = [&](int buf, int kstep) {"
                       : "  auto mma_frags = [&](int buf) {");
  if (scale_tensors) {
    // mma.sync kind::mxf4nvf4 scale_vec::4X, thread-id and byte-id selectors 0: a lane's scale
    // word is the four UE4M3 scales (K groups of 16, lowest group in the low byte) of one MMA k
    // step, for row lane/4 + 8 * (lane & 1) of the m16 fragment (A) and column lane/4 of the n8
    // fragment (B); the other lanes' words are not read. Rows and k steps outside the problem
    // read 0 (their A and B elements are zero-filled).
    w.Begin(t.op_scale_a);
    w.Line("    uint32_t sfa[kFragsM], sfb[kFragsN];");
    w.Line("#pragma unroll");
    w.Line("    for (int i = 0; i < kFragsM; ++i) {");
    w.Line(
        "      const int row = m0 + warp_m * kWarpTileM + i * 16 + (lane >> 2) + ((lane & 1) << "
        "3);");
    w.Line(absl::StrCat("      sfa[i] = row < ", terms.a_rows, " && kstep < ",
                        terms.scale_row_words, " ? __ldg(", terms.scale_a_words,
                        " + (long long)row * ", terms.scale_row_words, " + kstep) : 0u;"));
    w.Line("    }");
    w.End(t.op_scale_a);
    w.Begin(t.op_scale_b);
    w.Line("#pragma unroll");
    w.Line("    for (int j = 0; j < kFragsN; ++j) {");
    w.Line("      const int col = n0 + warp_n * kWarpTileN + j * 8 + (lane >> 2);");
    w.Line(absl::StrCat("      sfb[j] = col < ", terms.b_rows, " && kstep < ",
                        terms.scale_row_words, " ? __ldg(", terms.scale_b_words,
                        " + (long long)col * ", terms.scale_row_words, " + kstep) : 0u;"));
    w.Line("    }");
    w.End(t.op_scale_b);
  }
  w.Line("#pragma unroll");
  w.Line("    for (int i = 0; i < kFragsM; ++i)");
  w.Line("#pragma unroll");
  w.Line("      for (int j = 0; j < kFragsN; ++j)");
  w.Line("        asm volatile(");
  w.Line(absl::StrCat("            \"", t.mma_ptx, " {%0,%1,%2,%3}, \""));
  if (scale_tensors)
    w.Line("            \"{%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3}, %10, {0, 0}, %11, {0, 0};\\n\"");
  else if (t.unit_scales)
    w.Line("            \"{%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3}, %10, {0, 0}, %10, {0, 0};\\n\"");
  else
    w.Line("            \"{%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\\n\"");
  w.Line(
      "            : \"+f\"(acc[i][j][0]), \"+f\"(acc[i][j][1]), \"+f\"(acc[i][j][2]), "
      "\"+f\"(acc[i][j][3])");
  w.Line(
      "            : \"r\"(a_frag[buf][i][0]), \"r\"(a_frag[buf][i][1]), "
      "\"r\"(a_frag[buf][i][2]),");
  if (scale_tensors)
    w.Line(
        "              \"r\"(a_frag[buf][i][3]), \"r\"(b_frag[buf][j][0]), "
        "\"r\"(b_frag[buf][j][1]), \"r\"(sfa[i]), \"r\"(sfb[j]));");
  else if (t.unit_scales)
    w.Line(
        "              \"r\"(a_frag[buf][i][3]), \"r\"(b_frag[buf][j][0]), "
        "\"r\"(b_frag[buf][j][1]), \"r\"(kUnitScales));");
  else
    w.Line(
        "              \"r\"(a_frag[buf][i][3]), \"r\"(b_frag[buf][j][0]), "
        "\"r\"(b_frag[buf][j][1]));");
  w.Line("  };");
  w.End(t.op_mma);
  w.End(t.op_consume);
  w.Line("");
}

// Release of slot `stage`: every thread arrives on empty[stage] (release semantics: its reads
// of the slot are performed first); thread 0 acquires the slot once all have arrived, orders the
// generic-proxy reads before the async-proxy writes, and refills it with tile kt + kStages.
void EmitTmaRelease(const WarpTiles& t, SourceWriter& w) {
  w.Begin(t.op_release);
  Lines(
      w,
      R"cuda(        __syncwarp();  // the warp's reads of the slot are ordered before lane 0's release
        if (lane == 0)
          asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(empty_bar + stage * 8)
                       : "memory");)cuda");
  w.End(t.op_release);
  if (t.warp_specialized) return;  // the loader warp refills
  Lines(w, InSteps(t, R"cuda(        if (tid == 0 && $kt + kStages < $k_tiles) {
          WaitStage(empty_bar + stage * 8, ($kt / kStages) & 1);  // every thread has read it
          asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
          produce(stage, $kt + kStages);
        })cuda"));
}

// The TMA protocol. Slot s has two mbarriers: full[s] (arrival count 1, the producer's
// arrive.expect_tx, plus both boxes' transaction bytes) and empty[s] (one arrival per consumer
// warp).
// Generation g of slot s holds tile s + g * S: it is Ready when full[s] completes its phase of
// parity g & 1, and Free when empty[s] does. A consumer warp arrives on empty[s] once its last
// ldmatrix of the tile is issued: __syncwarp orders every lane's reads before lane 0's arrive,
// whose release semantics are cumulative, so those reads are performed before any thread can
// observe the phase (a CTA barrier would not order them against the TMA unit's writes, which are
// not in the threads' shared-memory pipe). One arrive per warp rather than per thread: fewer
// barrier updates, though no different in SM cycles on sm_90 (evidence/gemm_bench/staged_store).
// Thread 0, also the producer, waits for that phase (acquire), fences the async proxy behind it
// and refills the slot with tile kt + S. The next tile's wait and first fragments overlap the
// last step's mma.
// With a loader warp (warp-specialized) the protocol is the same, split by role: empty[s] counts
// the compute warps only; the loader's lane 0 fills tiles 0..S-1, then before tile kt (kt >= S)
// waits for the compute threads' release of the slot's previous generation (parity of
// generation kt/S - 1), fences the async proxy and refills; the loader warp then leaves (its
// copies complete on the full barriers, which the compute warps wait for before exiting).
void EmitTmaKLoop(const WarpTiles& t, const MainloopTerms& terms, SourceWriter& w) {
  w.Begin(t.op_kloop);
  Lines(
      w,
      absl::StrReplaceAll(
          R"cuda(  if ((smem_base & 1023) != 0) __trap();  // the swizzle atoms need 1024-byte stages
  const uint32_t full_bar = smem_base + kBarrierOffset, empty_bar = full_bar + kStages * 8;
  if (tid == 0) {
#pragma unroll
    for (int s = 0; s < kStages; ++s) {
      asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;\n" ::"r"(full_bar + s * 8));
      asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(empty_bar + s * 8),
                   "r"(CONSUMERS));
    }
    // The initialized barriers are visible to the async proxy before any copy uses them.
    asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
  }
  __syncthreads();)cuda",
          {{"CONSUMERS", t.warp_specialized ? "kComputeThreads / 32" : "kThreads / 32"}}));
  if (t.warp_specialized) {
    w.Begin(t.op_loader_role);
    w.Begin(t.op_loader_tiles);
    w.Begin(t.op_loader_kloop);
    w.Line("  if (warp >= kLoaderWarp && warp < kLoaderWarp + kLoaderWarps) {");
    if (t.loader_registers > 0)
      w.Line(absl::StrCat("    asm volatile(\"setmaxnreg.dec.sync.aligned.u32 ", t.loader_registers,
                          ";\\n\" ::: \"memory\");  // to the compute warps"));
    Lines(w, R"cuda(    if (warp == kLoaderWarp && lane == 0) {
      for (int kt = 0; kt < k_tiles; ++kt) {
        const int stage = kt % kStages;
        if (kt >= kStages) {
          WaitStage(empty_bar + stage * 8, ((kt / kStages) + 1) & 1);  // generation kt/S - 1 read
          asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
        }
        produce(stage, kt);
      }
    }
    return;  // the compute warps wait for every copy on the full barriers
  })cuda");
    w.End(t.op_loader_kloop);
    w.End(t.op_loader_tiles);
    w.End(t.op_loader_role);
    if (t.compute_registers > 0)
      w.Line(absl::StrCat("  asm volatile(\"setmaxnreg.inc.sync.aligned.u32 ", t.compute_registers,
                          ";\\n\" ::: \"memory\");  // the loader's registers"));
  } else {
    Lines(w, InSteps(t, R"cuda(  if (tid == 0) {
#pragma unroll
    for (int s = 0; s < kStages; ++s)
      if (s < $k_tiles) produce(s, s);
  })cuda"));
  }
  Lines(w, InSteps(t, R"cuda(  if ($k_tiles > 0) {
    WaitStage(full_bar, 0);  // $unit 0 is Ready
    load_frags(0, 0, 0);
  })cuda"));
  if (t.persistent) {
    // This CTA's tiles, one after another; the tile loop stays open for the epilogue, which the
    // operation's lowering emits and closes (the ring meanwhile fills the next tile).
    Lines(w, R"cuda(  for (int local = 0; local < my_tiles; ++local) {
  TileOrigin(blockIdx.x + (long long)local * gridDim.x, m0, n0);)cuda");
    EmitZeroAccumulator(w);
    Lines(w, R"cuda(  for (int kt = 0; kt < k_tiles; ++kt) {
    const int g = local * k_tiles + kt;  // the ring's step: it runs on across tiles
    const int stage = g % kStages;)cuda");
  } else {
    Lines(w, R"cuda(  for (int kt = 0; kt < k_tiles; ++kt) {
    const int stage = kt % kStages;)cuda");
  }
  Lines(w, R"cuda(#pragma unroll
    for (int ks = 0; ks < kTileK / 16; ++ks) {)cuda");
  if (t.release_early) {
    // The schedule releases the generation before its last read (only reachable with the
    // pipeline rules unchecked): the slot is handed back at the tile's first k step.
    w.Line("      if (ks == 0) {");
    EmitTmaRelease(t, w);
    w.Line("      }");
  }
  Lines(w, R"cuda(      if (ks + 1 < kTileK / 16) {
        load_frags((ks + 1) & 1, stage, ks + 1);
      } else {)cuda");
  for (const std::string& line : terms.after_consume) w.Line("  " + line);
  if (!t.release_early) EmitTmaRelease(t, w);
  Lines(w, InSteps(t, R"cuda(        if ($kt + 1 < $k_tiles) {
          const int next = ($kt + 1) % kStages;
          WaitStage(full_bar + next * 8, (($kt + 1) / kStages) & 1);
          load_frags(0, next, 0);
        }
      }
      mma_frags(ks & 1);
    }
  })cuda"));
  w.End(t.op_kloop);
  w.Line("");
}

void EmitKLoop(const WarpTiles& t, const MainloopTerms& terms, SourceWriter& w) {
  if (t.transfer == ir::TMA) {
    EmitTmaKLoop(t, terms, w);
    return;
  }
  const int k_steps = t.tile_k / 16;
  // With scale tensors the MMA step reads the scales of its global k step.
  const bool scaled = !t.scale_a.empty();
  const std::string mma_call =
      scaled ? "mma_frags(ks & 1, kt * (kTileK / 16) + ks);" : "mma_frags(ks & 1);";
  w.Begin(t.op_kloop);
  if (t.stages == 1 || k_steps % 2 != 0) {
    // One stage (or an odd number of k steps): the protocol in its plain form. Slot = k-tile %
    // stages; a generation is Filling from its cp.async issue, Ready after wait_group + barrier,
    // Reading during the k steps, Free at the next barrier.
    w.Line(scaled ? "  auto consume = [&](int stage, int kt) {"
                  : "  auto consume = [&](int stage) {");
    w.Line("#pragma unroll");
    w.Line("    for (int ks = 0; ks < kTileK / 16; ++ks) {");
    w.Line("      load_frags(ks & 1, stage, ks);");
    w.Line("      " + mma_call);
    w.Line("    }");
    for (const std::string& line : terms.after_consume) w.Line(line);
    w.Line("  };");
    if (t.stages == 1) {
      w.Line("  for (int kt = 0; kt < k_tiles; ++kt) {");
      w.Line("    produce(0, kt);");
      w.Line("    asm volatile(\"cp.async.commit_group;\\n\" ::);");
      w.Line("    asm volatile(\"cp.async.wait_group 0;\\n\" ::);");
      w.Line("    __syncthreads();");
      w.Line(scaled ? "    consume(0, kt);" : "    consume(0);");
      w.Begin(t.op_release);
      w.Line("    __syncthreads();  // release: the slot is Free before it is refilled");
      w.End(t.op_release);
      w.Line("  }");
    } else {
      w.Line("#pragma unroll");
      w.Line("  for (int s = 0; s < kStages - 1; ++s) {");
      w.Line("    if (s < k_tiles) produce(s, s);");
      w.Line("    asm volatile(\"cp.async.commit_group;\\n\" ::);");
      w.Line("  }");
      w.Line("  for (int kt = 0; kt < k_tiles; ++kt) {");
      w.Line("    asm volatile(\"cp.async.wait_group %0;\\n\" ::\"n\"(kStages - 2));");
      w.Begin(t.op_release);
      w.Line(
          "    // Stage kt is Ready; stage kt-1 was released by every consumer before this "
          "barrier.");
      w.Line("    __syncthreads();");
      w.End(t.op_release);
      w.Line("    const int next = kt + kStages - 1;");
      w.Line("    if (next < k_tiles) produce(next % kStages, next);");
      w.Line("    asm volatile(\"cp.async.commit_group;\\n\" ::);");
      w.Line(scaled ? "    consume(kt % kStages, kt);" : "    consume(kt % kStages);");
      w.Line("  }");
    }
  } else {
    // Every slot in flight, fragments double-buffered across the barrier. Tiles 0..S-1 fill
    // slots 0..S-1 first. In k-tile kt, step ks mma's the fragments loaded one step earlier;
    // before the last step every fragment of tile kt is in registers, so the barrier there both
    // makes tile kt+1 Ready (wait_group S-2: its group is no longer pending) and releases slot
    // kt % S (no thread reads it again), which tile kt+S then refills; the last step's mma
    // issue while tile kt+1's first fragments load.
    w.Line("#pragma unroll");
    w.Line("  for (int s = 0; s < kStages; ++s) {");
    w.Line("    if (s < k_tiles) produce(s, s);");
    w.Line("    asm volatile(\"cp.async.commit_group;\\n\" ::);");
    w.Line("  }");
    w.Line("  asm volatile(\"cp.async.wait_group %0;\\n\" ::\"n\"(kStages - 1));");
    w.Line("  __syncthreads();  // tile 0 is Ready");
    w.Line("  load_frags(0, 0, 0);");
    w.Line("  for (int kt = 0; kt < k_tiles; ++kt) {");
    w.Line("    const int stage = kt % kStages;");
    w.Line("#pragma unroll");
    w.Line("    for (int ks = 0; ks < kTileK / 16; ++ks) {");
    w.Line("      if (ks + 1 < kTileK / 16) {");
    w.Line("        load_frags((ks + 1) & 1, stage, ks + 1);");
    w.Line("      } else {");
    for (const std::string& line : terms.after_consume) w.Line("  " + line);
    w.Begin(t.op_release);
    w.Line("        asm volatile(\"cp.async.wait_group %0;\\n\" ::\"n\"(kStages - 2));");
    w.Line("        __syncthreads();  // tile kt+1 Ready; slot `stage` Free");
    w.End(t.op_release);
    w.Line("        if (kt + kStages < k_tiles) produce(stage, kt + kStages);");
    w.Line("        asm volatile(\"cp.async.commit_group;\\n\" ::);");
    w.Line("        if (kt + 1 < k_tiles) load_frags(0, (kt + 1) % kStages, 0);");
    w.Line("      }");
    w.Line("      " + mma_call);
    w.Line("    }");
    w.Line("  }");
  }
  w.End(t.op_kloop);
  w.Line("");
}

}  // namespace

void EmitTileOrigin(const WarpTiles& t, const std::string& tiles_m, const std::string& tiles_n,
                    SourceWriter& w) {
  // The band of a tile is its launch-order index over kRasterGroupM x tiles_n; inside the band
  // tiles go down each column first. A bijection of the tiles (64-bit: a band may hold more
  // than INT_MAX of them on a very wide grid).
  w.Line(absl::StrCat("  constexpr int kRasterGroupM = ", std::max(t.raster_group_m, 1), ";"));
  Lines(w, absl::StrReplaceAll(
               R"cuda(  auto TileOrigin = [&](long long tile, int& tile_m0, int& tile_n0) {
    const int band_m = int(tile / ((long long)kRasterGroupM * TILES_N)) * kRasterGroupM;
    const int band_rows = min(TILES_M - band_m, kRasterGroupM);
    const long long in_band = tile - (long long)band_m * TILES_N;
    tile_m0 = (band_m + int(in_band % band_rows)) * kTileM;
    tile_n0 = int(in_band / band_rows) * kTileN;
  };)cuda",
               {{"TILES_M", tiles_m}, {"TILES_N", tiles_n}}));
}

void EmitWarpMainloop(const WarpTiles& t, const MainloopTerms& terms, SourceWriter& w) {
  w.Line("  float acc[kFragsM][kFragsN][4];");
  if (!t.persistent) EmitZeroAccumulator(w);  // persistent: at each tile's start
  if (t.k_slices > 1) {
    w.Line(
        "  // Split-K: this CTA's run of k-tiles (grid z); the last runs may be short or empty.");
    w.Line(absl::StrCat("  const int k_tiles_all = (", terms.k, " + kTileK - 1) / kTileK;"));
    w.Line("  const int kt_per_slice = (k_tiles_all + kKSlices - 1) / kKSlices;");
    w.Line("  const int kt_first = blockIdx.z * kt_per_slice;");
    w.Line("  const int k_tiles = max(0, min(kt_per_slice, k_tiles_all - kt_first));");
  } else {
    w.Line(absl::StrCat("  const int k_tiles = (", terms.k, " + kTileK - 1) / kTileK;"));
  }
  if (t.persistent) EmitPersistentTiles(t, terms, w);
  w.Line("");

  if (t.transfer == ir::TMA) {
    EmitTmaProducer(t, terms, w);
  } else {
    EmitCpAsyncProducer(t, terms, w);
  }
  EmitFragmentSteps(t, terms, w);
  EmitKLoop(t, terms, w);
}

}  // namespace cake::compiler
