#include "cakectl_commands.h"

#include <cstdio>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <iostream>

#include "absl/strings/str_cat.h"
#include "report.h"
#include "workloads/workload.h"

namespace cake::clients {
namespace {

grpc::Status GetContract(v1::CakeService::Stub* stub, const ContextFactory& ctx,
                         const std::string& contract_id, v1::GetContractReply* reply) {
  v1::GetContractRequest req;
  req.set_contract_id(contract_id);
  auto c = ctx(30);
  return stub->GetContract(c.get(), req, reply);
}

}  // namespace

grpc::Status ListAllCandidates(v1::CakeService::Stub* stub, const ContextFactory& ctx,
                               const std::string& contract, const std::string& branch,
                               v1::ListCandidatesReply* all) {
  std::string token;
  do {
    v1::ListCandidatesRequest req;
    req.set_contract_id(contract);
    req.set_branch(branch);
    req.set_page_size(200);
    req.set_page_token(token);
    v1::ListCandidatesReply page;
    auto c = ctx(60);
    grpc::Status s = stub->ListCandidates(c.get(), req, &page);
    if (!s.ok()) return s;
    for (auto& cand : *page.mutable_candidates()) *all->add_candidates() = std::move(cand);
    token = page.next_page_token();
  } while (!token.empty());
  return grpc::Status::OK;
}

int WriteSpace(const std::string& operation, const std::string& out, bool search_space) {
  const workloads::Workload* w = workloads::FindWorkload(operation);
  if (w == nullptr) {
    std::cerr << "cakectl: " << workloads::UnknownOperation(operation).message() << "\n";
    return kUsage;
  }
  std::error_code ec;
  std::filesystem::create_directories(out, ec);
  std::ofstream labels(std::filesystem::path(out) / "labels.txt");
  int i = 0;
  const std::vector<workloads::Proposal> points =
      search_space ? w->SearchSpace() : w->ScheduleSpace();
  const int digits = points.size() > 100 ? 3 : 2;
  for (const workloads::Proposal& p : points) {
    char name[32];
    std::snprintf(name, sizeof(name), "%0*d.textproto", digits, i++);
    std::ofstream(std::filesystem::path(out) / name) << p.schedule_text;
    labels << name << "\t" << p.label << "\n";
  }
  if (!labels) {
    std::cerr << "cakectl: cannot write " << out << "\n";
    return kUsage;
  }
  std::cout << i << " schedules written to " << out << "\n";
  return kOk;
}

int RunDemoAgent(v1::CakeService::Stub* stub, const ContextFactory& ctx, const FailedCall& fail,
                 const std::string& contract_id, int count) {
  // Proposes through the public API, exactly as an external agent would: the points of the
  // schedule space of the contract's workload.
  v1::GetContractReply gc;
  if (grpc::Status s = GetContract(stub, ctx, contract_id, &gc); !s.ok()) return fail(s);
  const workloads::Workload* w = workloads::FindWorkload(gc.contract().operation());
  if (w == nullptr) {
    std::cerr << "cakectl: " << workloads::UnknownOperation(gc.contract().operation()) << "\n";
    return kFail;
  }
  const auto space = w->ScheduleSpace();
  int proposed = 0;
  for (size_t i = 1; i < space.size() && proposed < count; ++i) {  // [0] is the baseline
    const workloads::Proposal& p = space[i];
    v1::ProposeRequest req;
    req.set_contract_id(contract_id);
    req.set_schedule_text(p.schedule_text);
    *req.mutable_hypothesis() = p.hypothesis;
    std::string agent_key = absl::StrCat("demo-agent-", contract_id, "-", p.label);
    for (char& ch : agent_key)
      if (ch == ' ') ch = '_';  // keys are printable ASCII without spaces
    req.set_idempotency_key(agent_key);
    v1::ProposeReply r;
    auto c = ctx(30);
    grpc::Status s = stub->Propose(c.get(), req, &r);
    if (!s.ok()) return fail(s);
    std::cout << r.candidate_id() << "  " << p.label << (r.duplicate() ? " (duplicate)" : "")
              << "\n";
    ++proposed;
  }
  return kOk;
}

int WriteReport(v1::CakeService::Stub* stub, const ContextFactory& ctx, const FailedCall& fail,
                const std::string& contract_id, const std::string& out_path) {
  v1::GetContractReply contract_reply;
  grpc::Status s = GetContract(stub, ctx, contract_id, &contract_reply);
  if (!s.ok()) return fail(s);
  v1::ListCandidatesReply list;
  s = ListAllCandidates(stub, ctx, contract_id, "", &list);
  if (!s.ok()) return fail(s);
  ReportInput in;
  in.contract_id = contract_id;
  in.contract = contract_reply.contract();
  in.incumbent = contract_reply.incumbent();
  // Lists carry summaries; the report needs each candidate whole (raw samples included).
  for (const evidence::Candidate& summary : list.candidates()) {
    v1::GetCandidateRequest greq;
    greq.set_candidate_id(summary.id());
    evidence::Candidate full;
    auto gctx = ctx(60);
    s = stub->GetCandidate(gctx.get(), greq, &full);
    if (!s.ok()) return fail(s);
    in.candidates.push_back(std::move(full));
  }
  const std::time_t now = std::time(nullptr);
  char when[32];
  std::strftime(when, sizeof(when), "%Y-%m-%d %H:%M:%S UTC", std::gmtime(&now));
  in.generated = when;
  const std::string html = RenderHtmlReport(in);
  if (out_path == "-") {
    std::cout << html;
    return kOk;
  }
  const std::string path = out_path.empty() ? contract_id + ".html" : out_path;
  std::ofstream out(path);
  out << html;
  if (!out) {
    std::cerr << "cakectl: cannot write " << path << "\n";
    return kFail;
  }
  std::cerr << "report written to " << path << " (" << in.candidates.size() << " candidates)\n";
  std::cout << path << "\n";
  return kOk;
}

}  // namespace cake::clients
