#include "reflection_v1.h"

#include <set>

#include "google/protobuf/descriptor.h"
#include "google/protobuf/descriptor.pb.h"

namespace cake::server {
namespace {

namespace pb = google::protobuf;
namespace refl = grpc::reflection::v1;

// `file` and, depth first, every file it imports, each once (dependencies first).
void AddFileAndDependencies(const pb::FileDescriptor* file, std::set<std::string>* seen,
                            refl::FileDescriptorResponse* out) {
  if (file == nullptr || !seen->insert(file->name()).second) return;
  for (int i = 0; i < file->dependency_count(); ++i)
    AddFileAndDependencies(file->dependency(i), seen, out);
  pb::FileDescriptorProto proto;
  file->CopyTo(&proto);
  out->add_file_descriptor_proto(proto.SerializeAsString());
}

void SetError(refl::ServerReflectionResponse* r, grpc::StatusCode code, const std::string& what) {
  r->mutable_error_response()->set_error_code(static_cast<int>(code));
  r->mutable_error_response()->set_error_message(what);
}

}  // namespace

grpc::Status ReflectionV1::ServerReflectionInfo(
    grpc::ServerContext* context,
    grpc::ServerReaderWriter<refl::ServerReflectionResponse, refl::ServerReflectionRequest>*
        stream) {
  const pb::DescriptorPool* pool = pb::DescriptorPool::generated_pool();
  refl::ServerReflectionRequest req;
  while (stream->Read(&req)) {
    refl::ServerReflectionResponse r;
    r.set_valid_host(req.host());
    *r.mutable_original_request() = req;
    std::set<std::string> seen;
    switch (req.message_request_case()) {
      case refl::ServerReflectionRequest::kListServices:
        for (const std::string& s : services_)
          r.mutable_list_services_response()->add_service()->set_name(s);
        break;
      case refl::ServerReflectionRequest::kFileByFilename: {
        const pb::FileDescriptor* f = pool->FindFileByName(req.file_by_filename());
        if (f == nullptr)
          SetError(&r, grpc::StatusCode::NOT_FOUND, "no file " + req.file_by_filename());
        else
          AddFileAndDependencies(f, &seen, r.mutable_file_descriptor_response());
        break;
      }
      case refl::ServerReflectionRequest::kFileContainingSymbol: {
        const pb::FileDescriptor* f = pool->FindFileContainingSymbol(req.file_containing_symbol());
        if (f == nullptr)
          SetError(&r, grpc::StatusCode::NOT_FOUND, "no symbol " + req.file_containing_symbol());
        else
          AddFileAndDependencies(f, &seen, r.mutable_file_descriptor_response());
        break;
      }
      case refl::ServerReflectionRequest::kFileContainingExtension:
      case refl::ServerReflectionRequest::kAllExtensionNumbersOfType:
        // The API is proto3: it declares no extensions.
        SetError(&r, grpc::StatusCode::NOT_FOUND, "this server's messages have no extensions");
        break;
      default:
        SetError(&r, grpc::StatusCode::INVALID_ARGUMENT, "the request asks for nothing");
        break;
    }
    if (!stream->Write(r)) break;
  }
  return context->IsCancelled() ? grpc::Status::CANCELLED : grpc::Status::OK;
}

}  // namespace cake::server
