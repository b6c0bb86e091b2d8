#include "files.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"

namespace cake::base {

std::string ReadFileBytes(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

absl::Status WriteFileAtomically(const std::filesystem::path& path, const std::string& bytes,
                                 mode_t mode) {
  const std::string tmp = absl::StrCat(path.string(), ".tmp.", getpid());
  auto fail = [&](const char* step) {
    const int err = errno;
    ::unlink(tmp.c_str());
    return absl::Status(
        err == ENOSPC || err == EDQUOT ? absl::StatusCode::kResourceExhausted
                                       : absl::StatusCode::kInternal,
        absl::StrCat("cannot write ", path.string(), ": ", step, ": ", std::strerror(err)));
  };
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
  if (fd < 0) return fail("create");
  size_t off = 0;
  while (off < bytes.size()) {
    const ssize_t w = ::write(fd, bytes.data() + off, bytes.size() - off);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) {
      if (w == 0) errno = EIO;
      const int err = errno;
      ::close(fd);
      errno = err;
      return fail("write");
    }
    off += static_cast<size_t>(w);
  }
  if (::fchmod(fd, mode) != 0 || ::fsync(fd) != 0) {
    const int err = errno;
    ::close(fd);
    errno = err;
    return fail("fsync");
  }
  if (::close(fd) != 0) return fail("close");
  if (::rename(tmp.c_str(), path.c_str()) != 0) return fail("rename");
  const std::string dir = path.parent_path().empty() ? "." : path.parent_path().string();
  const int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd >= 0) {
    ::fsync(dfd);
    ::close(dfd);
  }
  return absl::OkStatus();
}

}  // namespace cake::base
