#include "worker_reach.h"

#include <fcntl.h>
#include <grp.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "base/files.h"

namespace cake::gpuqueue {
namespace {

namespace fs = std::filesystem;

// What the child reports per need: errno of access(2) (0 = reachable) and the index of the
// first ancestor it could not search (-1 = none).
struct Answer {
  int err;
  int blocked_at;
};

// The folders on the way to `path`, outermost first ("/a", "/a/b" for "/a/b/c").
std::vector<std::string> Ancestors(const std::string& path) {
  std::vector<std::string> out;
  fs::path p = fs::path(path).lexically_normal();
  for (fs::path a = p.parent_path(); !a.empty() && a != a.root_path(); a = a.parent_path())
    out.insert(out.begin(), a.string());
  return out;
}

}  // namespace

absl::StatusOr<std::vector<Unreachable>> FindUnreachable(uid_t uid, gid_t gid,
                                                         const std::vector<PathNeed>& needs) {
  // Everything the child touches is prepared before fork: it only makes async-signal-safe calls.
  std::vector<std::vector<std::string>> ancestors;
  for (const PathNeed& n : needs) ancestors.push_back(Ancestors(n.path));
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0)
    return absl::InternalError(absl::StrCat("pipe: ", std::strerror(errno)));
  const pid_t pid = fork();
  if (pid < 0) return absl::InternalError(absl::StrCat("fork: ", std::strerror(errno)));
  if (pid == 0) {
    ::close(fds[0]);
    if (setgroups(0, nullptr) != 0 || setresgid(gid, gid, gid) != 0 ||
        setresuid(uid, uid, uid) != 0)
      _exit(2);
    for (size_t i = 0; i < needs.size(); ++i) {
      Answer a{0, -1};
      if (::access(needs[i].path.c_str(), needs[i].access) != 0) {
        a.err = errno;
        for (size_t k = 0; k < ancestors[i].size(); ++k)
          if (::access(ancestors[i][k].c_str(), X_OK) != 0) {
            a.blocked_at = static_cast<int>(k);
            break;
          }
      }
      if (write(fds[1], &a, sizeof(a)) != static_cast<ssize_t>(sizeof(a))) _exit(3);
    }
    _exit(0);
  }
  ::close(fds[1]);
  std::vector<Answer> answers;
  Answer a;
  while (answers.size() < needs.size()) {
    const ssize_t r = read(fds[0], &a, sizeof(a));
    if (r < 0 && errno == EINTR) continue;
    if (r != static_cast<ssize_t>(sizeof(a))) break;
    answers.push_back(a);
  }
  ::close(fds[0]);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0 || answers.size() != needs.size())
    return absl::FailedPreconditionError(absl::StrCat(
        "cannot check access as uid ", uid, ": the checking child could not take that uid"));
  std::vector<Unreachable> out;
  for (size_t i = 0; i < needs.size(); ++i) {
    if (answers[i].err == 0) continue;
    Unreachable u;
    u.need = needs[i];
    u.err = answers[i].err;
    u.blocking = answers[i].blocked_at >= 0 ? ancestors[i][answers[i].blocked_at] : needs[i].path;
    struct stat st;
    if (::stat(u.blocking.c_str(), &st) == 0) {
      u.mode = st.st_mode & 07777;
      u.owner = st.st_uid;
    }
    out.push_back(std::move(u));
  }
  return out;
}

std::string DescribeUnreachable(uid_t uid, const Unreachable& u) {
  const bool folder = u.blocking != u.need.path;
  const char* wanted = (u.need.access & W_OK)   ? "write"
                       : (u.need.access & X_OK) ? "execute"
                                                : "read";
  return absl::StrFormat(
      "workers run as uid %d, which cannot %s %s at %s: %s %s is mode %04o, owner uid %d (%s); "
      "fix: %s, or run caked with worker_user = \"\" (workers keep the daemon's uid)",
      uid, wanted, u.need.what, u.need.path, folder ? "folder" : "file", u.blocking, u.mode,
      u.owner, std::strerror(u.err),
      folder ? absl::StrFormat("chmod o+x %s (or install it where that uid can reach)", u.blocking)
             : absl::StrFormat("chmod o+%s %s", (u.need.access & W_OK) ? "w" : "rx", u.blocking));
}

absl::StatusOr<std::string> MirrorExecutable(const std::string& file, const std::string& dir) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec)
    return absl::FailedPreconditionError(absl::StrCat("cannot create ", dir, ": ", ec.message()));
  // Each folder made here is 0755 whatever the umask: the worker uid must traverse it.
  for (fs::path p = dir; !p.empty() && p != p.root_path(); p = p.parent_path()) {
    struct stat st;
    if (::stat(p.c_str(), &st) != 0 || st.st_uid != ::geteuid()) break;
    if ((st.st_mode & 0755) != 0755) ::chmod(p.c_str(), (st.st_mode & 07777) | 0755);
  }
  const std::string bytes = base::ReadFileBytes(file);
  if (bytes.empty()) return absl::FailedPreconditionError(absl::StrCat("cannot read ", file));
  const fs::path target = fs::path(dir) / fs::path(file).filename();
  if (absl::Status s = base::WriteFileAtomically(target, bytes, 0755); !s.ok())
    return absl::FailedPreconditionError(s.message());
  return target.string();
}

}  // namespace cake::gpuqueue
