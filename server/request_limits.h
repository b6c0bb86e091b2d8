// Limits on every field of every request a client can send, checked before anything else looks
// at the request. Agents are adversaries: a multi-megabyte hypothesis or idempotency key must be
// refused with a message naming the field and its limit, not stored and served to everyone.
//
// Walks the message by reflection, so a field added later is bounded too: strings and bytes
// default to kDefaultStringBytes, repeated fields to kDefaultRepeated entries; the exceptions
// are listed in request_limits.cc (and in the proto comments). Pure; thread-safe.
#pragma once

#include <cstddef>

#include "absl/status/status.h"
#include "google/protobuf/message.h"

namespace cake::server {

inline constexpr size_t kDefaultStringBytes = 1024;
inline constexpr int kDefaultRepeated = 64;
inline constexpr size_t kMaxIdBytes = 64;               // contract, candidate ids, parent
inline constexpr size_t kMaxIdempotencyKeyBytes = 128;  // printable ASCII
inline constexpr int kMaxPageSize = 200;
inline constexpr int kDefaultPageSize = 50;
inline constexpr int kMaxEventsPerPage = 1000;

// InvalidArgument naming the first field over its limit ("ProposeRequest.hypothesis.
// expected_effect is 3000000 bytes (limit 2048)"), or OK.
absl::Status CheckRequestLimits(const google::protobuf::Message& request);

// InvalidArgument unless `key` is empty or at most kMaxIdempotencyKeyBytes of printable ASCII.
absl::Status CheckIdempotencyKey(const std::string& key);

}  // namespace cake::server
