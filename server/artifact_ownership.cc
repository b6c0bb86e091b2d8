#include "artifact_ownership.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "spdlog/spdlog.h"

namespace cake::server {
namespace {

namespace fs = std::filesystem;

absl::Status Own(const fs::path& p, uid_t uid, gid_t gid, mode_t mode) {
  if (::lchown(p.c_str(), uid, gid) != 0)
    return absl::FailedPreconditionError(
        absl::StrCat("cannot give ", p.string(), " to uid ", uid, ": ", std::strerror(errno)));
  struct stat st {};
  if (::lstat(p.c_str(), &st) == 0 && !S_ISLNK(st.st_mode) && ::chmod(p.c_str(), mode) != 0)
    return absl::FailedPreconditionError(
        absl::StrCat("cannot set the mode of ", p.string(), ": ", std::strerror(errno)));
  return absl::OkStatus();
}

}  // namespace

absl::Status PrepareArtifactStore(const std::string& store_root, uid_t daemon_uid, gid_t worker_gid,
                                  uid_t worker_uid) {
  std::error_code ec;
  fs::create_directories(fs::path(store_root) / "tmp", ec);
  if (ec)
    return absl::FailedPreconditionError(
        absl::StrCat("cannot create the artifact store ", store_root, ": ", ec.message()));
  if (absl::Status s = Own(store_root, daemon_uid, worker_gid, S_ISVTX | 0770); !s.ok()) return s;
  if (absl::Status s = Own(fs::path(store_root) / "tmp", worker_uid, worker_gid, 0700); !s.ok())
    return s;
  // Entries an earlier daemon left to the worker's uid are handed over too.
  for (const fs::directory_entry& shard : fs::directory_iterator(store_root, ec)) {
    const std::string name = shard.path().filename().string();
    if (name.size() != 2 || !shard.is_directory(ec) || shard.is_symlink(ec)) continue;
    for (const fs::directory_entry& entry : fs::directory_iterator(shard.path(), ec))
      if (entry.is_directory(ec) && !entry.is_symlink(ec))
        if (absl::Status s =
                HandOverArtifacts(store_root, entry.path().string(), daemon_uid, worker_gid);
            !s.ok())
          return s;
  }
  return absl::OkStatus();
}

absl::Status HandOverArtifacts(const std::string& store_root, const std::string& artifact_dir,
                               uid_t daemon_uid, gid_t worker_gid) {
  const fs::path root = fs::path(store_root).lexically_normal();
  const fs::path dir = fs::path(artifact_dir).lexically_normal();
  const fs::path rel = dir.lexically_relative(root);
  if (rel.empty() || absl::StartsWith(rel.string(), "..") || rel.begin() == rel.end() ||
      std::distance(rel.begin(), rel.end()) != 2)
    return absl::InvalidArgumentError(
        absl::StrCat(artifact_dir, " is not an entry of the artifact store ", store_root));
  // The shard folder (KEY[0:2]) becomes the daemon's, sticky and group-writable like the root.
  if (absl::Status s = Own(dir.parent_path(), daemon_uid, worker_gid, S_ISVTX | 0770); !s.ok())
    return s;
  if (absl::Status s = Own(dir, daemon_uid, worker_gid, 0750); !s.ok()) return s;
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(dir, ec);
       !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
    const bool is_dir = it->is_directory(ec) && !it->is_symlink(ec);
    if (absl::Status s = Own(it->path(), daemon_uid, worker_gid, is_dir ? 0750 : 0640); !s.ok())
      return s;
  }
  if (ec)
    return absl::FailedPreconditionError(
        absl::StrCat("cannot walk ", dir.string(), ": ", ec.message()));
  return absl::OkStatus();
}

void HandOverCompileOutputs(const worker::Reply& reply, const std::string& store_root,
                            uid_t daemon_uid, gid_t worker_gid) {
  auto hand_over = [&](const report::LoweringReceipt& r) {
    if (r.artifact_dir().empty()) return;
    if (absl::Status s = HandOverArtifacts(store_root, r.artifact_dir(), daemon_uid, worker_gid);
        !s.ok())
      spdlog::warn("artifact ownership: {}", std::string(s.message()));
  };
  for (const worker::TargetResult& t : reply.compile().results()) {
    if (t.has_receipt()) hand_over(t.receipt());
    for (const auto& entry : t.manifest().entries()) hand_over(entry.receipt());
  }
}

}  // namespace cake::server
