// Eligibility, derived (never stored as a flag) from the contract's evidence requirements and the
// latest record of each kind: a required record must be PASSED; a required record that is absent,
// NOT_RUN or INCONCLUSIVE is missing, which is not success; an optional record that is absent is
// not failure; any record that FAILED blocks, required or not (it shows a defect). Pure.
#pragma once

#include <string>
#include <vector>

#include "cake/contract.pb.h"
#include "cake/evidence.pb.h"
#include "workloads/workload.h"

namespace cake::server {

// "numerical_contract", "mutation_and_lifecycle", "sanitizer:racecheck", ...
std::string RecordName(evidence::EvidenceKind kind, const std::string& tool = "");

// The contract's requirements (its validation policy's, else the default policy's).
std::vector<contract::EvidenceRequirement> Requirements(const contract::Contract& c);

// Sanitizer tools the contract lists (required or optional), in its order.
std::vector<std::string> SanitizerTools(const contract::Contract& c);

evidence::Eligibility DeriveEligibility(const contract::Contract& c,
                                        const std::vector<evidence::EvidenceRecord>& records);

// INVALID_ARGUMENT text for a malformed policy ("" when it is fine): unknown kinds or tools, a
// tool outside SANITIZER, duplicates, a case's shape out of bounds; `field` (when given) is set
// to the policy's field at fault ("validation.cases[2].problem").
std::string CheckValidationPolicy(const contract::ValidationPolicy& p, const workloads::Workload& w,
                                  std::string* field = nullptr);

}  // namespace cake::server
