// The gRPC face of the orchestrator: authenticates each call (bearer token -> role), checks the
// role, translates absl status codes to gRPC ones, and forwards. Holds no state of its own but
// the count of open watches.
#pragma once

#include <atomic>

#include "auth.h"
#include "cake/service.grpc.pb.h"
#include "error_detail.h"
#include "orchestrator.h"

namespace cake::server {

class CakeServiceImpl final : public v1::CakeService::Service {
 public:
  CakeServiceImpl(Orchestrator* orch, const TokenTable* tokens) : orch_(orch), tokens_(tokens) {}

  grpc::Status CreateContract(grpc::ServerContext*, const v1::CreateContractRequest*,
                              v1::CreateContractReply*) override;
  grpc::Status GetContract(grpc::ServerContext*, const v1::GetContractRequest*,
                           v1::GetContractReply*) override;
  grpc::Status Propose(grpc::ServerContext*, const v1::ProposeRequest*, v1::ProposeReply*) override;
  grpc::Status GetCandidate(grpc::ServerContext*, const v1::GetCandidateRequest*,
                            evidence::Candidate*) override;
  grpc::Status Inspect(grpc::ServerContext* ctx, const v1::InspectRequest* req,
                       v1::InspectReply* reply) override;
  grpc::Status ListCandidates(grpc::ServerContext*, const v1::ListCandidatesRequest*,
                              v1::ListCandidatesReply*) override;
  grpc::Status Measure(grpc::ServerContext*, const v1::MeasureRequest*, v1::MeasureReply*) override;
  grpc::Status Status(grpc::ServerContext*, const v1::StatusRequest*, v1::StatusReply*) override;
  grpc::Status Regress(grpc::ServerContext*, const v1::RegressRequest*, v1::RegressReply*) override;
  grpc::Status ListEvents(grpc::ServerContext*, const v1::ListEventsRequest*,
                          v1::ListEventsReply*) override;
  grpc::Status Retry(grpc::ServerContext*, const v1::RetryRequest*, v1::RetryReply*) override;
  grpc::Status Watch(grpc::ServerContext*, const v1::WatchRequest*,
                     grpc::ServerWriter<v1::Event>*) override;

  // Open watches end (UNAVAILABLE) within a poll interval: call before Server::Shutdown.
  void BeginShutdown() { stopping_ = true; }
  static constexpr int kMaxWatches = 16;

 private:
  // The caller's role if it is one of `allowed`; PERMISSION_DENIED / UNAUTHENTICATED otherwise.
  absl::StatusOr<Role> Authorize(grpc::ServerContext* ctx, std::initializer_list<Role> allowed);
  Orchestrator* orch_;
  const TokenTable* tokens_;
  std::atomic<bool> stopping_{false};
  std::atomic<int> watches_{0};
};

}  // namespace cake::server
