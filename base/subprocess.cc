#include "subprocess.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

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

}  // namespace

std::string SubprocessResult::Describe() const {
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
  if (!exe) return absl::NotFoundError(absl::StrCat(argv[0], ": not found or not executable"));

  int in_pipe[2], out_pipe[2], err_pipe[2];
  if (pipe2(in_pipe, O_CLOEXEC) != 0 || pipe2(out_pipe, O_CLOEXEC) != 0 ||
      pipe2(err_pipe, O_CLOEXEC) != 0)
    return absl::InternalError(absl::StrCat("pipe: ", std::strerror(errno)));

  // Build argv/envp before fork: the child only calls async-signal-safe functions.
  std::vector<char*> cargv;
  for (const std::string& a : argv) cargv.push_back(const_cast<char*>(a.c_str()));
  cargv.push_back(nullptr);
  std::vector<std::string> env_strings;
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
  const pid_t pid = fork();
  if (pid < 0) return absl::InternalError(absl::StrCat("fork: ", std::strerror(errno)));
  if (pid == 0) {
    // Own process group, so a timeout kill reaches everything the child starts.
    setpgid(0, 0);
    dup2(in_pipe[0], 0);
    dup2(out_pipe[1], 1);
    dup2(err_pipe[1], 2);
    if (!options.working_dir.empty() && chdir(options.working_dir.c_str()) != 0) _exit(126);
    execve(exe->c_str(), cargv.data(), cenv.data());
    _exit(127);
  }
  setpgid(pid, pid);  // also from the parent: no race with an early kill
  if (options.on_start) options.on_start(pid);
  close(in_pipe[0]);
  close(out_pipe[1]);
  close(err_pipe[1]);
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
      kill(-pid, SIGKILL);
      break;
    }
    pollfd fds[3];
    int n = 0;
    if (in_fd >= 0) fds[n++] = {in_fd, POLLOUT, 0};
    if (out_fd >= 0) fds[n++] = {out_fd, POLLIN, 0};
    if (err_fd >= 0) fds[n++] = {err_fd, POLLIN, 0};
    const int wait_ms = static_cast<int>(
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - now).count() + 1);
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
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  // Reap anything the child left in its group.
  if (result.timed_out) kill(-pid, SIGKILL);
  result.wall_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (WIFEXITED(status)) result.exit_code = WEXITSTATUS(status);
  if (WIFSIGNALED(status)) result.term_signal = WTERMSIG(status);
  if (!result.timed_out && result.exit_code == 127 && result.term_signal == 0 &&
      result.stdout_bytes.empty() && result.stderr_bytes.empty())
    return absl::NotFoundError(absl::StrCat(argv[0], ": could not be executed"));
  return result;
}

}  // namespace cake::base
