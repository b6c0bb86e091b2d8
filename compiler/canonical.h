// Canonical form and content hash of a schedule module.
//
// Canonicalization removes what does not change meaning: free-text descriptions, the order of
// name-referenced declarations (roles, buffers, instructions, accumulators, pipelines, work
// schedules, softmax states, caches, selections) and spellings of defaults (cluster_size 1 == 0,
// multiple_of 1 == 0, unspecified issuer == ALL_LANES, ...). Kernel parameter order is the ABI and
// is kept; operation order is program order and is kept.
//
// The hash is SHA-256 over "cake-ir-canonical-v1\n" + the deterministic proto3 binary
// serialization of the canonical module (fields in field-number order, no unknown fields).
#pragma once

#include <string>
#include "absl/strings/string_view.h"

#include "cake/ir.pb.h"

namespace cake::compiler {

inline constexpr absl::string_view kCanonicalFormVersion = "cake-ir-canonical-v1";

ir::Module Canonicalize(const ir::Module& module);

// Deterministic bytes of an already canonical module.
std::string CanonicalBytes(const ir::Module& canonical);

// Deterministic proto3 binary serialization of any message (fields in field-number order): the
// byte form content hashes are taken over.
std::string DeterministicBytes(const google::protobuf::Message& m);

// Lower-case hex SHA-256 of the canonical form of `module`.
std::string ScheduleHash(const ir::Module& module);

}  // namespace cake::compiler
