// `cakectl export`: asks the daemon for a contract incumbent's export (the Export RPC) and writes
// its files into a folder, all or nothing: they go to a fresh sibling folder first, which then
// replaces the destination (an earlier export there is replaced; any other non-empty folder is
// refused, never mixed into).
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "cake/service.grpc.pb.h"
#include "grpcpp/grpcpp.h"

namespace cake::clients {

struct ExportOptions {
  std::string contract_id;
  std::string out;
  std::vector<std::string> targets;  // "sm_120f,sm_90" split; empty = the daemon's default
  bool allow_unqualified = false;
  bool json = false;
};

// Writes `reply`'s files under `out` as described above. FailedPrecondition when `out` is a
// non-empty folder holding no manifest.json, InvalidArgument for a path that leaves the folder.
absl::Status WriteExportFolder(const v1::ExportReply& reply, const std::string& out);

// Runs the command: 0 when the folder was written, the call's exit code when the daemon refused,
// 1 when the folder could not be written.
int RunExportCommand(v1::CakeService::Stub* stub,
                     const std::function<std::unique_ptr<grpc::ClientContext>()>& ctx,
                     const std::function<int(const grpc::Status&)>& fail,
                     const ExportOptions& options);

}  // namespace cake::clients
