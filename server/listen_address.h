// caked's listen address, checked before anything binds: `unix:PATH` (a named socket whose
// folder exists and is not writable by everyone) or `HOST:PORT` / `[V6]:PORT` (1..65535, or 0
// for a port the kernel picks). Abstract unix sockets (`unix-abstract:`, `unix:@`) are refused:
// no file mode guards them, so any local user could connect. Pure but CheckSocketFolder and
// PortOwner, which read the filesystem and /proc.
#pragma once

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace cake::server {

struct ListenAddress {
  enum class Kind { kUnix, kTcp };
  Kind kind = Kind::kUnix;
  std::string path;       // kUnix: the socket file
  std::string host;       // kTcp: as written, without brackets ("" = every interface)
  int port = 0;           // kTcp: 0 = the kernel picks one
  bool loopback = false;  // kTcp: reachable from this host only (localhost, 127/8, ::1)
  // The address with `port` as bound (kTcp), in gRPC's syntax.
  std::string WithPort(int bound_port) const;
};

// InvalidArgument naming what is wrong with `text` and the accepted forms.
absl::StatusOr<ListenAddress> ParseListenAddress(absl::string_view text);

// FailedPrecondition when a unix socket's folder is missing or writable by every user without
// the sticky bit (anyone could replace the socket); Ok for TCP.
absl::Status CheckSocketFolder(const ListenAddress& address);

// Who listens on TCP `port` of this host, as "pid 1234 (caked)", or "" when that cannot be seen
// (another user's process, or nothing).
std::string PortOwner(int port);

}  // namespace cake::server
