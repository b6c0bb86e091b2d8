#include "worker_paths.h"

#include <unistd.h>

#include <cstdlib>
#include <filesystem>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "base/files.h"
#include "compiler/toolchain.h"
#include "gpuqueue/worker_reach.h"
#include "gpuqueue/worker_sandbox.h"
#include "spdlog/spdlog.h"

namespace cake::server {
namespace {

namespace fs = std::filesystem;

constexpr char kStateDirMarker[] = "state_dir";

bool IsDefaultRuntime(const DaemonConfig& cfg) {
  const char* r = std::getenv("RUNTIME_DIRECTORY");
  return cfg.runtime_dir.empty() && (r == nullptr || *r == '\0');
}

std::string RuntimeDir(const DaemonConfig& cfg, const OrchestratorConfig& o) {
  if (!cfg.runtime_dir.empty()) return cfg.runtime_dir;
  if (const char* r = std::getenv("RUNTIME_DIRECTORY"); r != nullptr && *r)
    return std::string(absl::string_view(r).substr(0, absl::string_view(r).find(':')));
  return (fs::path(kDefaultRuntimeParent) / o.containment_scope).string();
}

// Copies what the worker uid cannot reach but can run from a copy; says so in the log.
absl::Status MirrorUnreachable(uid_t uid, gid_t gid, const std::string& runtime,
                               const std::string& cuobjdump, OrchestratorConfig* o, int* copied) {
  std::vector<gpuqueue::PathNeed> needs = {{"the worker", o->worker_path, X_OK}};
  if (!cuobjdump.empty()) needs.push_back({"cuobjdump", cuobjdump, X_OK});
  auto unreachable = gpuqueue::FindUnreachable(uid, gid, needs);
  if (!unreachable.ok()) return unreachable.status();
  for (const gpuqueue::Unreachable& u : *unreachable) {
    auto copy = gpuqueue::MirrorExecutable(u.need.path, (fs::path(runtime) / "bin").string());
    if (!copy.ok())
      return absl::FailedPreconditionError(
          absl::StrCat(gpuqueue::DescribeUnreachable(uid, u),
                       "; and no copy could be made: ", copy.status().message()));
    ++*copied;
    spdlog::info(
        "the worker uid {} cannot reach {} at {} ({} is mode {:04o}): workers run a copy, {}", uid,
        u.need.what, u.need.path, u.blocking, u.mode, *copy);
    // cuobjdump -sass runs nvdisasm from its own folder.
    std::error_code ec;
    const fs::path nvdisasm = fs::canonical(u.need.path, ec).parent_path() / "nvdisasm";
    if (u.need.what == "cuobjdump" && !ec && fs::exists(nvdisasm, ec)) {
      auto beside = gpuqueue::MirrorExecutable(nvdisasm.string(), fs::path(*copy).parent_path());
      if (!beside.ok()) return beside.status();
    }
    if (u.need.what == "the worker")
      o->worker_path = *copy;
    else
      o->worker_env["CAKE_CUOBJDUMP"] = *copy;
  }
  return absl::OkStatus();
}

}  // namespace

int PruneAbandonedRuntimeScopes(const std::string& parent) {
  int removed = 0;
  std::error_code ec;
  for (const fs::directory_entry& scope : fs::directory_iterator(parent, ec)) {
    // Only folders this daemon made (they name their state folder); nothing else is touched.
    const std::string state = base::ReadFileBytes(scope.path() / kStateDirMarker);
    if (state.empty() || fs::exists(state, ec)) continue;
    if (fs::remove_all(scope.path(), ec) != static_cast<std::uintmax_t>(-1) && !ec) ++removed;
  }
  return removed;
}

void RemoveWorkerCopies(const WorkerCopies& copies) {
  std::error_code ec;
  if (!copies.scope_dir.empty())
    fs::remove_all(copies.scope_dir, ec);
  else if (!copies.bin_dir.empty())
    fs::remove_all(copies.bin_dir, ec);
  if (ec) spdlog::warn("cannot remove the workers' copies: {}", ec.message());
}

absl::Status PrepareWorkerPaths(const DaemonConfig& cfg, OrchestratorConfig* o,
                                WorkerCopies* copies) {
  std::string nvcc, cuobjdump;
  if (auto tc = compiler::DetectToolchain(); tc.ok()) {
    nvcc = tc->nvcc;
    cuobjdump = tc->cuobjdump;
  }
  if (o->worker_uid >= 0) {
    const auto uid = static_cast<uid_t>(o->worker_uid);
    const auto gid = static_cast<gid_t>(o->worker_gid >= 0 ? o->worker_gid : o->worker_uid);
    const std::string runtime = RuntimeDir(cfg, *o);
    if (IsDefaultRuntime(cfg)) {
      // Copies left by daemons killed before they could remove them; each scope is ~60 MB.
      if (int pruned = PruneAbandonedRuntimeScopes(kDefaultRuntimeParent); pruned > 0)
        spdlog::info("removed {} runtime folder(s) under {} whose state folder is gone", pruned,
                     kDefaultRuntimeParent);
    }
    int copied = 0;
    absl::Status mirrored = MirrorUnreachable(uid, gid, runtime, cuobjdump, o, &copied);
    if (copied > 0) {
      copies->bin_dir = (fs::path(runtime) / "bin").string();
      if (IsDefaultRuntime(cfg)) {
        copies->scope_dir = runtime;
        if (absl::Status s =
                base::WriteFileAtomically(fs::path(runtime) / kStateDirMarker, o->state_dir, 0644);
            !s.ok())
          spdlog::warn("{}", std::string(s.message()));
      }
    }
    if (!mirrored.ok()) return mirrored;
    if (auto it = o->worker_env.find("CAKE_CUOBJDUMP"); it != o->worker_env.end())
      cuobjdump = it->second;
    // Everything a job then needs, as the worker uid sees it.
    std::vector<gpuqueue::PathNeed> needs = {
        {"the worker", o->worker_path, X_OK},
        {"the job folders", (fs::path(o->state_dir) / "work").string(), X_OK},
        {"the artifact store", o->store_root, X_OK},
    };
    if (!nvcc.empty()) needs.push_back({"nvcc", nvcc, X_OK});
    if (!cuobjdump.empty()) needs.push_back({"cuobjdump", cuobjdump, X_OK});
    if (auto it = o->worker_env.find("LD_LIBRARY_PATH"); it != o->worker_env.end())
      for (absl::string_view dir : absl::StrSplit(it->second, ':', absl::SkipEmpty()))
        needs.push_back({"a library folder (LD_LIBRARY_PATH)", std::string(dir), X_OK});
    auto left = gpuqueue::FindUnreachable(uid, gid, needs);
    if (!left.ok()) return left.status();
    if (!left->empty())
      return absl::FailedPreconditionError(gpuqueue::DescribeUnreachable(uid, left->front()));
  }
  // A worker reads the toolkit it compiles with, its own folder and its libraries, and no other
  // file outside the system's trees.
  std::vector<std::string> tools = {nvcc, cuobjdump};
  for (const char* var : {"CAKE_NVCC", "CAKE_CUOBJDUMP", "CAKE_COMPUTE_SANITIZER", "CAKE_LIBCUDA",
                          "CAKE_LIBNVML", "CUDA_HOME"})
    if (auto it = o->worker_env.find(var); it != o->worker_env.end()) tools.push_back(it->second);
  o->worker_readable = gpuqueue::WorkerReadSet(o->worker_path, o->worker_env, tools);
  if (cfg.confine_workers)
    spdlog::info("confined workers read the system's trees and: {}",
                 absl::StrJoin(o->worker_readable, " "));
  return absl::OkStatus();
}

}  // namespace cake::server
