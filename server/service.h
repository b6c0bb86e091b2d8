// The gRPC face of the orchestrator: authenticates each call (the client certificate under
// mutual TLS, then the bearer token -> role), checks the role, records refusals (AuthAudit),
// translates absl status codes to gRPC ones, and forwards. Holds no state of its own but the
// count of open watches.
#pragma once

#include <atomic>

#include "auth.h"
#include "auth_audit.h"
#include "cake/service.grpc.pb.h"
#include "error_detail.h"
#include "orchestrator.h"
#include "search_runner.h"
#include "tls_credentials.h"

namespace cake::server {

class CakeServiceImpl final : public v1::CakeService::Service {
 public:
  // `client_certs` (may be null: no mutual TLS) judges each call's client certificate.
  // `searches` (may be null: StartSearch and GetSearch are UNIMPLEMENTED) runs the searches.
  CakeServiceImpl(Orchestrator* orch, const TokenTable* tokens, AuthAudit* audit,
                  const ClientCertVerifier* client_certs = nullptr,
                  SearchRunner* searches = nullptr)
      : orch_(orch),
        tokens_(tokens),
        audit_(audit),
        client_certs_(client_certs),
        searches_(searches) {}

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
  grpc::Status Export(grpc::ServerContext*, const v1::ExportRequest*, v1::ExportReply*) override;
  grpc::Status ListEvents(grpc::ServerContext*, const v1::ListEventsRequest*,
                          v1::ListEventsReply*) override;
  grpc::Status Retry(grpc::ServerContext*, const v1::RetryRequest*, v1::RetryReply*) override;
  grpc::Status Watch(grpc::ServerContext*, const v1::WatchRequest*,
                     grpc::ServerWriter<v1::Event>*) override;
  grpc::Status StartSearch(grpc::ServerContext*, const v1::StartSearchRequest*,
                           v1::SearchReport*) override;
  grpc::Status GetSearch(grpc::ServerContext*, const v1::GetSearchRequest*,
                         v1::SearchReport*) override;

  // Open watches end (UNAVAILABLE) within a poll interval: call before Server::Shutdown.
  void BeginShutdown() { stopping_ = true; }
  static constexpr int kMaxWatches = 16;

 private:
  // The caller's role if it is one of `allowed`; PERMISSION_DENIED / UNAUTHENTICATED otherwise,
  // recorded in the audit with `method`.
  absl::StatusOr<Role> Authorize(grpc::ServerContext* ctx, const char* method,
                                 std::initializer_list<Role> allowed);
  absl::StatusOr<Role> Authenticate(grpc::ServerContext* ctx, std::initializer_list<Role> allowed,
                                    AuthFailure* reason);
  Orchestrator* orch_;
  const TokenTable* tokens_;
  AuthAudit* audit_;
  const ClientCertVerifier* client_certs_;
  SearchRunner* searches_;
  std::atomic<bool> stopping_{false};
  std::atomic<int> watches_{0};
};

}  // namespace cake::server
