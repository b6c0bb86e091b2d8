// Contracts and their incumbents (contracts, incumbents, promotions tables). A contract is
// immutable; each read is checked against the digest stored with it (DataLoss on a mismatch).
// Thread-safety: safe from any thread.
#pragma once

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "cake/contract.pb.h"

namespace cake::ledger {

class Connection;
class EventLog;

class ContractStore {
 public:
  ContractStore(Connection* conn, EventLog* events) : conn_(conn), events_(events) {}
  // True when a contract with this id existed already (nothing is written then).
  absl::StatusOr<bool> Insert(const std::string& id, const contract::Contract& c);
  absl::StatusOr<contract::Contract> Get(const std::string& id);
  // Every contract that passes its check; the ids of those that do not go to `corrupt`.
  absl::StatusOr<std::vector<std::pair<std::string, contract::Contract>>> List(
      std::vector<std::string>* corrupt = nullptr);
  // Records the promotion (with the previous incumbent and the reason) and its event.
  absl::Status SetIncumbent(const std::string& contract_id, const std::string& candidate_id,
                            const std::string& reason);
  absl::StatusOr<std::string> Incumbent(const std::string& contract_id);  // "" if none
  // Promotions recorded per contract (the first incumbent counts as one).
  absl::StatusOr<std::map<std::string, int64_t>> PromotionCounts();

 private:
  Connection* conn_;
  EventLog* events_;
};

}  // namespace cake::ledger
