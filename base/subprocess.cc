#include "subprocess.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"

extern char** environ;

namespace cake::base {
namespace {

void SetNonBlocking(int fd) { fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK); }

// The child's report of a failure before exec, on the status pipe (fd kStatusFd in the child,
// close-on-exec: a successful exec closes it unread).
struct StartFailure {
  int step;  // index into child_setup, or -1 for execve itself
  int err;
  int uid;  // the child's effective uid when it failed (after any uid change)
};
constexpr int kStatusFd = 3;

// Async-signal-safe: reports on the status pipe, writes "cake: child setup failed: WHAT: errno
// N\n" to fd 2 and exits.
void ChildFail(int step, const char* what, int err) {
  const StartFailure f{step, err, static_cast<int>(geteuid())};
  (void)!write(kStatusFd, &f, sizeof(f));
  char buf[256];
  size_t n = 0;
  auto put = [&](const char* s) {
    while (*s && n < sizeof(buf) - 1) buf[n++] = *s++;
  };
  put("cake: child setup failed: ");
  put(what);
  put(": errno ");
  char digits[12];
  int d = 0;
  unsigned v = static_cast<unsigned>(err);
  do {
    digits[d++] = static_cast<char>('0' + v % 10);
    v /= 10;
  } while (v && d < 11);
  while (d > 0 && n < sizeof(buf) - 1) buf[n++] = digits[--d];
  buf[n++] = '\n';
  (void)!write(2, buf, n);
  _exit(126);
}

}  // namespace

std::string SubprocessResult::Describe() const {
  if (!watchdog_reason.empty()) return absl::StrCat("killed: ", watchdog_reason);
  if (output_limit_exceeded) return "killed for writing more output than allowed";
  if (timed_out) return absl::StrFormat("timed out after %.1f s", wall_seconds);
  if (term_signal != 0) return absl::StrCat("killed by signal ", term_signal);
  return absl::StrCat("exit ", exit_code);
}

std::optional<std::string> FindOnPath(const std::string& name) {
  if (name.find('/') != std::string::npos) {
    if (access(name.c_str(), X_OK) == 0) return name;
    return std::nullopt;
  }
  const char* path = std::getenv("PATH");
  if (path == nullptr) return std::nullopt;
  for (absl::string_view dir : absl::StrSplit(path, ':')) {
    if (dir.empty()) continue;
    std::string candidate = absl::StrCat(dir, "/", name);
    struct stat st;
    if (stat(candidate.c_str(), &st) == 0 && S_ISREG(st.st_mode) &&
        access(candidate.c_str(), X_OK) == 0)
      return candidate;
  }
  return std::nullopt;
}

