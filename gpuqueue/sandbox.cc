#include "sandbox.h"

#include "absl/strings/str_cat.h"
#include "base/subprocess.h"
#include "framing.h"

namespace cake::gpuqueue {
namespace {

std::string Tail(const std::string& s, size_t n = 400) {
  return s.size() <= n ? s : s.substr(s.size() - n);
}

}  // namespace

absl::StatusOr<worker::Reply> RunInWorker(const worker::Request& request,
                                          const SandboxOptions& options) {
  base::SubprocessOptions sp;
  sp.stdin_bytes = Frame(request);
  sp.timeout = options.timeout;
  sp.env = options.env;
  sp.on_start = options.on_start;
  auto run = base::RunSubprocess({options.worker_path}, sp);
  if (!run.ok())
    return absl::FailedPreconditionError(
        absl::StrCat("cannot start worker ", options.worker_path, ": ", run.status().message()));
  if (run->timed_out)
    return absl::AbortedError(absl::StrCat("worker timed out after ", options.timeout.count(),
                                           " ms; its process group was "
                                           "killed"));
  if (run->term_signal != 0)
    return absl::AbortedError(absl::StrCat("worker killed by signal ", run->term_signal,
                                           run->stderr_bytes.empty() ? "" : ": ",
                                           Tail(run->stderr_bytes)));
  worker::Reply reply;
  absl::Status s = Unframe(run->stdout_bytes, &reply);
  if (!s.ok())
    return absl::AbortedError(absl::StrCat("worker ", run->Describe(), " without a valid reply (",
                                           s.message(), ")", run->stderr_bytes.empty() ? "" : ": ",
                                           Tail(run->stderr_bytes)));
  return reply;
}

}  // namespace cake::gpuqueue
