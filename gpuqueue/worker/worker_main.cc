// cake-worker: runs exactly one job. Reads one framed cake.worker.Request from stdin, writes one
// framed cake.worker.Reply to stdout, exits. Logs go to stderr. Fault hooks for the daemon's
// sandbox tests are honoured only when $CAKE_WORKER_FAULT_DIR is set: a file named
// `<kind>.crash` or `<kind>.hang` there is consumed and makes this worker die by SIGKILL or hang;
// `<kind>.fill_disk` makes it fill the fault folder's file system after the job, before its
// reply (the daemon then saves the result on a full disk).
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>

#include "gpuqueue/framing.h"
#include "worker_jobs.h"

namespace {

std::string KindOf(const cake::worker::Request& r) {
  switch (r.job_case()) {
    case cake::worker::Request::kCompile:
      return "compile";
    case cake::worker::Request::kValidate:
      return "validate";
    case cake::worker::Request::kMeasure:
      return "measure";
    case cake::worker::Request::kProbe:
      return "probe";
    case cake::worker::Request::kSanitize:
      return "sanitize";
    case cake::worker::Request::kRegress:
      return "regress";
    default:
      return "none";
  }
}

void MaybeInjectFault(const std::string& kind) {
  const char* dir = std::getenv("CAKE_WORKER_FAULT_DIR");
  if (dir == nullptr || *dir == 0) return;
  namespace fs = std::filesystem;
  std::error_code ec;
  if (fs::remove(fs::path(dir) / (kind + ".crash"), ec)) raise(SIGKILL);
  if (fs::remove(fs::path(dir) / (kind + ".hang"), ec))
    for (;;) pause();
}

// Fills the fault folder's file system to its last byte (files of at most RLIMIT_FSIZE each).
void MaybeFillDisk(const std::string& kind) {
  const char* dir = std::getenv("CAKE_WORKER_FAULT_DIR");
  if (dir == nullptr || *dir == 0) return;
  namespace fs = std::filesystem;
  std::error_code ec;
  if (!fs::remove(fs::path(dir) / (kind + ".fill_disk"), ec)) return;
  signal(SIGXFSZ, SIG_IGN);  // past RLIMIT_FSIZE a write fails (EFBIG) instead of killing us
  static char block[1 << 16] = {1};
  for (int n = 0;; ++n) {
    FILE* f = std::fopen((fs::path(dir) / ("fill." + std::to_string(n))).c_str(), "w");
    if (f == nullptr) return;
    size_t written = 0;
    while (std::fwrite(block, 1, sizeof(block), f) == sizeof(block)) written += sizeof(block);
    const bool full = errno == ENOSPC;
    std::fclose(f);
    if (full || written == 0) break;
  }
  // The last bytes, one at a time.
  FILE* f = std::fopen((fs::path(dir) / "fill.tail").c_str(), "w");
  if (f == nullptr) return;
  std::setvbuf(f, nullptr, _IONBF, 0);
  while (std::fputc(1, f) != EOF) {
  }
  std::fclose(f);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc == 3 && std::string(argv[1]) == "--sanitize-target") {
    // The instrumented process of a sanitize job; its exit skips CUDA teardown after a fault.
    const int rc = cake::gpuqueue::RunSanitizeTarget(argv[2]);
    std::fflush(stdout);
    _exit(rc);
  }
  if (argc > 1) {
    std::fprintf(stderr,
                 "usage: cake-worker < framed-request > framed-reply\n"
                 "       cake-worker --sanitize-target REQUEST_FILE\n"
                 "Runs one Consumer CAKE job (compile, validate, sanitize, measure, probe) and\n"
                 "exits. It is started by caked; it is not meant to be run by hand.\n");
    return std::string(argv[1]) == "--help" ? 0 : 2;
  }
  cake::worker::Request request;
  absl::Status s = cake::gpuqueue::ReadFrame(0, &request);
  if (!s.ok()) {
    std::fprintf(stderr, "cake-worker: bad request: %s\n", std::string(s.message()).c_str());
    return 2;
  }
  MaybeInjectFault(KindOf(request));
  const cake::worker::Reply reply = cake::gpuqueue::RunWorkerRequest(request);
  MaybeFillDisk(KindOf(request));
  s = cake::gpuqueue::WriteFrame(1, reply);
  // After a hang or a sticky error the context cannot be torn down safely: leave at once.
  if (reply.device_fault()) _exit(s.ok() ? 0 : 3);
  if (!s.ok()) return 3;
  return 0;
}
