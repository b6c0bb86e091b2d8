#include "clients/cakectl_export.h"

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iostream>
#include <system_error>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "clients/cakectl_output.h"
#include "google/protobuf/struct.pb.h"

namespace cake::clients {

namespace fs = std::filesystem;

absl::Status WriteExportFolder(const v1::ExportReply& reply, const std::string& out) {
  const fs::path dest = fs::absolute(fs::path(out)).lexically_normal();
  std::error_code ec;
  if (fs::exists(dest, ec)) {
    if (!fs::is_directory(dest, ec))
      return absl::FailedPreconditionError(absl::StrCat(out, " exists and is not a folder"));
    if (!fs::is_empty(dest, ec) && !fs::exists(dest / "manifest.json", ec))
      return absl::FailedPreconditionError(absl::StrCat(
          out, " is a non-empty folder that holds no export (no manifest.json); choose another"));
  }
  const fs::path staging =
      dest.parent_path() / absl::StrCat(".", dest.filename().string(), ".partial-", ::getpid());
  fs::remove_all(staging, ec);
  auto fail = [&](absl::Status s) {
    std::error_code ignored;
    fs::remove_all(staging, ignored);
    return s;
  };
  for (const v1::ExportFile& f : reply.files()) {
    const fs::path rel = fs::path(f.path()).lexically_normal();
    if (f.path().empty() || rel.is_absolute() || *rel.begin() == "..")
      return fail(absl::InvalidArgumentError(
          absl::StrCat("the daemon sent a file path outside the folder: '", f.path(), "'")));
    const fs::path path = staging / rel;
    fs::create_directories(path.parent_path(), ec);
    if (ec)
      return fail(absl::InternalError(
          absl::StrCat("cannot create ", path.parent_path().string(), ": ", ec.message())));
    std::ofstream o(path, std::ios::binary | std::ios::trunc);
    o.write(f.content().data(), static_cast<std::streamsize>(f.content().size()));
    o.close();
    if (!o) return fail(absl::InternalError(absl::StrCat("cannot write ", path.string())));
  }
  // Replace the destination only once everything is written.
  if (fs::exists(dest, ec)) {
    const fs::path old =
        dest.parent_path() / absl::StrCat(".", dest.filename().string(), ".old-", ::getpid());
    fs::rename(dest, old, ec);
    if (ec)
      return fail(absl::InternalError(absl::StrCat("cannot move ", out, " aside: ", ec.message())));
    fs::rename(staging, dest, ec);
    if (ec) {
      std::error_code ignored;
      fs::rename(old, dest, ignored);
      return fail(absl::InternalError(absl::StrCat("cannot write ", out, ": ", ec.message())));
    }
    fs::remove_all(old, ec);
    return absl::OkStatus();
  }
  fs::rename(staging, dest, ec);
  if (ec) return fail(absl::InternalError(absl::StrCat("cannot write ", out, ": ", ec.message())));
  return absl::OkStatus();
}

int RunExportCommand(v1::CakeService::Stub* stub,
                     const std::function<std::unique_ptr<grpc::ClientContext>()>& ctx,
                     const std::function<int(const grpc::Status&)>& fail,
                     const ExportOptions& options) {
  v1::ExportRequest req;
  req.set_contract_id(options.contract_id);
  for (const std::string& t : options.targets) req.add_targets(t);
  req.set_allow_unqualified(options.allow_unqualified);
  v1::ExportReply reply;
  auto c = ctx();
  if (grpc::Status s = stub->Export(c.get(), req, &reply); !s.ok()) return fail(s);
  if (absl::Status s = WriteExportFolder(reply, options.out); !s.ok()) {
    std::cerr << "cakectl: export: " << s.message() << "\n";
    return 1;
  }
  if (options.json) {
    // Through protobuf's JSON printer: a folder name with quotes or backslashes stays valid JSON.
    google::protobuf::Struct out;
    auto& f = *out.mutable_fields();
    f["incumbent"].set_string_value(reply.incumbent());
    f["folder"].set_string_value(options.out);
    f["files"].set_number_value(reply.files_size());
    f["manifest_sha256"].set_string_value(reply.manifest_sha256());
    std::cout << Json(out, false) << "\n";
  } else {
    std::cout << "exported incumbent " << reply.incumbent() << " of " << options.contract_id
              << " to " << options.out << " (" << reply.files_size() << " files, manifest sha256 "
              << reply.manifest_sha256().substr(0, 16) << "...)\n";
    for (const std::string& n : reply.notes()) std::cout << "  note: " << n << "\n";
    std::cout << "  build: cmake -S " << options.out << " -B " << options.out
              << "/build && cmake --build " << options.out << "/build\n";
  }
  return 0;
}

}  // namespace cake::clients
