// Length-delimited protobuf framing for the worker protocol: a 4-byte little-endian length, then
// that many bytes of one serialized message. Frames above kMaxFrameBytes are refused.
#pragma once

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "google/protobuf/message_lite.h"

namespace cake::gpuqueue {

inline constexpr uint32_t kMaxFrameBytes = 64u << 20;

std::string Frame(const google::protobuf::MessageLite& m);

// Parses exactly one frame from `bytes` into `m`. InvalidArgument on a short, oversize or
// unparsable frame.
absl::Status Unframe(const std::string& bytes, google::protobuf::MessageLite* m);

// Reads one frame from a file descriptor (blocking) / writes one frame to it.
absl::Status ReadFrame(int fd, google::protobuf::MessageLite* m);
absl::Status WriteFrame(int fd, const google::protobuf::MessageLite& m);

}  // namespace cake::gpuqueue