absl::StatusOr<SubprocessResult> RunSubprocess(const std::vector<std::string>& argv,
                                               const SubprocessOptions& options) {
  if (argv.empty()) return absl::InvalidArgumentError("empty command line");
  auto exe = FindOnPath(argv[0]);
  if (!exe) {
    // A path names one file: say why it cannot run (EACCES, ENOENT), with the uid asking.
    if (argv[0].find('/') != std::string::npos && access(argv[0].c_str(), X_OK) != 0)
      return absl::NotFoundError(absl::StrCat(argv[0], ": cannot execute it as uid ", geteuid(),
                                              ": ", std::strerror(errno), " (errno ", errno, ")"));
    return absl::NotFoundError(absl::StrCat(argv[0], ": not found or not executable"));
  }

  int in_pipe[2], out_pipe[2], err_pipe[2], status_pipe[2];
  if (pipe2(in_pipe, O_CLOEXEC) != 0 || pipe2(out_pipe, O_CLOEXEC) != 0 ||
      pipe2(err_pipe, O_CLOEXEC) != 0 || pipe2(status_pipe, O_CLOEXEC) != 0)
    return absl::InternalError(absl::StrCat("pipe: ", std::strerror(errno)));

  // Build argv/envp before fork: the child only calls async-signal-safe functions.
  std::vector<char*> cargv;
  for (const std::string& a : argv) cargv.push_back(const_cast<char*>(a.c_str()));
  cargv.push_back(nullptr);
  std::vector<std::string> env_strings;
  if (options.inherit_environment)
    for (char** e = environ; *e != nullptr; ++e) {
      absl::string_view kv(*e);
      const std::string key(kv.substr(0, kv.find('=')));
      if (!options.env.count(key)) env_strings.emplace_back(kv);
    }
  for (const auto& [k, v] : options.env) env_strings.push_back(absl::StrCat(k, "=", v));
  std::vector<char*> cenv;
  for (std::string& s : env_strings) cenv.push_back(s.data());
  cenv.push_back(nullptr);

  const auto start = std::chrono::steady_clock::now();
  const pid_t parent = getpid();
  std::unique_lock<std::mutex> spawning;
  if (options.spawn_lock != nullptr) spawning = std::unique_lock<std::mutex>(*options.spawn_lock);
  const pid_t pid = fork();
  if (pid < 0) return absl::InternalError(absl::StrCat("fork: ", std::strerror(errno)));
  if (pid == 0) {
    // Own process group, so a kill reaches everything the child starts (that stays in it).
    setpgid(0, 0);
    // Die with the thread that started us; if it already died, do not run at all.
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) _exit(125);
    dup2(in_pipe[0], 0);
    dup2(out_pipe[1], 1);
    dup2(err_pipe[1], 2);
    dup3(status_pipe[1], kStatusFd, O_CLOEXEC);
    if (!options.working_dir.empty() && chdir(options.working_dir.c_str()) != 0)
      ChildFail(-2, "chdir", errno);
    for (size_t i = 0; i < options.child_setup.size(); ++i)
      if (const int err = options.child_setup[i].run(); err != 0)
        ChildFail(static_cast<int>(i), options.child_setup[i].what, err);
    // Only 0-2 (and the close-on-exec status pipe) cross into the child, whatever the parent
    // forgot to mark close-on-exec.
    syscall(SYS_close_range, static_cast<unsigned>(kStatusFd + 1), ~0U, 0U);
    execve(exe->c_str(), cargv.data(), cenv.data());
    ChildFail(-1, "execve", errno);
  }
  close(status_pipe[1]);
  setpgid(pid, pid);  // also from the parent: no race with an early kill
  if (options.on_start) options.on_start(pid);
  if (spawning.owns_lock()) spawning.unlock();
  const auto kill_tree = [&] {
    if (options.kill_tree) {
      options.kill_tree(pid);
    } else {
      kill(-pid, SIGKILL);
    }
  };
  close(in_pipe[0]);
  close(out_pipe[1]);
  close(err_pipe[1]);
  // EOF on the status pipe means the exec happened; a record means the child never became
  // `argv[0]`: that is an error of starting it (with the errno and the uid it ran as), not a
  // result of running it.
  StartFailure failure{};
  ssize_t got = 0;
  do {
    got = read(status_pipe[0], &failure, sizeof(failure));
  } while (got < 0 && errno == EINTR);
  close(status_pipe[0]);
  if (got == static_cast<ssize_t>(sizeof(failure))) {
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    for (int fd : {in_pipe[1], out_pipe[0], err_pipe[0]}) close(fd);
    const std::string what = failure.step == -1 ? "execve"
                             : failure.step == -2
                                 ? "chdir"
                                 : options.child_setup[static_cast<size_t>(failure.step)].what;
    return absl::FailedPreconditionError(
        absl::StrCat(argv[0], ": cannot start it (", what, " as uid ", failure.uid,
                     "): ", std::strerror(failure.err), " (errno ", failure.err, ")"));
  }
  SetNonBlocking(in_pipe[1]);
  SetNonBlocking(out_pipe[0]);
  SetNonBlocking(err_pipe[0]);

  SubprocessResult result;
  size_t written = 0;
  int in_fd = in_pipe[1];
  if (options.stdin_bytes.empty()) {
    close(in_fd);
    in_fd = -1;
  }
  int out_fd = out_pipe[0], err_fd = err_pipe[0];
  const auto deadline = start + options.timeout;
  auto next_watch = start;
  char buf[65536];
  // SIGPIPE on a child that closes stdin early must not kill us.
  struct sigaction ignore_pipe {
  }, old_pipe{};
  ignore_pipe.sa_handler = SIG_IGN;
  sigaction(SIGPIPE, &ignore_pipe, &old_pipe);
  while (out_fd >= 0 || err_fd >= 0) {
    const auto now = std::chrono::steady_clock::now();
    if (now >= deadline) {
      result.timed_out = true;
      kill_tree();
      break;
    }
    pollfd fds[3];
    int n = 0;
    if (in_fd >= 0) fds[n++] = {in_fd, POLLOUT, 0};
    if (out_fd >= 0) fds[n++] = {out_fd, POLLIN, 0};
    if (err_fd >= 0) fds[n++] = {err_fd, POLLIN, 0};
    if (options.watchdog && now >= next_watch) {
      next_watch = now + std::chrono::milliseconds(50);
      result.watchdog_reason = options.watchdog();
      if (!result.watchdog_reason.empty()) {
        kill_tree();
        break;
      }
    }
    int wait_ms = static_cast<int>(
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - now).count() + 1);
    if (options.watchdog) wait_ms = std::min(wait_ms, 50);
    if (poll(fds, n, wait_ms) < 0 && errno != EINTR) break;
    for (int i = 0; i < n; ++i) {
      if (fds[i].revents == 0) continue;
      if (fds[i].fd == in_fd) {
        const ssize_t w = write(in_fd, options.stdin_bytes.data() + written,
                                options.stdin_bytes.size() - written);
        if (w > 0) written += static_cast<size_t>(w);
        if (w < 0 && errno != EAGAIN) written = options.stdin_bytes.size();
        if (written >= options.stdin_bytes.size()) {
          close(in_fd);
          in_fd = -1;
        }
        continue;
      }
      int& fd = fds[i].fd == out_fd ? out_fd : err_fd;
      std::string& sink = fds[i].fd == out_fd ? result.stdout_bytes : result.stderr_bytes;
      const ssize_t r = read(fd, buf, sizeof(buf));
      if (r > 0) {
        sink.append(buf, static_cast<size_t>(r));
        if (&sink == &result.stderr_bytes && sink.size() > 2 * options.max_stderr_bytes)
          sink.erase(0, sink.size() - options.max_stderr_bytes);
        if (&sink == &result.stdout_bytes && options.max_stdout_bytes > 0 &&
            sink.size() > options.max_stdout_bytes) {
          // A flood is not buffered whole: the tree is killed and the output dropped.
          result.output_limit_exceeded = true;
          sink.clear();
          kill_tree();
          close(out_fd);
          out_fd = -1;
          close(err_fd);
          err_fd = -1;
          break;
        }
      } else if (r == 0 || (errno != EAGAIN && errno != EINTR)) {
        close(fd);
        fd = -1;
      }
    }
  }
  sigaction(SIGPIPE, &old_pipe, nullptr);
  if (in_fd >= 0) close(in_fd);
  if (out_fd >= 0) close(out_fd);
  if (err_fd >= 0) close(err_fd);
  int status = 0;
  // Wait without reaping: while the child is a zombie its pid (and so its group id) cannot be
  // reused, so the group kill below reaches only what it left behind.
  siginfo_t info;
  while (waitid(P_PID, static_cast<id_t>(pid), &info, WEXITED | WNOWAIT) < 0 && errno == EINTR) {
  }
  kill_tree();
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (result.stderr_bytes.size() > options.max_stderr_bytes)
    result.stderr_bytes.erase(0, result.stderr_bytes.size() - options.max_stderr_bytes);
  result.wall_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (WIFEXITED(status)) result.exit_code = WEXITSTATUS(status);
  if (WIFSIGNALED(status)) result.term_signal = WTERMSIG(status);
  return result;
}

}  // namespace cake::base
