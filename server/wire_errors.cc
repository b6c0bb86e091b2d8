#include "wire_errors.h"

#include <string>

#include "absl/strings/str_cat.h"

namespace cake::server {
namespace {

class WireErrorInterceptor final : public grpc::experimental::Interceptor {
 public:
  explicit WireErrorInterceptor(std::string method) : method_(std::move(method)) {}

  void Intercept(grpc::experimental::InterceptorBatchMethods* methods) override {
    if (methods->QueryInterceptionHookPoint(
            grpc::experimental::InterceptionHookPoints::PRE_SEND_STATUS)) {
      const grpc::Status s = methods->GetSendStatus();
      if (s.error_code() == grpc::StatusCode::INTERNAL && s.error_message().empty())
        methods->ModifySendStatus(grpc::Status(
            grpc::StatusCode::INVALID_ARGUMENT,
            absl::StrCat("the request is not a valid ", method_,
                         " message: its bytes do not parse as that protobuf message, or a "
                         "string field in it is not valid UTF-8")));
    }
    methods->Proceed();
  }

 private:
  std::string method_;
};

class Factory final : public grpc::experimental::ServerInterceptorFactoryInterface {
 public:
  grpc::experimental::Interceptor* CreateServerInterceptor(
      grpc::experimental::ServerRpcInfo* info) override {
    return new WireErrorInterceptor(info->method() != nullptr ? info->method() : "?");
  }
};

}  // namespace

std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface> WireErrorInterceptors() {
  return std::make_unique<Factory>();
}

}  // namespace cake::server
