// What a contract must satisfy to be stored (its workload's checks included), and its id. Pure.
#pragma once

#include <string>

#include "absl/status/status.h"
#include "cake/contract.pb.h"

namespace cake::server {

// INVALID_ARGUMENT naming the first problem: no name, an operation no workload registers (the
// message names the registered ones), no required non-held-out row, a bad row shape, an unknown
// target, a bad protocol or validation policy, a missing or unreadable baseline schedule
// (field contract.baseline_schedule).
absl::Status CheckContract(const contract::Contract& c);

// "ct-" + 16 hex digits of an HMAC of the contract's deterministic bytes under `key`: an agent
// that guesses a held-out row cannot confirm its guess against the public id.
std::string KeyedContractId(const std::string& key, const contract::Contract& c);

// Canonical hash of the contract's baseline schedule ("" if it does not parse).
std::string BaselineHash(const contract::Contract& c);

}  // namespace cake::server
