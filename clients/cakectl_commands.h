// cakectl verbs that are more than one call: `space` (the built-in proposer's list, written
// offline), `demo-agent` (that list proposed through the public API, as any agent would) and
// `report` (the contract's candidates, whole, rendered as HTML). Each returns cakectl's exit code.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "cake/service.grpc.pb.h"
#include "grpcpp/grpcpp.h"

namespace cake::clients {

// Exit codes (README: Exit codes). 2 is a usage error found before any call; each class of
// the daemon's answer has its own code.
inline constexpr int kOk = 0, kFail = 1, kUsage = 2, kRegression = 3, kAuth = 4, kUnavailable = 5,
                     kRefused = 6, kNotFound = 7, kBusy = 8;

using ContextFactory = std::function<std::unique_ptr<grpc::ClientContext>(int seconds)>;
using FailedCall = std::function<int(const grpc::Status&)>;

// Every page of the candidate list (summaries), newest first.
grpc::Status ListAllCandidates(v1::CakeService::Stub* stub, const ContextFactory& ctx,
                               const std::string& contract, const std::string& branch,
                               v1::ListCandidatesReply* all);

// NN.textproto (NNN past 100 points) and labels.txt in `out`: the built-in proposer's list, or
// with `search_space` every point the search enumerates; 0, or 2 for an unknown operation or an
// unwritable folder.
int WriteSpace(const std::string& operation, const std::string& out, bool search_space);

// Proposes up to `count` points of the contract workload's list after its baseline point.
int RunDemoAgent(v1::CakeService::Stub* stub, const ContextFactory& ctx, const FailedCall& fail,
                 const std::string& contract_id, int count);

// The report to `out` ("" = CONTRACT.html, "-" = stdout).
int WriteReport(v1::CakeService::Stub* stub, const ContextFactory& ctx, const FailedCall& fail,
                const std::string& contract_id, const std::string& out);

}  // namespace cake::clients
