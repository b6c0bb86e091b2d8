// Machine-readable refusals. An ErrorDetail (proto/cake/service.proto) rides on an absl::Status
// as a payload from where the refusal is decided, and leaves the server as the standard
// grpc-status-details-bin trailer (an RpcStatus, i.e. google.rpc.Status, holding it as an Any).
// Pure; thread-safe.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "absl/status/status.h"
#include "cake/service.pb.h"
#include "grpcpp/support/status.h"

namespace cake::server {

inline constexpr char kErrorDetailTypeUrl[] = "type.googleapis.com/cake.v1.ErrorDetail";

// `s` with `detail` attached (an OK status stays OK, with nothing attached).
absl::Status WithDetail(absl::Status s, const v1::ErrorDetail& detail);

// INVALID_ARGUMENT about request field `field` (a path such as "hypothesis.parent"), with the
// limit it passed when there is one.
absl::Status InvalidField(const std::string& field, const std::string& message, int64_t limit = 0);

// The detail attached to `s`, if any.
std::optional<v1::ErrorDetail> DetailOf(const absl::Status& s);

// The gRPC status: the same code and message, and the detail (if any) in the binary details.
grpc::Status ToGrpc(const absl::Status& s);

}  // namespace cake::server
