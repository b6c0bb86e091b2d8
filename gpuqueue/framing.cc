#include "framing.h"

#include <unistd.h>

#include <cerrno>

#include "absl/strings/str_cat.h"

namespace cake::gpuqueue {
namespace {

void PutLength(std::string* out, uint32_t n) {
  for (int i = 0; i < 4; ++i) out->push_back(static_cast<char>((n >> (8 * i)) & 0xff));
}

uint32_t GetLength(const char* p) {
  uint32_t n = 0;
  for (int i = 0; i < 4; ++i)
    n |= static_cast<uint32_t>(static_cast<unsigned char>(p[i])) << (8 * i);
  return n;
}

}  // namespace

std::string Frame(const google::protobuf::MessageLite& m) {
  std::string body = m.SerializeAsString();
  std::string out;
  out.reserve(body.size() + 4);
  PutLength(&out, static_cast<uint32_t>(body.size()));
  out += body;
  return out;
}

absl::Status Unframe(const std::string& bytes, google::protobuf::MessageLite* m) {
  if (bytes.size() < 4)
    return absl::InvalidArgumentError(absl::StrCat("short frame: ", bytes.size(), " bytes"));
  const uint32_t n = GetLength(bytes.data());
  if (n > kMaxFrameBytes) return absl::InvalidArgumentError(absl::StrCat("frame too large: ", n));
  if (bytes.size() - 4 < n)
    return absl::InvalidArgumentError(
        absl::StrCat("truncated frame: ", bytes.size() - 4, " of ", n, " bytes"));
  // A stream carries exactly one frame: bytes after it are a second writer or garbage.
  if (bytes.size() - 4 > n)
    return absl::InvalidArgumentError(
        absl::StrCat(bytes.size() - 4 - n, " bytes follow the ", n, "-byte frame"));
  if (!m->ParseFromArray(bytes.data() + 4, static_cast<int>(n)))
    return absl::InvalidArgumentError("frame does not parse");
  return absl::OkStatus();
}

absl::Status ReadFrame(int fd, google::protobuf::MessageLite* m) {
  std::string buf;
  char chunk[65536];
  size_t need = 4;
  while (buf.size() < need) {
    const ssize_t r = ::read(fd, chunk, sizeof(chunk));
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) break;
    buf.append(chunk, static_cast<size_t>(r));
    if (buf.size() >= 4 && need == 4) need = 4 + GetLength(buf.data());
    if (need > kMaxFrameBytes + 4) return absl::InvalidArgumentError("frame too large");
  }
  return Unframe(buf, m);
}

absl::Status WriteFrame(int fd, const google::protobuf::MessageLite& m) {
  const std::string bytes = Frame(m);
  size_t off = 0;
  while (off < bytes.size()) {
    const ssize_t w = ::write(fd, bytes.data() + off, bytes.size() - off);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return absl::InternalError("short write of frame");
    off += static_cast<size_t>(w);
  }
  return absl::OkStatus();
}

}  // namespace cake::gpuqueue
