// The worker request of each job kind: the one place a job's request is built, and the kind a
// request is (its oneof arm), so a stored job's kind and its request cannot disagree. Pure.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "cake/contract.pb.h"
#include "cake/worker.pb.h"
#include "ledger/jobs.h"

namespace cake::server {

// kUnknown for a request that names no job (or only a probe, which is never queued).
ledger::JobKind KindOf(const worker::Request& r);
bool RunsOnGpu(ledger::JobKind k);

// Analysis and compilation for the contract's compile target, then its execution target.
worker::Request CompileRequest(const std::string& candidate, const std::string& schedule_text,
                               const contract::Contract& c, const std::string& store_root);
// The same for a portfolio (members inline): every member and the fallback per target.
worker::Request CompilePortfolioRequest(const std::string& candidate, const portfolio::Portfolio& p,
                                        const contract::Contract& c, const std::string& store_root);
// kind: kValidate (a candidate's validation records) or kRegress (the incumbent re-checked).
worker::Request ValidateRequest(ledger::JobKind kind, const std::string& candidate,
                                const contract::Contract& c, const worker::KernelRef& kernel,
                                uint64_t seed);
worker::Request SanitizeRequest(const std::string& candidate, const contract::Contract& c,
                                const worker::KernelRef& kernel,
                                const std::vector<std::string>& tools, uint64_t seed);
worker::Request MeasureRequest(const std::string& candidate, const contract::Contract& c,
                               const worker::KernelRef& incumbent,
                               const worker::KernelRef& challenger, int run, uint64_t seed,
                               bool regress = false);

// The wall-clock limit of one attempt: the lane's limit (a portfolio's compile: per schedule), or
// for a sanitize job each tool's limit (the contract's sanitizer_timeout_s, default 300 s) plus a
// minute, if that is longer.
std::chrono::milliseconds JobTimeout(const worker::Request& r, std::chrono::milliseconds cpu,
                                     std::chrono::milliseconds gpu);

}  // namespace cake::server
