// gRPC server reflection v1 (grpc.reflection.v1.ServerReflection, proto/cake/reflection_v1.proto),
// served beside the v1alpha one that gRPC 1.51's plugin registers: clients built from
// reflection alone (grpcurl, grpcio-reflection) ask for v1 first. Answers from the process's
// generated descriptor pool: the services this server registered, a file by name or by a symbol
// it defines, with its dependencies. Thread-safe (the pool is immutable once built).
#pragma once

#include <string>
#include <vector>

#include "cake/reflection_v1.grpc.pb.h"

namespace cake::server {

class ReflectionV1 final : public grpc::reflection::v1::ServerReflection::Service {
 public:
  // `services`: the full names to list (e.g. "cake.v1.CakeService").
  explicit ReflectionV1(std::vector<std::string> services) : services_(std::move(services)) {}

  grpc::Status ServerReflectionInfo(
      grpc::ServerContext* context,
      grpc::ServerReaderWriter<grpc::reflection::v1::ServerReflectionResponse,
                               grpc::reflection::v1::ServerReflectionRequest>* stream) override;

 private:
  std::vector<std::string> services_;
};

}  // namespace cake::server
