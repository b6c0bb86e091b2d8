#include "artifact_store.h"
#include "base/digest.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>

#include "absl/strings/str_cat.h"
#include "base/files.h"
#include "canonical.h"
#include "google/protobuf/util/json_util.h"

namespace cake::compiler {
namespace fs = std::filesystem;
namespace {

absl::Status WriteFileSynced(const fs::path& path, const std::string& bytes) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0)
    return absl::UnavailableError(
        absl::StrCat("cannot write ", path.string(), ": ", std::strerror(errno)));
  size_t off = 0;
  while (off < bytes.size()) {
    const ssize_t w = ::write(fd, bytes.data() + off, bytes.size() - off);
    if (w <= 0) {
      ::close(fd);
      return absl::UnavailableError(
          absl::StrCat("short write to ", path.string(), ": ", std::strerror(errno)));
    }
    off += static_cast<size_t>(w);
  }
  const bool synced = ::fsync(fd) == 0;
  const int err = errno;
  if (::close(fd) != 0 || !synced)
    return absl::UnavailableError(
        absl::StrCat("cannot write ", path.string(), ": ", std::strerror(synced ? errno : err)));
  return absl::OkStatus();
}

}  // namespace

std::string ArtifactStore::DirFor(const std::string& key) const {
  return (fs::path(root_) / key.substr(0, 2) / key).string();
}

std::string ArtifactStore::ScratchDir(const std::string& key) const {
  return (fs::path(root_) / "tmp" / absl::StrCat(key, ".", ::getpid())).string();
}

absl::StatusOr<report::LoweringReceipt> ArtifactStore::Lookup(const std::string& key) const {
  const fs::path dir = DirFor(key);
  std::error_code ec;
  if (!fs::exists(dir / "receipt.pb", ec)) return absl::NotFoundError("no entry");
  report::LoweringReceipt receipt;
  if (!receipt.ParseFromString(base::ReadFileBytes(dir / "receipt.pb")))
    return absl::NotFoundError("corrupt receipt");
  if (base::Sha256Hex(base::ReadFileBytes(dir / "kernel.cubin")) != receipt.cubin_sha256())
    return absl::NotFoundError("cubin does not match its receipt");
  return receipt;
}

std::string ArtifactStore::FailedDirFor(const std::string& key) const {
  return (fs::path(root_) / "failed" / key).string();
}

absl::Status ArtifactStore::Commit(const std::string& key,
                                   const std::map<std::string, std::string>& files,
                                   const report::LoweringReceipt& receipt) const {
  return Publish(key, DirFor(key), files, receipt);
}

absl::Status ArtifactStore::KeepFailedBuild(const std::string& key,
                                            const std::map<std::string, std::string>& files,
                                            const report::LoweringReceipt& receipt) const {
  return Publish(key, FailedDirFor(key), files, receipt);
}

absl::Status ArtifactStore::Publish(const std::string& key, const std::string& dir,
                                    const std::map<std::string, std::string>& files,
                                    const report::LoweringReceipt& receipt) const {
  const fs::path final_dir = dir;
  const fs::path tmp = fs::path(root_) / "tmp" / absl::StrCat(key, ".commit.", ::getpid());
  std::error_code ec;
  fs::remove_all(tmp, ec);
  fs::create_directories(tmp, ec);
  if (ec)
    return absl::UnavailableError(absl::StrCat("cannot create ", tmp.string(), ": ", ec.message()));
  for (const auto& [name, bytes] : files) {
    absl::Status s = WriteFileSynced(tmp / name, bytes);
    if (!s.ok()) return s;
  }
  absl::Status s = WriteFileSynced(tmp / "receipt.pb", receipt.SerializeAsString());
  if (!s.ok()) return s;
  s = WriteFileSynced(tmp / "receipt.json", ToJson(receipt));
  if (!s.ok()) return s;
  fs::create_directories(final_dir.parent_path(), ec);
  fs::remove_all(final_dir, ec);  // a corrupt entry is replaced whole
  fs::rename(tmp, final_dir, ec);
  if (ec)
    return absl::UnavailableError(
        absl::StrCat("cannot publish ", final_dir.string(), ": ", ec.message()));
  return absl::OkStatus();
}

std::string DefaultStoreRoot() {
  if (const char* s = std::getenv("CAKE_STORE"); s != nullptr && *s) return s;
  if (const char* x = std::getenv("XDG_CACHE_HOME"); x != nullptr && *x)
    return (fs::path(x) / "cake" / "artifacts").string();
  const char* home = std::getenv("HOME");
  return (fs::path(home ? home : "/tmp") / ".cache" / "cake" / "artifacts").string();
}

std::string ToJson(const google::protobuf::Message& m) {
  std::string out;
  google::protobuf::util::JsonPrintOptions opts;
  opts.add_whitespace = true;
  opts.preserve_proto_field_names = true;
  opts.always_print_primitive_fields = true;
  (void)google::protobuf::util::MessageToJsonString(m, &out, opts);
  return out;
}

}  // namespace cake::compiler
