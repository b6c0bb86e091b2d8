// Requests that are not messages. gRPC's generated handlers answer a request whose bytes do not
// parse (not protobuf, or a proto3 string field that is not UTF-8) with INTERNAL and an empty
// message, before any handler of ours runs. This server interceptor turns exactly that answer
// into INVALID_ARGUMENT naming the method and what was wrong; caked's own handlers never answer
// INTERNAL without a message (an absl::Status carries one). Thread-safe.
#pragma once

#include <memory>

#include "grpcpp/support/server_interceptor.h"

namespace cake::server {

std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface> WireErrorInterceptors();

}  // namespace cake::server
