#include "admission.h"

#include <array>

namespace cake::compiler {
namespace {

constexpr uint32_t Bit(ir::Arch a) { return 1u << a; }
constexpr uint32_t kSm12x = Bit(ir::SM_120A) | Bit(ir::SM_121A) | Bit(ir::SM_120F);
// The portable forms: every target, plain sm_120 included (kSm12x rows are arch- or
// family-specific: sm_120a, sm_121a, sm_120f only).
constexpr uint32_t kAll = kSm12x | Bit(ir::SM_120) | Bit(ir::SM_90);
constexpr uint32_t kNone = 0;

using P = Participation;
using ir::BF16;
using ir::DTYPE_UNSPECIFIED;
using ir::E2M1;
using ir::E4M3;
using ir::E5M2;
using ir::F16;
using ir::F32;

// One row per instruction form. Verdicts are the ones ptxas 13.0 gives (tested); the SM12x SASS
// forms are what ptxas 13.0 emits for sm_120f (one probe each, cuobjdump). Legacy FP8
// mma.sync assembles for sm_90 but is emulated there (F2FP unpack + HMMA), so its speed is never
// judged on the Hopper witness.
const std::array<InstrDescriptor, 43> kTable = {{
    {"mma.m16n8k16.bf16.f32",
     "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32",
     {7, 0},
     kAll,
     P::kWarp,
     "reads a/b/c fragments; writes d fragment",
     "HMMA.16816.F32.BF16",
     "HMMA.16816.F32.BF16",
     false,
     MmaSignature{ir::M16N8K16, BF16, BF16, F32, DTYPE_UNSPECIFIED, 0},
     "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {f0,f1,f2,f3}, {r1,r2,r3,r4}, {r5,r6}, "
     "{f4,f5,f6,f7};"},
    {"mma.m16n8k8.bf16.f32",
     "mma.sync.aligned.m16n8k8.row.col.f32.bf16.bf16.f32",
     {7, 0},
     kAll,
     P::kWarp,
     "reads a/b/c fragments; writes d fragment",
     "HMMA.1688.F32.BF16",
     "HMMA.1688.F32.BF16",
     false,
     MmaSignature{ir::M16N8K8, BF16, BF16, F32, DTYPE_UNSPECIFIED, 0},
     "mma.sync.aligned.m16n8k8.row.col.f32.bf16.bf16.f32 {f0,f1,f2,f3}, {r1,r2}, {r5}, "
     "{f4,f5,f6,f7};"},
    {"mma.m16n8k16.f16.f32",
     "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32",
     {6, 5},
     kAll,
     P::kWarp,
     "reads a/b/c fragments; writes d fragment",
     "HMMA.16816.F32",
     "HMMA.16816.F32",
     false,
     MmaSignature{ir::M16N8K16, F16, F16, F32, DTYPE_UNSPECIFIED, 0},
     "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {f0,f1,f2,f3}, {r1,r2,r3,r4}, {r5,r6}, "
     "{f4,f5,f6,f7};"},
    {"mma.m16n8k16.f16.f16",
     "mma.sync.aligned.m16n8k16.row.col.f16.f16.f16.f16",
     {6, 5},
     kAll,
     P::kWarp,
     "reads a/b/c fragments; writes d fragment",
     "HMMA.16816.F16",
     "HMMA.16816.F16",
     false,
     MmaSignature{ir::M16N8K16, F16, F16, F16, DTYPE_UNSPECIFIED, 0},
     "mma.sync.aligned.m16n8k16.row.col.f16.f16.f16.f16 {r7,r8}, {r1,r2,r3,r4}, {r5,r6}, "
     "{r9,r10};"},
    {"mma.m16n8k32.e4m3.f32",
     "mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e4m3.f32",
     {8, 4},
     kAll,
     P::kWarp,
     "reads a/b/c fragments; writes d fragment",
     "QMMA.16832.F32.E4M3.E4M3",
     "HMMA.16816.F32",
     false,
     MmaSignature{ir::M16N8K32, E4M3, E4M3, F32, DTYPE_UNSPECIFIED, 0},
     "mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e4m3.f32 {f0,f1,f2,f3}, {r1,r2,r3,r4}, {r5,r6}, "
     "{f4,f5,f6,f7};"},
    {"mma.m16n8k32.e5m2.f32",
     "mma.sync.aligned.m16n8k32.row.col.f32.e5m2.e5m2.f32",
     {8, 4},
     kAll,
     P::kWarp,
     "reads a/b/c fragments; writes d fragment",
     "QMMA.16832.F32.E5M2.E5M2",
     "HMMA.16816.F32",
     false,
     MmaSignature{ir::M16N8K32, E5M2, E5M2, F32, DTYPE_UNSPECIFIED, 0},
     "mma.sync.aligned.m16n8k32.row.col.f32.e5m2.e5m2.f32 {f0,f1,f2,f3}, {r1,r2,r3,r4}, {r5,r6}, "
     "{f4,f5,f6,f7};"},
    {"mma.block_scale.mxf8f6f4.m16n8k32.e4m3.ue8m0",
     "mma.sync.aligned.kind::mxf8f6f4.block_scale.scale_vec::1X.m16n8k32.row.col.f32.e4m3.e4m3.f32"
     ".ue8m0",
     {8, 7},
     kSm12x,
     P::kWarp,
     "reads a/b/c fragments and scale registers; writes d fragment",
     "QMMA.SF.16832.F32.E4M3.E4M3.E8",
     "",
     false,
     MmaSignature{ir::M16N8K32, E4M3, E4M3, F32, ir::UE8M0, 32},
     "mma.sync.aligned.kind::mxf8f6f4.block_scale.scale_vec::1X.m16n8k32.row.col.f32.e4m3.e4m3.f32."
     "ue8m0 {f0,f1,f2,f3}, {r1,r2,r3,r4}, {r5,r6}, {f4,f5,f6,f7}, r7, {0,0}, r8, {0,0};"},
    {"mma.block_scale.mxf4nvf4.m16n8k64.e2m1.ue4m3",
     "mma.sync.aligned.kind::mxf4nvf4.block_scale.scale_vec::4X.m16n8k64.row.col.f32.e2m1.e2m1.f32"
     ".ue4m3",
     {8, 7},
     kSm12x,
     P::kWarp,
     "reads a/b/c fragments and scale registers; writes d fragment",
     "OMMA.SF.16864.F32.E2M1.E2M1.UE4M3",
     "",
     false,
     MmaSignature{ir::M16N8K64, E2M1, E2M1, F32, ir::UE4M3, 16},
     "mma.sync.aligned.kind::mxf4nvf4.block_scale.scale_vec::4X.m16n8k64.row.col.f32.e2m1.e2m1.f32."
     "ue4m3 {f0,f1,f2,f3}, {r1,r2,r3,r4}, {r5,r6}, {f4,f5,f6,f7}, r7, {0,0}, r8, {0,0};"},
    {"mma.f8f6f4.m16n8k32.e3m2.f32",
     "mma.sync.aligned.kind::f8f6f4.m16n8k32.row.col.f32.e3m2.e3m2.f32",
     {8, 7},
     kSm12x,
     P::kWarp,
     "reads a/b/c fragments; writes d fragment",
     "QMMA.16832.F32.E3M2.E3M2",
     "",
     false,
     MmaSignature{ir::M16N8K32, ir::E3M2, ir::E3M2, F32, DTYPE_UNSPECIFIED, 0},
     "mma.sync.aligned.kind::f8f6f4.m16n8k32.row.col.f32.e3m2.e3m2.f32 {f0,f1,f2,f3}, "
     "{r1,r2,r3,r4}, {r5,r6}, {f4,f5,f6,f7};"},
    {"mma.f8f6f4.m16n8k32.e2m3.f32",
     "mma.sync.aligned.kind::f8f6f4.m16n8k32.row.col.f32.e2m3.e2m3.f32",
     {8, 7},
     kSm12x,
     P::kWarp,
     "reads a/b/c fragments; writes d fragment",
     "QMMA.16832.F32.E2M3.E2M3",
     "",
     false,
     MmaSignature{ir::M16N8K32, ir::E2M3, ir::E2M3, F32, DTYPE_UNSPECIFIED, 0},
     "mma.sync.aligned.kind::f8f6f4.m16n8k32.row.col.f32.e2m3.e2m3.f32 {f0,f1,f2,f3}, "
     "{r1,r2,r3,r4}, {r5,r6}, {f4,f5,f6,f7};"},
    {"mma.f8f6f4.m16n8k32.e2m1.f32",
     "mma.sync.aligned.kind::f8f6f4.m16n8k32.row.col.f32.e2m1.e2m1.f32",
     {8, 7},
     kSm12x,
     P::kWarp,
     "reads a/b/c fragments; writes d fragment",
     "QMMA.16832.F32.E2M1.E2M1",
     "",
     false,
     MmaSignature{ir::M16N8K32, ir::E2M1, ir::E2M1, F32, DTYPE_UNSPECIFIED, 0},
     "mma.sync.aligned.kind::f8f6f4.m16n8k32.row.col.f32.e2m1.e2m1.f32 {f0,f1,f2,f3}, "
     "{r1,r2,r3,r4}, {r5,r6}, {f4,f5,f6,f7};"},
    {"mma.block_scale.mxf8f6f4.m16n8k32.e5m2.ue8m0",
     "mma.sync.aligned.kind::mxf8f6f4.block_scale.scale_vec::1X.m16n8k32.row.col.f32.e5m2.e5m2.f32."
     "ue8m0",
     {8, 7},
     kSm12x,
     P::kWarp,
     "reads a/b/c fragments and scale registers; writes d fragment",
     "QMMA.SF.16832.F32.E5M2.E5M2.E8",
     "",
     false,
     MmaSignature{ir::M16N8K32, ir::E5M2, ir::E5M2, F32, ir::UE8M0, 32},
     "mma.sync.aligned.kind::mxf8f6f4.block_scale.scale_vec::1X.m16n8k32.row.col.f32.e5m2.e5m2.f32."
     "ue8m0 {f0,f1,f2,f3}, {r1,r2,r3,r4}, {r5,r6}, {f4,f5,f6,f7}, r7, {0,0}, r8, {0,0};"},
    {"mma.block_scale.mxf8f6f4.m16n8k32.e3m2.ue8m0",
     "mma.sync.aligned.kind::mxf8f6f4.block_scale.scale_vec::1X.m16n8k32.row.col.f32.e3m2.e3m2.f32."
     "ue8m0",
     {8, 7},
     kSm12x,
     P::kWarp,
     "reads a/b/c fragments and scale registers; writes d fragment",
     "QMMA.SF.16832.F32.E3M2.E3M2.E8",
     "",
     false,
     MmaSignature{ir::M16N8K32, ir::E3M2, ir::E3M2, F32, ir::UE8M0, 32},
     "mma.sync.aligned.kind::mxf8f6f4.block_scale.scale_vec::1X.m16n8k32.row.col.f32.e3m2.e3m2.f32."
     "ue8m0 {f0,f1,f2,f3}, {r1,r2,r3,r4}, {r5,r6}, {f4,f5,f6,f7}, r7, {0,0}, r8, {0,0};"},
    {"mma.block_scale.mxf8f6f4.m16n8k32.e2m3.ue8m0",
     "mma.sync.aligned.kind::mxf8f6f4.block_scale.scale_vec::1X.m16n8k32.row.col.f32.e2m3.e2m3.f32."
     "ue8m0",
     {8, 7},
     kSm12x,
     P::kWarp,
     "reads a/b/c fragments and scale registers; writes d fragment",
     "QMMA.SF.16832.F32.E2M3.E2M3.E8",
     "",
     false,
     MmaSignature{ir::M16N8K32, ir::E2M3, ir::E2M3, F32, ir::UE8M0, 32},
     "mma.sync.aligned.kind::mxf8f6f4.block_scale.scale_vec::1X.m16n8k32.row.col.f32.e2m3.e2m3.f32."
     "ue8m0 {f0,f1,f2,f3}, {r1,r2,r3,r4}, {r5,r6}, {f4,f5,f6,f7}, r7, {0,0}, r8, {0,0};"},
    {"mma.block_scale.mxf8f6f4.m16n8k32.e2m1.ue8m0",
     "mma.sync.aligned.kind::mxf8f6f4.block_scale.scale_vec::1X.m16n8k32.row.col.f32.e2m1.e2m1.f32."
     "ue8m0",
     {8, 7},
     kSm12x,
     P::kWarp,
     "reads a/b/c fragments and scale registers; writes d fragment",
     "QMMA.SF.16832.F32.E2M1.E2M1.E8",
     "",
     false,
     MmaSignature{ir::M16N8K32, ir::E2M1, ir::E2M1, F32, ir::UE8M0, 32},
     "mma.sync.aligned.kind::mxf8f6f4.block_scale.scale_vec::1X.m16n8k32.row.col.f32.e2m1.e2m1.f32."
     "ue8m0 {f0,f1,f2,f3}, {r1,r2,r3,r4}, {r5,r6}, {f4,f5,f6,f7}, r7, {0,0}, r8, {0,0};"},
    {"mma.block_scale.mxf4.m16n8k64.e2m1.ue8m0",
     "mma.sync.aligned.kind::mxf4.block_scale.scale_vec::2X.m16n8k64.row.col.f32.e2m1.e2m1.f32."
     "ue8m0",
     {8, 7},
     kSm12x,
     P::kWarp,
     "reads a/b/c fragments and scale registers; writes d fragment (the same SASS as "
     "kind::mxf4nvf4 with ue8m0 scale_vec::2X)",
     "OMMA.SF.16864.F32.E2M1.E2M1.E8",
     "",
     false,
     MmaSignature{ir::M16N8K64, E2M1, E2M1, F32, ir::UE8M0, 32},
     "mma.sync.aligned.kind::mxf4.block_scale.scale_vec::2X.m16n8k64.row.col.f32.e2m1.e2m1.f32."
     "ue8m0 {f0,f1,f2,f3}, {r1,r2,r3,r4}, {r5,r6}, {f4,f5,f6,f7}, r7, {0,0}, r8, {0,0};"},
    {"ldmatrix.m8n8.x1.b16",
     "ldmatrix.sync.aligned.m8n8.x1.shared.b16",
     {6, 5},
     kAll,
     P::kWarp,
     "reads shared; writes 1 fragment register",
     "LDSM.16.M88",
     "LDSM.16.M88",
     false,
     std::nullopt,
     "ldmatrix.sync.aligned.m8n8.x1.shared.b16 {r1}, [r0];"},
    {"ldmatrix.m8n8.x2.b16",
     "ldmatrix.sync.aligned.m8n8.x2.shared.b16",
     {6, 5},
     kAll,
     P::kWarp,
     "reads shared; writes 2 fragment registers",
     "LDSM.16.M88.2",
     "LDSM.16.M88.2",
     false,
     std::nullopt,
     "ldmatrix.sync.aligned.m8n8.x2.shared.b16 {r1,r2}, [r0];"},
    {"ldmatrix.m8n8.x4.b16",
     "ldmatrix.sync.aligned.m8n8.x4.shared.b16",
     {6, 5},
     kAll,
     P::kWarp,
     "reads shared; writes 4 fragment registers",
     "LDSM.16.M88.4",
     "LDSM.16.M88.4",
     false,
     std::nullopt,
     "ldmatrix.sync.aligned.m8n8.x4.shared.b16 {r1,r2,r3,r4}, [r0];"},
    {"ldmatrix.m8n8.x4.trans.b16",
     "ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16",
     {6, 5},
     kAll,
     P::kWarp,
     "reads shared; writes 4 transposed fragment registers",
     "LDSM.16.MT88.4",
     "LDSM.16.MT88.4",
     false,
     std::nullopt,
     "ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {r1,r2,r3,r4}, [r0];"},
    {"ldmatrix.m16n16.x1.trans.b8",
     "ldmatrix.sync.aligned.m16n16.x1.trans.shared.b8",
     {8, 6},
     kSm12x,
     P::kWarp,
     "reads shared; writes 2 fragment registers",
     "LDSM.8.MT1616",
     "",
     false,
     std::nullopt,
     "ldmatrix.sync.aligned.m16n16.x1.trans.shared.b8 {r1,r2}, [r0];"},
    {"ldmatrix.m16n16.x2.trans.b8",
     "ldmatrix.sync.aligned.m16n16.x2.trans.shared.b8",
     {8, 7},
     kSm12x,
     P::kWarp,
     "reads shared; writes 4 fragment registers",
     "LDSM.8.MT1616.2",
     "",
     false,
     std::nullopt,
     "ldmatrix.sync.aligned.m16n16.x2.trans.shared.b8 {r1,r2,r3,r4}, [r0];"},
    {"ldmatrix.m16n16.x1.trans.b8x16.b6x16_p32",
     "ldmatrix.sync.aligned.m16n16.x1.trans.shared.b8x16.b6x16_p32",
     {8, 7},
     kSm12x,
     P::kWarp,
     "reads shared (FP6 packed in bytes); writes 2 fragment registers",
     "LDSM.U6x16P32TO8.MT1616",
     "",
     false,
     std::nullopt,
     "ldmatrix.sync.aligned.m16n16.x1.trans.shared.b8x16.b6x16_p32 {r1,r2}, [r0];"},
    {"ldmatrix.m8n16.x1.b8x16.b6x16_p32",
     "ldmatrix.sync.aligned.m8n16.x1.shared.b8x16.b6x16_p32",
     {8, 7},
     kSm12x,
     P::kWarp,
     "reads shared (FP6 packed in bytes); writes 1 fragment register",
     "LDSM.U6x16P32TO8.M816",
     "",
     false,
     std::nullopt,
     "ldmatrix.sync.aligned.m8n16.x1.shared.b8x16.b6x16_p32 {r1}, [r0];"},
    {"ldmatrix.m8n16.x2.b8x16.b6x16_p32",
     "ldmatrix.sync.aligned.m8n16.x2.shared.b8x16.b6x16_p32",
     {8, 7},
     kSm12x,
     P::kWarp,
     "reads shared (FP6 packed in bytes); writes 2 fragment registers",
     "LDSM.U6x16P32TO8.M816.2",
     "",
     false,
     std::nullopt,
     "ldmatrix.sync.aligned.m8n16.x2.shared.b8x16.b6x16_p32 {r1,r2}, [r0];"},
    {"ldmatrix.m8n16.x4.b8x16.b6x16_p32",
     "ldmatrix.sync.aligned.m8n16.x4.shared.b8x16.b6x16_p32",
     {8, 7},
     kSm12x,
     P::kWarp,
     "reads shared (FP6 packed in bytes); writes 4 fragment registers",
     "LDSM.U6x16P32TO8.M816.4",
     "",
     false,
     std::nullopt,
     "ldmatrix.sync.aligned.m8n16.x4.shared.b8x16.b6x16_p32 {r1,r2,r3,r4}, [r0];"},
    {"ldmatrix.m16n16.x1.trans.b8x16.b4x16_p64",
     "ldmatrix.sync.aligned.m16n16.x1.trans.shared.b8x16.b4x16_p64",
     {8, 7},
     kSm12x,
     P::kWarp,
     "reads shared (FP4 packed in bytes); writes 2 fragment registers",
     "LDSM.U4x16P64TO8.MT1616",
     "",
     false,
     std::nullopt,
     "ldmatrix.sync.aligned.m16n16.x1.trans.shared.b8x16.b4x16_p64 {r1,r2}, [r0];"},
    {"ldmatrix.m8n16.x1.b8x16.b4x16_p64",
     "ldmatrix.sync.aligned.m8n16.x1.shared.b8x16.b4x16_p64",
     {8, 7},
     kSm12x,
     P::kWarp,
     "reads shared (FP4 packed in bytes); writes 1 fragment register",
     "LDSM.U4x16P64TO8.M816",
     "",
     false,
     std::nullopt,
     "ldmatrix.sync.aligned.m8n16.x1.shared.b8x16.b4x16_p64 {r1}, [r0];"},
    {"ldmatrix.m8n16.x2.b8x16.b4x16_p64",
     "ldmatrix.sync.aligned.m8n16.x2.shared.b8x16.b4x16_p64",
     {8, 7},
     kSm12x,
     P::kWarp,
     "reads shared (FP4 packed in bytes); writes 2 fragment registers",
     "LDSM.U4x16P64TO8.M816.2",
     "",
     false,
     std::nullopt,
     "ldmatrix.sync.aligned.m8n16.x2.shared.b8x16.b4x16_p64 {r1,r2}, [r0];"},
    {"ldmatrix.m8n16.x4.b8x16.b4x16_p64",
     "ldmatrix.sync.aligned.m8n16.x4.shared.b8x16.b4x16_p64",
     {8, 7},
     kSm12x,
     P::kWarp,
     "reads shared (FP4 packed in bytes); writes 4 fragment registers",
     "LDSM.U4x16P64TO8.M816.4",
     "",
     false,
     std::nullopt,
     "ldmatrix.sync.aligned.m8n16.x4.shared.b8x16.b4x16_p64 {r1,r2,r3,r4}, [r0];"},
    {"cp.async.cg.16",
     "cp.async.cg.shared.global",
     {7, 0},
     kAll,
     P::kThread,
     "reads global; writes shared asynchronously (async group completion)",
     "LDGSTS.E.BYPASS.128",
     "LDGSTS.E.BYPASS.128",
     false,
     std::nullopt,
     "ld.param.u64 rd0, [arg0]; cp.async.cg.shared.global [r0], [rd0], 16; "
     "cp.async.commit_group; cp.async.wait_group 0;"},
    {"cp.async.bulk.tensor.2d",
     "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes",
     {8, 0},
     kAll,
     P::kElectedLane,
     "reads global through a tensor map; writes shared; completes a transaction barrier",
     "UTMALDG",
     "UTMALDG",
     false,
     std::nullopt,
     "ld.param.u64 rd0, [arg0]; cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::"
     "complete_tx::bytes [r0], [rd0, {r1, r2}], [r0];"},
    {"mbarrier.init",
     "mbarrier.init.shared::cta.b64",
     {7, 8},
     kAll,
     P::kThread,
     "writes a shared barrier",
     "",
     "",
     false,
     std::nullopt,
     "mbarrier.init.shared::cta.b64 [r0], 1;"},
    {"mbarrier.try_wait.parity",
     "mbarrier.try_wait.parity.shared::cta.b64",
     {7, 8},
     kAll,
     P::kThread,
     "reads a shared barrier phase",
     "SYNCS",
     "SYNCS",
     false,
     std::nullopt,
     "mbarrier.try_wait.parity.shared::cta.b64 q0, [r0], r1;"},
    {"mbarrier.arrive.expect_tx",
     "mbarrier.arrive.expect_tx.shared::cta.b64",
     {8, 0},
     kAll,
     P::kElectedLane,
     "arms a shared barrier with transaction bytes and arrives once",
     "",
     "",
     false,
     std::nullopt,
     "mbarrier.arrive.expect_tx.shared::cta.b64 _, [r0], r1;"},
    {"mbarrier.arrive",
     "mbarrier.arrive.shared::cta.b64",
     {7, 8},
     kAll,
     P::kThread,
     "arrives on a shared barrier (releases a stage)",
     "",
     "",
     false,
     std::nullopt,
     "mbarrier.arrive.shared::cta.b64 _, [r0];"},
    {"fence.proxy.async",
     "fence.proxy.async.shared::cta",
     {8, 0},
     kAll,
     P::kThread,
     "orders generic-proxy shared accesses before later async-proxy (TMA) accesses",
     "",
     "",
     false,
     std::nullopt,
     "fence.proxy.async.shared::cta;"},
    {"fence.mbarrier_init",
     "fence.mbarrier_init.release.cluster",
     {8, 0},
     kAll,
     P::kThread,
     "makes barrier initialization visible to the async proxy",
     "",
     "",
     false,
     std::nullopt,
     "fence.mbarrier_init.release.cluster;"},
    {"setmaxnreg.inc",
     "setmaxnreg.inc.sync.aligned.u32",
     {8, 0},
     kSm12x,
     P::kWarp,
     "changes the per-thread register budget of the warp",
     "USETMAXREG",
     "",
     false,
     std::nullopt,
     "setmaxnreg.inc.sync.aligned.u32 232;"},
    {"setmaxnreg.dec",
     "setmaxnreg.dec.sync.aligned.u32",
     {8, 0},
     kSm12x,
     P::kWarp,
     "releases per-thread registers of the warp (a loader's, for the compute warps)",
     "USETMAXREG",
     "",
     false,
     std::nullopt,
     "setmaxnreg.dec.sync.aligned.u32 40;"},
    {"wgmma",
     "wgmma.mma_async.sync.aligned",
     {8, 0},
     kNone,
     P::kWarpgroup,
     "datacenter warpgroup MMA",
     "",
     "",
     true,
     std::nullopt,
     "wgmma.fence.sync.aligned;"},
    {"tcgen05.mma",
     "tcgen05.mma.cta_group::1",
     {8, 6},
     kNone,
     P::kElectedLane,
     "datacenter MMA into tensor memory",
     "",
     "",
     true,
     std::nullopt,
     "tcgen05.fence::before_thread_sync;"},
    {"tcgen05.alloc.cta_group::2",
     "tcgen05.alloc.cta_group::2.sync.aligned.shared::cta.b32",
     {8, 6},
     kNone,
     P::kCtaPair,
     "datacenter two-CTA tensor-memory allocation",
     "",
     "",
     true,
     std::nullopt,
     "tcgen05.alloc.cta_group::2.sync.aligned.shared::cta.b32 [r0], 32;"},
}};

}  // namespace

std::span<const InstrDescriptor> InstructionTable() { return kTable; }

const InstrDescriptor* FindInstruction(absl::string_view key) {
  for (const InstrDescriptor& d : kTable)
    if (d.key == key) return &d;
  return nullptr;
}

const InstrDescriptor* FindMma(const ir::MmaInstr& instr, bool* shape_known) {
  *shape_known = false;
  const ir::DType scale =
      instr.has_block_scale() ? instr.block_scale().format() : DTYPE_UNSPECIFIED;
  for (const InstrDescriptor& d : kTable) {
    if (!d.mma || d.mma->shape != instr.shape()) continue;
    *shape_known = true;
    if (d.mma->a == instr.a() && d.mma->b == instr.b() &&
        d.mma->accumulator == instr.accumulator() && d.mma->scale_format == scale)
      return &d;
  }
  return nullptr;
}

std::vector<const InstrDescriptor*> InstructionsForLoadForm(ir::MatrixLoadForm form) {
  switch (form) {
    case ir::LDMATRIX_X1:
      return {FindInstruction("ldmatrix.m8n8.x1.b16")};
    case ir::LDMATRIX_X2:
      return {FindInstruction("ldmatrix.m8n8.x2.b16")};
    case ir::LDMATRIX_X4:
      return {FindInstruction("ldmatrix.m8n8.x4.b16")};
    case ir::LDMATRIX_X4_TRANS:
      return {FindInstruction("ldmatrix.m8n8.x4.trans.b16")};
    case ir::LDMATRIX_M16N16_B8:
      return {FindInstruction("ldmatrix.m16n16.x1.trans.b8")};
    default:
      return {};
  }
}

std::vector<const InstrDescriptor*> InstructionsForTransfer(ir::Transfer transfer) {
  switch (transfer) {
    case ir::CP_ASYNC:
      return {FindInstruction("cp.async.cg.16")};
    case ir::TMA:
      return {
          FindInstruction("cp.async.bulk.tensor.2d"),  FindInstruction("mbarrier.init"),
          FindInstruction("fence.mbarrier_init"),      FindInstruction("mbarrier.arrive.expect_tx"),
          FindInstruction("mbarrier.try_wait.parity"), FindInstruction("mbarrier.arrive"),
          FindInstruction("fence.proxy.async")};
    default:
      return {};
  }
}

std::optional<PtxVersion> PtxVersionForCudaRelease(int major, int minor) {
  struct Row {
    int cuda_major, cuda_minor;
    PtxVersion ptx;
  };
  static constexpr Row kRows[] = {{12, 0, {8, 0}}, {12, 1, {8, 1}}, {12, 2, {8, 2}},
                                  {12, 3, {8, 3}}, {12, 4, {8, 4}}, {12, 5, {8, 5}},
                                  {12, 6, {8, 5}}, {12, 8, {8, 7}}, {12, 9, {8, 8}},
                                  {13, 0, {9, 0}}, {13, 1, {9, 1}}};
  for (const Row& r : kRows)
    if (r.cuda_major == major && r.cuda_minor == minor) return r.ptx;
  return std::nullopt;
}

}  // namespace cake::compiler
