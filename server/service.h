// The gRPC face of the orchestrator: authenticates each call (bearer token -> role), checks the
// role, translates absl status codes to gRPC ones, and forwards. Holds no state of its own but
// the count of open watches.
#pragma once

#include <atomic>

#include "auth.h"
#include "cake/service.grpc.pb.h"
#include "orchestrator.h"

namespace cake::server {

class CakeServiceImpl final : public service::CakeService::Service {
 public:
  CakeServiceImpl(Orchestrator* orch, const TokenTable* tokens) : orch_(orch), tokens_(tokens) {}

  grpc::Status CreateContract(grpc::ServerContext*, const service::CreateContractRequest*,
                              service::CreateContractReply*) override;
  grpc::Status GetContract(grpc::ServerContext*, const service::GetContractRequest*,
                           service::GetContractReply*) override;
  grpc::Status Propose(grpc::ServerContext*, const service::ProposeRequest*,
                       service::ProposeReply*) override;
  grpc::Status GetCandidate(grpc::ServerContext*, const service::GetCandidateRequest*,
                            evidence::Candidate*) override;
  grpc::Status ListCandidates(grpc::ServerContext*, const service::ListCandidatesRequest*,
                              service::ListCandidatesReply*) override;
  grpc::Status Measure(grpc::ServerContext*, const service::MeasureRequest*,
                       service::MeasureReply*) override;
  grpc::Status Status(grpc::ServerContext*, const service::StatusRequest*,
                      service::StatusReply*) override;
  grpc::Status Regress(grpc::ServerContext*, const service::RegressRequest*,
                       service::RegressReply*) override;
  grpc::Status ListEvents(grpc::ServerContext*, const service::ListEventsRequest*,
                          service::ListEventsReply*) override;
  grpc::Status Watch(grpc::ServerContext*, const service::WatchRequest*,
                     grpc::ServerWriter<service::Event>*) override;

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

grpc::Status ToGrpc(const absl::Status& s);

}  // namespace cake::server
