#include "service.h"

#include "absl/strings/str_cat.h"
#include "request_limits.h"

namespace cake::server {
namespace {}  // namespace

grpc::Status ToGrpc(const absl::Status& s) {
  if (s.ok()) return grpc::Status::OK;
  return grpc::Status(static_cast<grpc::StatusCode>(s.code()), std::string(s.message()));
}

absl::StatusOr<Role> CakeServiceImpl::Authorize(grpc::ServerContext* ctx,
                                                std::initializer_list<Role> allowed) {
  const auto& md = ctx->client_metadata();
  auto it = md.find("authorization");
  if (it == md.end())
    return absl::UnauthenticatedError("missing bearer token (authorization: Bearer <token>)");
  auto role = tokens_->RoleFor(std::string(it->second.data(), it->second.size()));
  if (!role.ok()) return role.status();
  std::string roles;
  for (Role r : allowed) {
    if (r == *role) return *role;
    absl::StrAppend(&roles, roles.empty() ? "" : " or ", RoleName(r));
  }
  return absl::PermissionDeniedError(absl::StrCat("role '", RoleName(*role),
                                                  "' may not call this method (it needs ", roles,
                                                  ": that role's token file)"));
}

// Authorizes the call, then refuses a request over any field limit before anything reads it.
#define CAKE_AUTHORIZE(var, ...)                                                           \
  auto var##_or = Authorize(ctx, {__VA_ARGS__});                                           \
  if (!var##_or.ok()) return ToGrpc(var##_or.status());                                    \
  if (absl::Status limits = CheckRequestLimits(*req); !limits.ok()) return ToGrpc(limits); \
  const Role var = *var##_or

grpc::Status CakeServiceImpl::CreateContract(grpc::ServerContext* ctx,
                                             const service::CreateContractRequest* req,
                                             service::CreateContractReply* reply) {
  CAKE_AUTHORIZE(role, Role::kOperator);
  (void)role;
  auto r = orch_->CreateContract(req->contract());
  if (!r.ok()) return ToGrpc(r.status());
  *reply = *r;
  return grpc::Status::OK;
}

grpc::Status CakeServiceImpl::GetContract(grpc::ServerContext* ctx,
                                          const service::GetContractRequest* req,
                                          service::GetContractReply* reply) {
  CAKE_AUTHORIZE(role, Role::kOperator, Role::kAgent, Role::kCi);
  auto r = orch_->GetContract(req->contract_id(), role);
  if (!r.ok()) return ToGrpc(r.status());
  *reply = *r;
  return grpc::Status::OK;
}

grpc::Status CakeServiceImpl::Propose(grpc::ServerContext* ctx, const service::ProposeRequest* req,
                                      service::ProposeReply* reply) {
  CAKE_AUTHORIZE(role, Role::kOperator, Role::kAgent, Role::kCi);
  auto r = orch_->Propose(*req, role);
  if (!r.ok()) return ToGrpc(r.status());
  *reply = *r;
  return grpc::Status::OK;
}

grpc::Status CakeServiceImpl::GetCandidate(grpc::ServerContext* ctx,
                                           const service::GetCandidateRequest* req,
                                           evidence::Candidate* reply) {
  CAKE_AUTHORIZE(role, Role::kOperator, Role::kAgent, Role::kCi);
  auto r = orch_->GetCandidate(req->candidate_id(), role);
  if (!r.ok()) return ToGrpc(r.status());
  *reply = *r;
  return grpc::Status::OK;
}

grpc::Status CakeServiceImpl::ListCandidates(grpc::ServerContext* ctx,
                                             const service::ListCandidatesRequest* req,
                                             service::ListCandidatesReply* reply) {
  CAKE_AUTHORIZE(role, Role::kOperator, Role::kAgent, Role::kCi);
  auto r = orch_->ListCandidates(*req, role);
  if (!r.ok()) return ToGrpc(r.status());
  *reply = *std::move(r);
  return grpc::Status::OK;
}

grpc::Status CakeServiceImpl::Measure(grpc::ServerContext* ctx, const service::MeasureRequest* req,
                                      service::MeasureReply* reply) {
  CAKE_AUTHORIZE(role, Role::kOperator, Role::kAgent, Role::kCi);
  (void)role;
  auto r = orch_->Measure(req->candidate_id(), req->idempotency_key());
  if (!r.ok()) return ToGrpc(r.status());
  reply->set_job_id(*r);
  return grpc::Status::OK;
}

grpc::Status CakeServiceImpl::Status(grpc::ServerContext* ctx, const service::StatusRequest* req,
                                     service::StatusReply* reply) {
  CAKE_AUTHORIZE(role, Role::kOperator, Role::kAgent, Role::kCi);
  (void)role;
  auto r = orch_->Status();
  if (!r.ok()) return ToGrpc(r.status());
  *reply = *r;
  return grpc::Status::OK;
}

grpc::Status CakeServiceImpl::Regress(grpc::ServerContext* ctx, const service::RegressRequest* req,
                                      service::RegressReply* reply) {
  CAKE_AUTHORIZE(role, Role::kOperator, Role::kCi);
  (void)role;
  auto r = orch_->Regress(req->contract_id());
  if (!r.ok()) return ToGrpc(r.status());
  *reply = *r;
  return grpc::Status::OK;
}

namespace {

service::Event EventProto(const ledger::Event& e) {
  service::Event out;
  out.set_id(e.id);
  out.set_created_unix_ms(e.created_ms);
  out.set_kind(e.kind);
  out.set_candidate_id(e.candidate_id);
  out.set_job_id(e.job_id);
  out.set_message(e.message);
  return out;
}

}  // namespace

grpc::Status CakeServiceImpl::ListEvents(grpc::ServerContext* ctx,
                                         const service::ListEventsRequest* req,
                                         service::ListEventsReply* reply) {
  CAKE_AUTHORIZE(role, Role::kOperator, Role::kAgent, Role::kCi);
  (void)role;
  auto r = orch_->Events(req->after_id(), req->limit());
  if (!r.ok()) return ToGrpc(r.status());
  for (const ledger::Event& e : *r) *reply->add_events() = EventProto(e);
  return grpc::Status::OK;
}

grpc::Status CakeServiceImpl::Watch(grpc::ServerContext* ctx, const service::WatchRequest* req,
                                    grpc::ServerWriter<service::Event>* writer) {
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
      if (!writer->Write(EventProto(e))) return grpc::Status::CANCELLED;
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
