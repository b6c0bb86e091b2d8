// cake-hostile-worker: a worker that misbehaves, for the containment tests and the fault
// campaign. caked runs it in place of cake-worker (--worker), with the same sandbox. What it does
// is read from $CAKE_WORKER_FAULT_DIR/behavior (the fault directory is the one place a test can
// reach it through the scrubbed environment):
//   ok         exec the real worker ($CAKE_WORKER_FAULT_DIR/real_worker) on the same request
//   spin       burn CPU forever
//   forkbomb   fork without end (every child forks too)
//   setsid     leave a grandchild in its own session (it sleeps), then answer at once
//   flood      write to stdout without end
//   alloc      allocate and touch memory until refused, then keep what it got and spin
//   readtoken  try to read the tokens and the ledger, signal the daemon, connect over TCP; then
//              answer with a failed reply saying what happened to each (never the contents:
//              if a read succeeds it answers "READ <n> bytes" so the test can fail)
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "cake/worker.pb.h"
#include "gpuqueue/framing.h"

namespace {

namespace fs = std::filesystem;

std::string ReadSmall(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  std::string t = s.str();
  while (!t.empty() && (t.back() == '\n' || t.back() == ' ')) t.pop_back();
  return t;
}

[[noreturn]] void Spin() {
  volatile unsigned long x = 0;
  for (;;) x = x + 1;
}

std::string TryRead(const fs::path& p) {
  const int fd = ::open(p.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return p.filename().string() + ": " + std::strerror(errno);
  char buf[4096];
  const ssize_t n = ::read(fd, buf, sizeof(buf));
  ::close(fd);
  return p.filename().string() + ": READ " + std::to_string(n) + " bytes";
}

// The daemon's state directory, derived the way an attacker would: from the artifact store.
fs::path StateDir(const cake::worker::Request& r) {
  if (r.has_compile()) return fs::path(r.compile().store_root()).parent_path();
  return {};
}

}  // namespace

int main() {
  const char* faults = std::getenv("CAKE_WORKER_FAULT_DIR");
  const std::string behavior = faults ? ReadSmall(fs::path(faults) / "behavior") : "";
  if (behavior == "ok" || behavior.empty()) {
    const std::string real = faults ? ReadSmall(fs::path(faults) / "real_worker") : "";
    if (real.empty()) return 2;
    execl(real.c_str(), real.c_str(), static_cast<char*>(nullptr));
    return 127;
  }
  cake::worker::Request request;
  if (!cake::gpuqueue::ReadFrame(0, &request).ok()) return 2;
  if (behavior == "spin") Spin();
  if (behavior == "forkbomb") {
    for (;;)
      if (fork() < 0) usleep(1000);
  }
  if (behavior == "setsid") {
    if (fork() == 0) {
      setsid();
      if (fork() == 0) {
        // Close the reply pipe so the daemon is not kept waiting by it: only containment finds us.
        for (int fd = 0; fd < 3; ++fd) ::close(fd);
        for (;;) pause();
      }
      _exit(0);
    }
    usleep(100000);
    cake::worker::Reply reply;
    reply.set_ok(false);
    reply.set_error("hostile: left a grandchild in its own session");
    (void)cake::gpuqueue::WriteFrame(1, reply);
    return 0;
  }
  if (behavior == "flood") {
    std::vector<char> block(1 << 20, 'F');
    for (;;)
      if (::write(1, block.data(), block.size()) < 0 && errno != EINTR) Spin();
  }
  if (behavior == "alloc") {
    std::vector<char*> held;
    for (;;) {
      char* p = static_cast<char*>(std::malloc(64 << 20));
      if (p == nullptr) break;
      std::memset(p, 1, 64 << 20);
      held.push_back(p);
    }
    Spin();
  }
  if (behavior == "readtoken") {
    const fs::path state = StateDir(request);
    std::string what = "hostile:";
    for (const char* f : {"tokens/operator", "tokens/agent", "keys/contract-id", "ledger.db"})
      what += " " + TryRead(state / f) + ";";
    // Signal 0 only checks whether signalling the daemon is possible.
    what += std::string(" signal daemon: ") +
            (::kill(getppid(), 0) == 0 ? "ALLOWED" : std::strerror(errno)) + ";";
    const int s = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(9);
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    const int rc = s < 0 ? -1 : ::connect(s, reinterpret_cast<sockaddr*>(&addr), sizeof(addr));
    what += std::string(" tcp connect: ") + (rc == 0 ? "CONNECTED" : std::strerror(errno));
    cake::worker::Reply reply;
    reply.set_ok(false);
    reply.set_error(what);
    (void)cake::gpuqueue::WriteFrame(1, reply);
    return 0;
  }
  return 3;
}
