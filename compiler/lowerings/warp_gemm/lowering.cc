// The warp_gemm lowerings: warp-tiled GEMM (C = A * B^T) with cp.async or TMA stages, ldmatrix
// fragments and mma.sync m16n8k16 BF16 -> FP32, for the gemm_bf16_tn workload; and warp_gemm_fp8,
// the same tiles over E4M3/E5M2 with mma.sync m16n8k32 (legacy or unit-scale block-scaled), for
// the gemm_blockscaled workload.
#include <string>
#include <vector>

#include "compiler/lowering.h"

#include "absl/strings/str_cat.h"
#include "emit.h"
#include "google/protobuf/unknown_field_set.h"
#include "plan.h"

namespace cake::compiler {
namespace {

report::LaunchSpec::Arg Arg(report::LaunchSpec::Arg::Kind kind, const std::string& name) {
  report::LaunchSpec::Arg a;
  a.set_kind(kind);
  a.set_name(name);
  return a;
}

// `tensors` in the kernel's order: A, B, then (block-scaled) the scales of A and B, then C.
report::LaunchSpec Launch(const std::vector<std::string>& tensors, const std::string& m,
                          const std::string& n, const std::string& k, int tile_m, int tile_n,
                          int threads, int64_t shared) {
  using K = report::LaunchSpec::Arg;
  report::LaunchSpec l;
  for (const std::string& t : tensors) *l.add_args() = Arg(K::TENSOR, t);
  for (const std::string& s : {m, n, k}) *l.add_args() = Arg(K::SCALAR, s);
  l.mutable_grid_x()->set_extent(n);
  l.mutable_grid_x()->set_divisor(tile_n);
  l.mutable_grid_y()->set_extent(m);
  l.mutable_grid_y()->set_divisor(tile_m);
  l.set_threads_per_cta(threads);
  l.set_dynamic_shared_bytes(shared);
  return l;
}

// The kernel of a plan: source, launch (split-K workspace, TMA maps, persistence) and forms.
LoweredKernel LowerPlan(const WarpGemmPlan& p, const TargetInfo& target,
                        const std::string& schedule_hash, const std::string& version) {
  LoweredKernel k = EmitWarpGemm(p, target, schedule_hash, version);
  // The scale tensors follow B, as in the kernel's signature.
  std::vector<std::string> tensors = {p.a, p.b};
  if (!p.scale_a.empty()) tensors.insert(tensors.end(), {p.scale_a, p.scale_b});
  tensors.push_back(p.c);
  k.launch = Launch(tensors, p.m, p.n, p.k, p.tile_m, p.tile_n, p.threads, k.dynamic_shared_bytes);
  if (p.k_slices > 1) k.launch.mutable_grid_z()->set_count(p.k_slices);
  if (p.persistent) {
    k.launch.set_persistent(true);
    k.launch.set_max_ctas(p.max_ctas);
  }
  if (p.k_slices > 1 && !p.k_merge_none) {
    // FP32 partials of every slice, then one arrival counter per output tile.
    report::LaunchSpec::Arg* ws = k.launch.add_args();
    *ws = Arg(report::LaunchSpec::Arg::WORKSPACE, "workspace");
    ws->set_rows(p.m);
    ws->set_cols(p.n);
    ws->set_box_rows(p.tile_m);
    ws->set_box_cols(p.tile_n);
    ws->set_bytes_per_element(int64_t{4} * p.k_slices);
    ws->set_bytes_per_tile(4);
  }
  if (p.transfer == ir::TMA) {  // A and B travel as tensor maps of one stage's boxes
    *k.launch.mutable_args(0) = TmaLaunchArg(p, p.a, p.m, p.k, p.tile_m);
    *k.launch.mutable_args(1) = TmaLaunchArg(p, p.b, p.n, p.k, p.tile_n);
  }
  k.forms = WarpMainloopForms(p);
  k.shared_regions = p.shared.regions;
  return k;
}

// The plan, when its operands pack `elements_per_unit` to a 16-bit unit (1 BF16, 2 FP8, 4 FP4).
absl::StatusOr<WarpGemmPlan> PlanOfWidth(const ir::Module& module, const KernelGraph& g,
                                         int elements_per_unit, absl::string_view lowering) {
  auto plan = PlanWarpGemm(module, g);
  if (!plan.ok()) return plan.status();
  if (plan->elements_per_unit != elements_per_unit)
    return LoweringUnsupported(
        std::string(lowering),
        plan->elements_per_unit == 1   ? "BF16 operands are warp_gemm's (gemm_bf16_tn)"
        : plan->elements_per_unit == 2 ? "8-bit operands are warp_gemm_fp8's (gemm_blockscaled)"
                                       : "E2M1 operands are warp_gemm_nvfp4's (gemm_blockscaled)");
  return plan;
}

// Matching and lowering shared by the operand widths: the plan must have operands of this
// width, and the source is headed by the lowering's own version.
class WarpGemmOfWidth : public Lowering {
 public:
  explicit WarpGemmOfWidth(int elements_per_unit) : elements_per_unit_(elements_per_unit) {}
  absl::Status Match(const ir::Module& module, const KernelGraph& g) const final {
    return PlanOfWidth(module, g, elements_per_unit_, name()).status();
  }
  absl::StatusOr<LoweredKernel> Lower(const ir::Module& module, const KernelGraph& g,
                                      const TargetInfo& target,
                                      const std::string& schedule_hash) const final {
    auto plan = PlanOfWidth(module, g, elements_per_unit_, name());
    if (!plan.ok()) return plan.status();
    return LowerPlan(*plan, target, schedule_hash, version());
  }

