// Shared pieces of the GPU tests (label `gpu`): the worker binary, kernels of the bundled schedule
// and of the adversarial corpus as a worker sees them (a receipt naming a hash-checked cubin), a
// small contract, and a probe that says why a test must skip. Header-only; test code.
#pragma once

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include "base/digest.h"

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "base/subprocess.h"
#include "cake/contract.pb.h"
#include "cake/worker.pb.h"
#include "compiler/canonical.h"
#include "compiler/compiler.h"
#include "gpuqueue/sandbox.h"
#include "workloads/gemm_bf16/gemm_bf16.h"
#include "workloads/gemm_bf16/space.h"

namespace cake::testing {

namespace fs = std::filesystem;

inline std::string EnvOr(const char* name, const std::string& fallback) {
  const char* v = std::getenv(name);
  return v && *v ? v : fallback;
}

inline std::string SourceDir() { return EnvOr("CAKE_SOURCE_DIR", "."); }

#ifdef CAKE_WORKER_PATH
inline std::string WorkerPath() { return EnvOr("CAKE_WORKER", CAKE_WORKER_PATH); }
#endif

// Runs one job in a fresh cake-worker process, as the daemon does.
inline absl::StatusOr<worker::Reply> InWorker(const worker::Request& r, int timeout_s = 300) {
  gpuqueue::SandboxOptions o;
  o.worker_path = WorkerPath();
  o.timeout = std::chrono::seconds(timeout_s);
  return gpuqueue::RunInWorker(r, o);
}

// Why GPU work cannot run here ("" when an sm_90 device answers a probe worker).
inline std::string GpuSkipReason() {
  worker::Request probe;
  probe.mutable_probe();
  auto reply = InWorker(probe, 60);
  if (!reply.ok()) return std::string(reply.status().message());
  if (reply->probe().device_count() == 0) return "no CUDA device: " + reply->probe().reason();
  if (reply->probe().devices(0).find("(9.0)") == std::string::npos)
    return "needs an sm_90 device; found " + reply->probe().devices(0);
  return "";
}

// The bundled warp-GEMM schedule, lowered for sm_90.
inline absl::StatusOr<worker::KernelRef> BundledKernel(const std::string& name = "bundled") {
  compiler::ParsedModule parsed;
  parsed.module = workloads::gemm_bf16::MakeWarpGemm({});
  compiler::CompileOptions opts;
  opts.store_root = (fs::temp_directory_path() / "cake_gpu_test_store").string();
  auto target = compiler::TargetByName("sm_90");
  if (!target.ok()) return target.status();
  auto c = compiler::Compile(parsed, **target, opts);
  if (!c.ok()) return c.status();
  if (!c->receipt || c->receipt->outcome() != report::LoweringReceipt::PASS)
    return absl::InternalError("the bundled schedule did not lower");
  worker::KernelRef ref;
  ref.set_candidate(name);
  *ref.mutable_receipt() = *c->receipt;
  return ref;
}

// Variant `variant` of a hand-written corpus source (relative to the source tree) compiled by
// nvcc for sm_90 into `dir`, with the receipt a worker needs but the launch (the caller's ABI)
// and the symbol's arguments: an artifact as a lowering would leave it.
inline absl::StatusOr<worker::KernelRef> CompileCorpusVariant(const std::string& name,
                                                              const std::string& source,
                                                              const std::string& symbol,
                                                              int variant, int threads,
                                                              const fs::path& dir) {
  fs::create_directories(dir);
  const fs::path cubin = dir / "kernel.cubin";
  auto run = base::RunSubprocess({EnvOr("CAKE_NVCC", "nvcc"), "-cubin", "-arch=sm_90", "-O3",
                                  "-diag-suppress", "177", absl::StrCat("-DVARIANT=", variant),
                                  "-o", cubin.string(), SourceDir() + "/" + source});
  if (!run.ok()) return run.status();
  if (!run->ok()) return absl::InternalError("nvcc failed: " + run->stderr_bytes);
  std::ifstream in(cubin, std::ios::binary);
  std::ostringstream bytes;
  bytes << in.rdbuf();
  worker::KernelRef ref;
  ref.set_candidate(name);
  report::LoweringReceipt* r = ref.mutable_receipt();
  r->set_target("sm_90");
  r->set_kernel_symbol(symbol);
  r->set_artifact_dir(dir.string());
  r->set_cubin_sha256(base::Sha256Hex(bytes.str()));
  r->set_threads_per_cta(threads);
  r->mutable_launch()->set_threads_per_cta(threads);
  r->set_outcome(report::LoweringReceipt::PASS);
  return ref;
}

// Appends the launch's arguments: tensors, then scalars, in order.
inline void AddLaunchArgs(report::LaunchSpec* l, const std::vector<std::string>& tensors,
                          const std::vector<std::string>& scalars) {
  for (const std::string& t : tensors) {
    auto* a = l->add_args();
    a->set_kind(report::LaunchSpec::Arg::TENSOR);
    a->set_name(t);
  }
  for (const std::string& sc : scalars) {
    auto* a = l->add_args();
    a->set_kind(report::LaunchSpec::Arg::SCALAR);
    a->set_name(sc);
  }
}

// A corpus variant of tests/corpus/adversarial/gemm_variants.cu, with the warp GEMM's ABI
// (A, B, C, M, N, K), 16x16 tiles, 256 threads, no dynamic shared memory.
inline absl::StatusOr<worker::KernelRef> CorpusKernel(const std::string& name, int variant,
                                                      const fs::path& dir) {
  auto ref = CompileCorpusVariant(name, "tests/corpus/adversarial/gemm_variants.cu",
                                  "cake_corpus_gemm", variant, 256, dir);
  if (!ref.ok()) return ref;
  report::LaunchSpec* l = ref->mutable_receipt()->mutable_launch();
  AddLaunchArgs(l, {"A", "B", "C"}, {"M", "N", "K"});
  l->mutable_grid_x()->set_extent("N");
  l->mutable_grid_x()->set_divisor(16);
  l->mutable_grid_y()->set_extent("M");
  l->mutable_grid_y()->set_divisor(16);
  return ref;
}

// A small contract: one required 512^3 row, the default validation cases, all four sanitizers,
// and a short stopping rule so a paired run takes a second or two.
inline contract::Contract SmallContract(const std::vector<std::string>& configs = {"eager/cold"}) {
  contract::Contract c;
  c.set_name("gpu_test");
  c.set_operation("gemm_bf16_tn");
  c.set_output_dtype("bf16");
  c.mutable_tolerance()->set_rtol(1.0 / 128);
  c.mutable_tolerance()->set_atol(0.01);
  c.mutable_tolerance()->set_max_relative_l2(0.008);
  contract::Row* row = c.add_rows();
  row->set_name("square_512");
  *row->mutable_problem() = workloads::gemm_bf16::Problem(512, 512, 512);
  row->set_weight(1);
  row->set_required(true);
  *c.mutable_validation() = workloads::gemm_bf16::GemmWorkload().DefaultPolicy();
  c.mutable_validation()->set_launch_timeout_s(5);
  for (const char* tool : {"memcheck", "racecheck", "initcheck", "synccheck"}) {
    contract::EvidenceRequirement* e = c.mutable_validation()->add_evidence();
    e->set_kind(evidence::SANITIZER);
    e->set_tool(tool);
    e->set_required(true);
  }
  contract::MeasurementProtocol* p = c.mutable_protocol();
  p->set_pairs(10);
  p->set_max_pairs(30);
  p->set_min_gpu_seconds(0.02);
  p->set_practical_floor(0.02);
  p->set_warmup_launches(2);
  for (const std::string& cfg : configs) p->add_configurations(cfg);
  return c;
}

inline const evidence::EvidenceRecord* FindRecord(const evidence::Validation& v,
                                                  evidence::EvidenceKind kind,
                                                  const std::string& tool = "") {
  for (const evidence::EvidenceRecord& r : v.records())
    if (r.kind() == kind && r.tool() == tool) return &r;
  return nullptr;
}

}  // namespace cake::testing
