#include "listen_address.h"

#include <arpa/inet.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "absl/algorithm/container.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace cake::server {
namespace {

namespace fs = std::filesystem;

constexpr absl::string_view kForms =
    "give unix:PATH, HOST:PORT or [IPV6]:PORT (PORT 1..65535, or 0 for one the kernel picks)";

absl::Status Bad(absl::string_view text, absl::string_view why) {
  return absl::InvalidArgumentError(
      absl::StrCat("listen address '", text, "': ", why, "; ", kForms));
}

bool IsLoopbackHost(absl::string_view host) {
  if (absl::AsciiStrToLower(host) == "localhost") return true;
  in_addr v4{};
  if (inet_pton(AF_INET, std::string(host).c_str(), &v4) == 1)
    return (ntohl(v4.s_addr) >> 24) == 127;
  in6_addr v6{};
  if (inet_pton(AF_INET6, std::string(host).c_str(), &v6) == 1) return IN6_IS_ADDR_LOOPBACK(&v6);
  return false;
}

}  // namespace

std::string ListenAddress::WithPort(int bound_port) const {
  if (kind == Kind::kUnix) return absl::StrCat("unix:", path);
  const bool v6 = absl::StrContains(host, ':');
  return absl::StrCat(v6 ? "[" : "", host, v6 ? "]" : "", ":", bound_port);
}

absl::StatusOr<ListenAddress> ParseListenAddress(absl::string_view text) {
  ListenAddress a;
  if (text.empty()) return Bad(text, "empty");
  if (absl::StartsWith(text, "unix-abstract:") || absl::StartsWith(text, "unix:@"))
    return Bad(text,
               "abstract unix sockets are refused: no file permission guards them, so every "
               "local user could connect");
  if (absl::string_view path = text; absl::ConsumePrefix(&path, "unix:")) {
    // gRPC's unix:///abs form is the same file as unix:/abs.
    if (absl::StartsWith(path, "//")) path.remove_prefix(2);
    if (path.empty()) return Bad(text, "the socket path is empty");
    for (char c : path)
      if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f)
        return Bad(text, "the socket path holds a control character");
    a.kind = ListenAddress::Kind::kUnix;
    a.path = std::string(path);
    return a;
  }
  for (absl::string_view scheme : {"unix-", "vsock:", "dns:", "ipv4:", "ipv6:", "xds:"})
    if (absl::StartsWith(text, scheme)) return Bad(text, "this scheme is not served");
  a.kind = ListenAddress::Kind::kTcp;
  absl::string_view port_text;
  if (absl::StartsWith(text, "[")) {
    const size_t close = text.find(']');
    if (close == absl::string_view::npos || close + 1 >= text.size() || text[close + 1] != ':')
      return Bad(text, "an IPv6 address is written [ADDRESS]:PORT");
    a.host = std::string(text.substr(1, close - 1));
    in6_addr v6{};
    if (inet_pton(AF_INET6, a.host.c_str(), &v6) != 1)
      return Bad(text, absl::StrCat("'", a.host, "' is not an IPv6 address"));
    port_text = text.substr(close + 2);
  } else {
    const size_t colon = text.rfind(':');
    if (colon == absl::string_view::npos) return Bad(text, "no port");
    a.host = std::string(text.substr(0, colon));
    if (absl::StrContains(a.host, ':'))
      return Bad(text, "an IPv6 address is written [ADDRESS]:PORT");
    port_text = text.substr(colon + 1);
    for (char c : a.host)
      if (!absl::ascii_isalnum(static_cast<unsigned char>(c)) && c != '.' && c != '-' && c != '_')
        return Bad(text, absl::StrCat("'", a.host, "' is not a host name or address"));
  }
  int port = -1;
  if (port_text.empty() || !absl::c_all_of(port_text, absl::ascii_isdigit) ||
      port_text.size() > 5 || !absl::SimpleAtoi(port_text, &port) || port > 65535)
    return Bad(text, absl::StrCat("port '", port_text, "' is not in 0..65535"));
  a.port = port;
  a.loopback = IsLoopbackHost(a.host);
  return a;
}

absl::Status CheckSocketFolder(const ListenAddress& address) {
  if (address.kind != ListenAddress::Kind::kUnix) return absl::OkStatus();
  const fs::path folder = fs::absolute(address.path).parent_path();
  struct stat st {};
  if (::stat(folder.c_str(), &st) != 0 || !S_ISDIR(st.st_mode))
    return absl::FailedPreconditionError(
        absl::StrCat("listen address unix:", address.path, ": its folder ", folder.string(),
                     " does not exist; create it (mode 0750 or tighter) or listen elsewhere"));
  if ((st.st_mode & S_IWOTH) != 0 && (st.st_mode & S_ISVTX) == 0)
    return absl::FailedPreconditionError(absl::StrCat(
        "listen address unix:", address.path, ": its folder ", folder.string(),
        " is writable by every user (mode ", absl::StrFormat("%04o", st.st_mode & 07777),
        "), so anyone could replace the socket; listen in a folder of caked's own"));
  return absl::OkStatus();
}

std::string PortOwner(int port) {
  // The listening sockets' inodes, from the kernel's tables (state 0A is LISTEN).
  std::vector<std::string> inodes;
  for (const char* table : {"/proc/net/tcp", "/proc/net/tcp6"}) {
    std::ifstream in(table);
    std::string line;
    std::getline(in, line);  // header
    while (std::getline(in, line)) {
      std::vector<std::string> f = absl::StrSplit(line, ' ', absl::SkipEmpty());
      if (f.size() < 10 || f[3] != "0A") continue;
      const size_t colon = f[1].rfind(':');
      unsigned int local_port = 0;
      if (colon == std::string::npos ||
          !absl::SimpleHexAtoi(absl::string_view(f[1]).substr(colon + 1), &local_port))
        continue;
      if (static_cast<int>(local_port) == port)
        inodes.push_back(absl::StrCat("socket:[", f[9], "]"));
    }
  }
  if (inodes.empty()) return "";
  std::error_code ec;
  for (const fs::directory_entry& proc : fs::directory_iterator("/proc", ec)) {
    const std::string pid = proc.path().filename().string();
    if (!absl::c_all_of(pid, absl::ascii_isdigit)) continue;
    std::error_code fd_ec;
    for (const fs::directory_entry& fd : fs::directory_iterator(proc.path() / "fd", fd_ec)) {
      std::error_code link_ec;
      const std::string target = fs::read_symlink(fd.path(), link_ec).string();
      if (link_ec || !absl::c_linear_search(inodes, target)) continue;
      std::ifstream comm(proc.path() / "comm");
      std::string name;
      std::getline(comm, name);
      return absl::StrCat("pid ", pid, name.empty() ? "" : absl::StrCat(" (", name, ")"));
    }
  }
  return "";
}

}  // namespace cake::server