 private:
  int elements_per_unit_;
};

class WarpGemmLowering final : public WarpGemmOfWidth {
 public:
  WarpGemmLowering() : WarpGemmOfWidth(1) {}
  std::string name() const override { return "warp_gemm"; }
  std::string version() const override { return std::string(kWarpGemmLoweringVersion); }
  std::string operation() const override { return "gemm_bf16_tn"; }
  std::string summary() const override {
    return "warp_gemm (C = A * B^T; mma.sync m16n8k16 BF16, ldmatrix, cp.async or TMA stages 1-4, "
           "split-K merged through a workspace)";
  }
  std::vector<std::string> required_instructions() const override {
    std::vector<std::string> out = WarpMainloopInstructions();
    out.insert(out.end(), {"setmaxnreg.dec", "setmaxnreg.inc"});  // loader warpgroups (SM12x)
    return out;
  }

  // Receipts before LaunchSpec (all of warp_gemm/1) kept the tile in fields 25 (tile_m) and 26
  // (tile_n), now unknown fields; the ABI was always (A, B, C, M, N, K).
  bool UpgradeReceipt(report::LoweringReceipt* r) const override {
    if (r->lowering_version() != "warp_gemm/1") return false;
    int64_t tile_m = 0, tile_n = 0;
    const google::protobuf::UnknownFieldSet& unknown = r->GetReflection()->GetUnknownFields(*r);
    for (int i = 0; i < unknown.field_count(); ++i) {
      const google::protobuf::UnknownField& f = unknown.field(i);
      if (f.type() != google::protobuf::UnknownField::TYPE_VARINT) continue;
      if (f.number() == 25) tile_m = static_cast<int64_t>(f.varint());
      if (f.number() == 26) tile_n = static_cast<int64_t>(f.varint());
    }
    if (tile_m <= 0 || tile_n <= 0) return false;
    *r->mutable_launch() =
        Launch({"A", "B", "C"}, "M", "N", "K", static_cast<int>(tile_m), static_cast<int>(tile_n),
               r->threads_per_cta(), r->resources().shared_dynamic_bytes());
    r->set_lowering(name());
    return true;
  }
};

CAKE_REGISTER_LOWERING(WarpGemmLowering);

// The same warp tiles over 8-bit operands for the gemm_blockscaled workload: E4M3/E5M2 A and B
// moved by cp.async and read by ldmatrix .b16 as pairs of K elements, mma.sync m16n8k32 in the
// legacy form or the block-scaled kind::mxf8f6f4 form with unit UE8M0 scales (the instruction
// form is the schedule's decision: its MMA instruction).
class WarpGemmFp8Lowering final : public WarpGemmOfWidth {
 public:
  WarpGemmFp8Lowering() : WarpGemmOfWidth(2) {}
  std::string name() const override { return "warp_gemm_fp8"; }
  std::string version() const override { return std::string(kWarpGemmFp8LoweringVersion); }
  std::string operation() const override { return "gemm_blockscaled"; }
  std::string summary() const override {
    return "warp_gemm_fp8 (C = A * B^T over E4M3/E5M2; mma.sync m16n8k32 legacy or block-scaled "
           "with unit UE8M0 scales, ldmatrix .b16 on K-contiguous bytes, cp.async stages 1-4)";
  }
  std::vector<std::string> required_instructions() const override {
    return {"cp.async.cg.16",
            "ldmatrix.m8n8.x4.b16",
            "ldmatrix.m8n8.x2.b16",
            "mma.m16n8k32.e4m3.f32",
            "mma.m16n8k32.e5m2.f32",
            "mma.block_scale.mxf8f6f4.m16n8k32.e4m3.ue8m0",
            "mma.block_scale.mxf8f6f4.m16n8k32.e5m2.ue8m0"};
  }
};

CAKE_REGISTER_LOWERING(WarpGemmFp8Lowering);

// NVFP4 on the same warp tiles: E2M1 A and B packed two to a byte, moved by cp.async and read by
// ldmatrix .b16 as units of four K elements, mma.sync m16n8k64 kind::mxf4nvf4 scale_vec::4X with
// each lane's UE4M3 scale words read from the scale tensors (A, B, SA, SB, C, M, N, K).
class WarpGemmNvfp4Lowering final : public WarpGemmOfWidth {
 public:
  WarpGemmNvfp4Lowering() : WarpGemmOfWidth(4) {}
  std::string name() const override { return "warp_gemm_nvfp4"; }
  std::string version() const override { return std::string(kWarpGemmNvfp4LoweringVersion); }
  std::string operation() const override { return "gemm_nvfp4"; }
  std::string summary() const override {
    return "warp_gemm_nvfp4 (C = (A . SA) * (B . SB)^T over packed E2M1 with UE4M3 scale tensors "
           "per 16 of K; mma.sync m16n8k64 kind::mxf4nvf4 scale_vec::4X, ldmatrix .b16, cp.async "
           "stages 1-4)";
  }
  std::vector<std::string> required_instructions() const override {
    return {"cp.async.cg.16", "ldmatrix.m8n8.x4.b16", "ldmatrix.m8n8.x2.b16",
            "mma.block_scale.mxf4nvf4.m16n8k64.e2m1.ue4m3"};
  }
};

CAKE_REGISTER_LOWERING(WarpGemmNvfp4Lowering);

}  // namespace
}  // namespace cake::compiler
