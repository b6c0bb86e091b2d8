// How cakectl prints a reply: JSON (field names as in the protos) for scripts, or a table for a
// terminal. Each printer writes one reply to stdout and nothing else.
#pragma once

#include <string>

#include "cake/evidence.pb.h"
#include "cake/service.pb.h"
#include "google/protobuf/message.h"

namespace cake::clients {

// The message as JSON; one line when `pretty` is false (NDJSON for `watch`).
std::string Json(const google::protobuf::Message& m, bool pretty = true);

void PrintStatus(const v1::StatusReply& s);
void PrintInspect(const v1::InspectReply& r);
void PrintCandidates(const v1::ListCandidatesReply& r);
void PrintCandidate(const evidence::Candidate& c);

}  // namespace cake::clients
