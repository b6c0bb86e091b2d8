#include "state_lock.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "base/files.h"

namespace cake::server {
namespace {

constexpr int kLockRetries = 60;  // 3 s

}  // namespace

absl::StatusOr<StateLock> StateLock::Acquire(const std::string& state_dir,
                                             const std::string& listen) {
  const std::string path = (std::filesystem::path(state_dir) / "caked.lock").string();
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  if (fd < 0)
    return absl::FailedPreconditionError(
        absl::StrCat("cannot open ", path, ": ", std::strerror(errno)));
  // A caked killed while it forks a worker leaves the child holding the lock until its exec
  // (the descriptor is close-on-exec): a restart right after a crash waits that out, briefly.
  int locked = ::flock(fd, LOCK_EX | LOCK_NB);
  for (int i = 0; locked != 0 && errno == EWOULDBLOCK && i < kLockRetries; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    locked = ::flock(fd, LOCK_EX | LOCK_NB);
  }
  if (locked != 0) {
    const int err = errno;
    ::close(fd);
    if (err != EWOULDBLOCK)
      return absl::FailedPreconditionError(
          absl::StrCat("cannot lock ", path, ": ", std::strerror(err)));
    const std::string owner(absl::StripAsciiWhitespace(base::ReadFileBytes(path)));
    return absl::FailedPreconditionError(absl::StrCat(
        "another caked owns ", state_dir, " (", owner.empty() ? "owner unknown" : owner,
        "): stop it first, or give this one its own --state-dir"));
  }
  const std::string owner = absl::StrCat("pid ", ::getpid(), ", listening on ", listen, "\n");
  if (::ftruncate(fd, 0) != 0 || ::pwrite(fd, owner.data(), owner.size(), 0) < 0) {
    const int err = errno;
    ::close(fd);
    return absl::FailedPreconditionError(
        absl::StrCat("cannot write ", path, ": ", std::strerror(err)));
  }
  return StateLock(fd);
}

StateLock::~StateLock() {
  if (fd_ >= 0) ::close(fd_);
}

}  // namespace cake::server
