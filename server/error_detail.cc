#include "error_detail.h"

namespace cake::server {

absl::Status WithDetail(absl::Status s, const v1::ErrorDetail& detail) {
  if (!s.ok()) s.SetPayload(kErrorDetailTypeUrl, absl::Cord(detail.SerializeAsString()));
  return s;
}

absl::Status InvalidField(const std::string& field, const std::string& message, int64_t limit) {
  v1::ErrorDetail d;
  d.set_field(field);
  d.set_limit(limit);
  return WithDetail(absl::InvalidArgumentError(message), d);
}

std::optional<v1::ErrorDetail> DetailOf(const absl::Status& s) {
  auto payload = s.GetPayload(kErrorDetailTypeUrl);  // absl::optional in this Abseil
  v1::ErrorDetail d;
  if (!payload.has_value() || !d.ParseFromString(std::string(*payload))) return std::nullopt;
  return d;
}

grpc::Status ToGrpc(const absl::Status& s) {
  if (s.ok()) return grpc::Status::OK;
  const auto code = static_cast<grpc::StatusCode>(s.code());
  const std::string message(s.message());
  std::optional<v1::ErrorDetail> detail = DetailOf(s);
  if (!detail.has_value()) return grpc::Status(code, message);
  v1::RpcStatus status;
  status.set_code(static_cast<int32_t>(s.code()));
  status.set_message(message);
  status.add_details()->PackFrom(*detail);
  return grpc::Status(code, message, status.SerializeAsString());
}

}  // namespace cake::server
