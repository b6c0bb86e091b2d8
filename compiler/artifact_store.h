// Content-addressed artifact store. An artifact's identity (its key) is the SHA-256 of the
// canonical schedule hash, target, PTX version, lowering version, toolchain identity, flags and
// emitted source; its directory holds the source, PTX, cubin, ptxas log, SASS and receipt.
// Entries are written into a temporary directory and renamed into place, so a crash never leaves
// a half-written entry under its key. Safe for concurrent writers of the same key (last rename
// wins, contents are identical by construction).
#pragma once

#include <map>
#include <string>

#include "absl/status/statusor.h"
#include "cake/report.pb.h"

namespace cake::compiler {

class ArtifactStore {
 public:
  explicit ArtifactStore(std::string root) : root_(std::move(root)) {}

  const std::string& root() const { return root_; }
  std::string DirFor(const std::string& key) const;
  // A scratch directory for building the entry `key` (removed by Commit).
  std::string ScratchDir(const std::string& key) const;

  // The stored receipt for `key` if the entry exists and its cubin still hashes to the receipt's
  // cubin_sha256; NotFound otherwise (a corrupt entry is treated as absent).
  absl::StatusOr<report::LoweringReceipt> Lookup(const std::string& key) const;

  // Writes `files` (name -> bytes) plus receipt.pb / receipt.json atomically under `key`.
  absl::Status Commit(const std::string& key, const std::map<std::string, std::string>& files,
                      const report::LoweringReceipt& receipt) const;

  // A failed build's files (source, raw toolchain log) and receipt, kept for the operator under
  // failed/KEY, outside the cache: Lookup never returns them, and a later build of the same key
  // (the toolchain may be fixed) replaces them.
  std::string FailedDirFor(const std::string& key) const;
  absl::Status KeepFailedBuild(const std::string& key,
                               const std::map<std::string, std::string>& files,
                               const report::LoweringReceipt& receipt) const;

 private:
  absl::Status Publish(const std::string& key, const std::string& dir,
                       const std::map<std::string, std::string>& files,
                       const report::LoweringReceipt& receipt) const;
  std::string root_;
};

// $CAKE_STORE, else $XDG_CACHE_HOME/cake/artifacts, else $HOME/.cache/cake/artifacts.
std::string DefaultStoreRoot();

// Pretty JSON of a report message (stable field names, enums by name).
std::string ToJson(const google::protobuf::Message& m);

}  // namespace cake::compiler
