#include "service.h"

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "error_detail.h"
#include "grpc/grpc_security_constants.h"
#include "inspect_view.h"
#include "request_limits.h"

namespace cake::server {
namespace {}  // namespace

absl::StatusOr<Role> CakeServiceImpl::Authenticate(grpc::ServerContext* ctx,
                                                   std::initializer_list<Role> allowed,
                                                   AuthFailure* reason) {
  if (client_certs_ != nullptr) {
    std::string pem;
    if (auto auth = ctx->auth_context(); auth != nullptr)
      for (const grpc::string_ref& v : auth->FindPropertyValues(GRPC_X509_PEM_CERT_PROPERTY_NAME))
        pem.assign(v.data(), v.size());
    *reason = AuthFailure::kClientCertificate;
    if (absl::Status s = client_certs_->Verify(pem); !s.ok()) return s;
  }
  const auto& md = ctx->client_metadata();
  auto it = md.find("authorization");
  *reason = AuthFailure::kMissingToken;
  if (it == md.end())
    return absl::UnauthenticatedError("missing bearer token (authorization: Bearer <token>)");
  const std::string authorization(it->second.data(), it->second.size());
  auto role = tokens_->RoleFor(authorization);
  if (!role.ok()) {
    if (absl::StartsWith(authorization, "Bearer ")) *reason = AuthFailure::kUnknownToken;
    return role.status();
  }
  std::string roles;
  for (Role r : allowed) {
    if (r == *role) return *role;
    absl::StrAppend(&roles, roles.empty() ? "" : " or ", RoleName(r));
  }
  *reason = AuthFailure::kRoleDenied;
  return absl::PermissionDeniedError(absl::StrCat("role '", RoleName(*role),
                                                  "' may not call this method (it needs ", roles,
                                                  ": that role's token file)"));
}

absl::StatusOr<Role> CakeServiceImpl::Authorize(grpc::ServerContext* ctx, const char* method,
                                                std::initializer_list<Role> allowed) {
  AuthFailure reason = AuthFailure::kMissingToken;
  absl::StatusOr<Role> role = Authenticate(ctx, allowed, &reason);
  if (!role.ok() && audit_ != nullptr)
    audit_->Refused(ctx->peer(), method, reason, std::string(role.status().message()));
  return role;
}

// Authorizes the call, then refuses a request over any field limit before anything reads it.
#define CAKE_AUTHORIZE(var, ...)                                                           \
  auto var##_or = Authorize(ctx, __func__, {__VA_ARGS__});                                 \
  if (!var##_or.ok()) return ToGrpc(var##_or.status());                                    \
  if (absl::Status limits = CheckRequestLimits(*req); !limits.ok()) return ToGrpc(limits); \
  const Role var = *var##_or

grpc::Status CakeServiceImpl::CreateContract(grpc::ServerContext* ctx,
                                             const v1::CreateContractRequest* req,
                                             v1::CreateContractReply* reply) {
  CAKE_AUTHORIZE(role, Role::kOperator);
  (void)role;
  auto r = orch_->CreateContract(req->contract());
  if (!r.ok()) return ToGrpc(r.status());
  *reply = *r;
  return grpc::Status::OK;
}

grpc::Status CakeServiceImpl::GetContract(grpc::ServerContext* ctx,
                                          const v1::GetContractRequest* req,
                                          v1::GetContractReply* reply) {
  CAKE_AUTHORIZE(role, Role::kOperator, Role::kAgent, Role::kCi);
  auto r = orch_->GetContract(req->contract_id(), role);
  if (!r.ok()) return ToGrpc(r.status());
  *reply = *r;
  return grpc::Status::OK;
}

grpc::Status CakeServiceImpl::Propose(grpc::ServerContext* ctx, const v1::ProposeRequest* req,
                                      v1::ProposeReply* reply) {
  CAKE_AUTHORIZE(role, Role::kOperator, Role::kAgent, Role::kCi);
  auto r = orch_->Propose(*req, role);
  if (!r.ok()) return ToGrpc(r.status());
  *reply = *r;
  return grpc::Status::OK;
}

grpc::Status CakeServiceImpl::GetCandidate(grpc::ServerContext* ctx,
                                           const v1::GetCandidateRequest* req,
                                           evidence::Candidate* reply) {
  CAKE_AUTHORIZE(role, Role::kOperator, Role::kAgent, Role::kCi);
  auto r = orch_->GetCandidate(req->candidate_id(), role);
  if (!r.ok()) return ToGrpc(r.status());
  *reply = *r;
  return grpc::Status::OK;
}

grpc::Status CakeServiceImpl::Inspect(grpc::ServerContext* ctx, const v1::InspectRequest* req,
                                      v1::InspectReply* reply) {
  CAKE_AUTHORIZE(role, Role::kOperator, Role::kAgent, Role::kCi);
  auto r = orch_->Inspect(*req, role);
  if (!r.ok()) return ToGrpc(r.status());
  *reply = *std::move(r);
  return grpc::Status::OK;
}

grpc::Status CakeServiceImpl::ListCandidates(grpc::ServerContext* ctx,
                                             const v1::ListCandidatesRequest* req,
                                             v1::ListCandidatesReply* reply) {
  CAKE_AUTHORIZE(role, Role::kOperator, Role::kAgent, Role::kCi);
  auto r = orch_->ListCandidates(*req, role);
  if (!r.ok()) return ToGrpc(r.status());
  *reply = *std::move(r);
  return grpc::Status::OK;
}

grpc::Status CakeServiceImpl::Measure(grpc::ServerContext* ctx, const v1::MeasureRequest* req,
                                      v1::MeasureReply* reply) {
  CAKE_AUTHORIZE(role, Role::kOperator, Role::kAgent, Role::kCi);
  (void)role;
  auto r = orch_->Measure(req->candidate_id(), req->idempotency_key());
  if (!r.ok()) return ToGrpc(r.status());
  reply->set_job_id(*r);
  return grpc::Status::OK;
}

grpc::Status CakeServiceImpl::Status(grpc::ServerContext* ctx, const v1::StatusRequest* req,
                                     v1::StatusReply* reply) {
  CAKE_AUTHORIZE(role, Role::kOperator, Role::kAgent, Role::kCi);
  (void)role;
  auto r = orch_->Status();
  if (!r.ok()) return ToGrpc(r.status());
  *reply = *r;
  return grpc::Status::OK;
}

grpc::Status CakeServiceImpl::Regress(grpc::ServerContext* ctx, const v1::RegressRequest* req,
                                      v1::RegressReply* reply) {
  CAKE_AUTHORIZE(role, Role::kOperator, Role::kCi);
  (void)role;
  auto r = orch_->Regress(req->contract_id());
  if (!r.ok()) return ToGrpc(r.status());
  *reply = *r;
  return grpc::Status::OK;
}

grpc::Status CakeServiceImpl::Export(grpc::ServerContext* ctx, const v1::ExportRequest* req,
                                     v1::ExportReply* reply) {
  CAKE_AUTHORIZE(role, Role::kOperator, Role::kCi);
  (void)role;
  auto r = orch_->Export(*req);
  if (!r.ok()) return ToGrpc(r.status());
  *reply = *std::move(r);
  return grpc::Status::OK;
}

grpc::Status CakeServiceImpl::ListEvents(grpc::ServerContext* ctx, const v1::ListEventsRequest* req,
                                         v1::ListEventsReply* reply) {
  CAKE_AUTHORIZE(role, Role::kOperator, Role::kAgent, Role::kCi);
  (void)role;
  auto r = orch_->Events(req->after_id(), req->limit());
  if (!r.ok()) return ToGrpc(r.status());
  for (const ledger::Event& e : *r) *reply->add_events() = EventView(e);
  return grpc::Status::OK;
}

grpc::Status CakeServiceImpl::Retry(grpc::ServerContext* ctx, const v1::RetryRequest* req,
                                    v1::RetryReply* reply) {
  CAKE_AUTHORIZE(role, Role::kOperator, Role::kAgent, Role::kCi);
  (void)role;
  auto r = orch_->Retry(req->candidate_id());
  if (!r.ok()) return ToGrpc(r.status());
  *reply = *r;
  return grpc::Status::OK;
}

grpc::Status CakeServiceImpl::StartSearch(grpc::ServerContext* ctx,
                                          const v1::StartSearchRequest* req,
                                          v1::SearchReport* reply) {
  CAKE_AUTHORIZE(role, Role::kOperator, Role::kAgent);
  (void)role;
  if (searches_ == nullptr) return grpc::Status(grpc::StatusCode::UNIMPLEMENTED, "no search here");
  auto r = searches_->Start(*req);
  if (!r.ok()) return ToGrpc(r.status());
  *reply = *std::move(r);
  return grpc::Status::OK;
}

grpc::Status CakeServiceImpl::GetSearch(grpc::ServerContext* ctx, const v1::GetSearchRequest* req,
                                        v1::SearchReport* reply) {
  CAKE_AUTHORIZE(role, Role::kOperator, Role::kAgent, Role::kCi);
  (void)role;
  if (searches_ == nullptr) return grpc::Status(grpc::StatusCode::UNIMPLEMENTED, "no search here");
  auto r = searches_->Get(req->search_id());
  if (!r.ok()) return ToGrpc(r.status());
  *reply = *std::move(r);
  return grpc::Status::OK;
}

grpc::Status CakeServiceImpl::Watch(grpc::ServerContext* ctx, const v1::WatchRequest* req,
                                    grpc::ServerWriter<v1::Event>* writer) {
  CAKE_AUTHORIZE(role, Role::kOperator, Role::kAgent, Role::kCi);
  (void)role;
  // Each watch holds a server thread: their number is bounded.
  if (watches_.fetch_add(1) >= kMaxWatches) {
    watches_.fetch_sub(1);
    return grpc::Status(grpc::StatusCode::RESOURCE_EXHAUSTED,
                        absl::StrCat("at most ", kMaxWatches, " watches at a time"));
  }
  struct Release {
    std::atomic<int>* n;
    ~Release() { n->fetch_sub(1); }
  } release{&watches_};
  int64_t after = req->after_id();
  while (!ctx->IsCancelled() && !stopping_) {
    auto events = orch_->Events(after, 200);
    if (!events.ok()) return ToGrpc(events.status());
    for (const ledger::Event& e : *events) {
      if (!writer->Write(EventView(e))) return grpc::Status::CANCELLED;
      after = e.id;
    }
    if (!events->empty()) continue;
    if (req->until_idle()) {
      auto idle = orch_->Idle();
      if (!idle.ok()) return ToGrpc(idle.status());
      // Idle, and nothing recorded since the read above: every event so far was sent.
      if (*idle) {
        auto more = orch_->Events(after, 1);
        if (more.ok() && more->empty()) return grpc::Status::OK;
        continue;
      }
    }
    orch_->WaitForEvent(after, std::chrono::milliseconds(250));
  }
  return ctx->IsCancelled() ? grpc::Status::CANCELLED
                            : grpc::Status(grpc::StatusCode::UNAVAILABLE, "caked is stopping");
}

}  // namespace cake::server
