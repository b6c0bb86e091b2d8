#include "worker_sandbox.h"

#include <dirent.h>
#include <fcntl.h>
#include <grp.h>
#include <linux/capability.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <seccomp.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <set>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "base/status_macros.h"

namespace cake::gpuqueue {
namespace {

namespace fs = std::filesystem;

// Landlock's ABI, declared here so the build does not depend on the headers' vintage.
struct RulesetAttr {
  uint64_t handled_access_fs;
  uint64_t handled_access_net;  // ABI 4
  uint64_t scoped;              // ABI 6
};
struct __attribute__((packed)) PathBeneathAttr {
  uint64_t allowed_access;
  int32_t parent_fd;
};
constexpr int kRulePathBeneath = 1;
constexpr uint32_t kCreateRulesetVersion = 1U << 0;
constexpr uint64_t kFsExecute = 1ULL << 0, kFsWriteFile = 1ULL << 1, kFsReadFile = 1ULL << 2,
                   kFsReadDir = 1ULL << 3, kFsRefer = 1ULL << 13, kFsTruncate = 1ULL << 14;
constexpr uint64_t kFsAbi1 = (1ULL << 13) - 1;  // EXECUTE .. MAKE_SYM
constexpr uint64_t kNetBindTcp = 1ULL << 0, kNetConnectTcp = 1ULL << 1;
constexpr uint64_t kScopeAbstractUnixSocket = 1ULL << 0, kScopeSignal = 1ULL << 1;
#ifndef SYS_landlock_create_ruleset
constexpr long SYS_landlock_create_ruleset = 444, SYS_landlock_add_rule = 445,
               SYS_landlock_restrict_self = 446;
#endif

uint64_t HandledFs(int abi) {
  uint64_t fs = kFsAbi1;
  if (abi >= 2) fs |= kFsRefer;
  if (abi >= 3) fs |= kFsTruncate;
  // IOCTL_DEV (ABI 5) is left unhandled: device ioctls (the GPU's) stay as DAC allows them.
  return fs;
}

// Syscalls a compiler, a sanitizer and a kernel launch never need. Unknown names (another
// architecture) are skipped.
constexpr const char* kDenied[] = {
    "ptrace",
    "process_vm_readv",
    "process_vm_writev",
    "mount",
    "umount2",
    "pivot_root",
    "chroot",
    "swapon",
    "swapoff",
    "reboot",
    "kexec_load",
    "kexec_file_load",
    "init_module",
    "finit_module",
    "delete_module",
    "keyctl",
    "add_key",
    "request_key",
    "bpf",
    "perf_event_open",
    "unshare",
    "setns",
    "userfaultfd",
    "open_by_handle_at",
    "name_to_handle_at",
    "acct",
    "settimeofday",
    "clock_settime",
    "clock_adjtime",
    "adjtimex",
    "sethostname",
    "setdomainname",
    "iopl",
    "ioperm",
    "quotactl",
    "fanotify_init",
    "io_uring_setup",
    "io_uring_enter",
    "io_uring_register",
    "fsopen",
    "fsconfig",
    "fsmount",
    "fspick",
    "move_mount",
    "open_tree",
    "mount_setattr",
    "lookup_dcookie",
    "kcmp",
    "personality",
    "vhangup",
    "syslog",
};
constexpr uint64_t kNamespaceFlags[] = {CLONE_NEWNS,  CLONE_NEWUTS, CLONE_NEWIPC,   CLONE_NEWUSER,
                                        CLONE_NEWPID, CLONE_NEWNET, CLONE_NEWCGROUP};

absl::StatusOr<std::vector<unsigned char>> BuildSeccompFilter() {
  scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
  if (ctx == nullptr) return absl::InternalError("seccomp_init failed");
  auto fail = [&](const std::string& what, int rc) {
    seccomp_release(ctx);
    return absl::InternalError(absl::StrCat("seccomp: ", what, ": ", std::strerror(-rc)));
  };
  for (const char* name : kDenied) {
    const int nr = seccomp_syscall_resolve_name(name);
    if (nr == __NR_SCMP_ERROR) continue;
    if (int rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), nr, 0); rc < 0) return fail(name, rc);
  }
  // New namespaces through clone(2) flags; clone3 passes its flags in memory, which a filter
  // cannot read, so it answers ENOSYS and the C library falls back to clone(2).
  for (uint64_t flag : kNamespaceFlags)
    if (int rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(clone), 1,
                                  SCMP_A0(SCMP_CMP_MASKED_EQ, flag, flag));
        rc < 0)
      return fail("clone", rc);
  if (int rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(ENOSYS), SCMP_SYS(clone3), 0); rc < 0)
    return fail("clone3", rc);
  const int mfd = memfd_create("cake-seccomp", MFD_CLOEXEC);
  if (mfd < 0) {
    seccomp_release(ctx);
    return absl::InternalError(absl::StrCat("memfd_create: ", std::strerror(errno)));
  }
  const int rc = seccomp_export_bpf(ctx, mfd);
  seccomp_release(ctx);
  if (rc < 0) {
    ::close(mfd);
    return absl::InternalError(absl::StrCat("seccomp_export_bpf: ", std::strerror(-rc)));
  }
  std::vector<unsigned char> bpf(static_cast<size_t>(lseek(mfd, 0, SEEK_END)));
  const bool read_ok = pread(mfd, bpf.data(), bpf.size(), 0) == static_cast<ssize_t>(bpf.size());
  ::close(mfd);
  if (!read_ok || bpf.empty() || bpf.size() % sizeof(sock_filter) != 0)
    return absl::InternalError("seccomp: exported filter is malformed");
  return bpf;
}

class RulesetBuilder {
 public:
  RulesetBuilder(int fd, uint64_t handled) : fd_(fd), handled_(handled) {}

  // Grants `access` beneath `path` (file rights only, for a non-directory). Missing paths are
  // skipped: a rule for what does not exist grants nothing.
  absl::Status Allow(const std::string& path, uint64_t access) {
    const int pfd = ::open(path.c_str(), O_PATH | O_CLOEXEC | O_NOFOLLOW);
    if (pfd < 0) return absl::OkStatus();
    struct stat st;
    if (fstat(pfd, &st) != 0 || S_ISLNK(st.st_mode)) {
      ::close(pfd);
      return absl::OkStatus();
    }
    if (!S_ISDIR(st.st_mode)) access &= kFsExecute | kFsWriteFile | kFsReadFile | kFsTruncate;
    PathBeneathAttr attr{access & handled_, pfd};
    const long rc = attr.allowed_access == 0
                        ? 0
                        : syscall(SYS_landlock_add_rule, fd_, kRulePathBeneath, &attr, 0U);
    const int err = errno;
    ::close(pfd);
    if (rc != 0)
      return absl::InternalError(
          absl::StrCat("landlock_add_rule ", path, ": ", std::strerror(err)));
    ++rules_;
    return absl::OkStatus();
  }

  // Read (and execute) everything beneath `dir` except the protected directories: whole
  // subtrees where no protected directory lies below, entry by entry along the way to one.
  absl::Status AllowReadExcept(const std::string& dir, const std::set<std::string>& protect) {
    if (protect.count(dir)) return absl::OkStatus();
    const std::string prefix = dir == "/" ? "/" : dir + "/";
    bool ancestor = false;
    for (const std::string& p : protect) ancestor |= absl::StartsWith(p, prefix);
    const uint64_t read = kFsReadFile | kFsReadDir | kFsExecute;
    if (!ancestor) return Allow(dir, read);
    DIR* d = ::opendir(dir.c_str());
    if (d == nullptr) return absl::OkStatus();
    absl::Status status;
    while (dirent* e = ::readdir(d)) {
      const std::string name = e->d_name;
      if (name == "." || name == "..") continue;
      const std::string path = prefix + name;
      struct stat st;
      if (lstat(path.c_str(), &st) != 0 || S_ISLNK(st.st_mode)) continue;
      status = S_ISDIR(st.st_mode) ? AllowReadExcept(path, protect) : Allow(path, read);
      if (!status.ok()) break;
    }
    ::closedir(d);
    return status;
  }

  int rules() const { return rules_; }

 private:
  int fd_;
  uint64_t handled_;
  int rules_ = 0;
};

std::string Canonical(const std::string& path) {
  std::error_code ec;
  fs::path p = fs::weakly_canonical(fs::absolute(path), ec);
  return ec ? path : p.string();
}

// Processes of `uid` now (RLIMIT_NPROC counts them all).
int64_t ProcessesOfUid(uid_t uid) {
  int64_t n = 0;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator("/proc", ec)) {
    struct stat st;
    const std::string name = e.path().filename().string();
    if (name.empty() || name[0] < '0' || name[0] > '9') continue;
    if (stat(e.path().c_str(), &st) == 0 && st.st_uid == uid) ++n;
  }
  return n;
}

bool HasAnyCapability() {
  __user_cap_header_struct header{_LINUX_CAPABILITY_VERSION_3, 0};
  __user_cap_data_struct data[2] = {};
  if (syscall(SYS_capget, &header, data) != 0) return true;
  return data[0].effective || data[1].effective || data[0].permitted || data[1].permitted;
}

}  // namespace

bool CanRunWorkersAsAnotherUser() {
  __user_cap_header_struct header{_LINUX_CAPABILITY_VERSION_3, 0};
  __user_cap_data_struct data[2] = {};
  if (syscall(SYS_capget, &header, data) != 0) return false;
  const auto effective = [&](int cap) { return (data[cap / 32].effective >> (cap % 32)) & 1u; };
  return effective(CAP_SETUID) && effective(CAP_SETGID) && effective(CAP_CHOWN);
}

struct PreparedSandbox::Limits {
  struct Entry {
    int resource;
    rlimit value;
  };
  std::vector<Entry> entries;
  bool drop_caps = false;
  int cgroup_fd = -1;
  uid_t uid = 0;
  gid_t gid = 0;
  pid_t parent = 0;
  sock_fprog prog{};
};

PreparedSandbox::~PreparedSandbox() {
  if (landlock_fd_ >= 0) ::close(landlock_fd_);
}

int LandlockAbi() {
  const long abi = syscall(SYS_landlock_create_ruleset, nullptr, 0, kCreateRulesetVersion);
  return abi < 0 ? 0 : static_cast<int>(abi);
}

absl::Status SeccompFiltersLoad() {
  CAKE_ASSIGN_OR_RETURN(std::vector<unsigned char> bpf, BuildSeccompFilter());
  sock_fprog prog{};
  prog.len = static_cast<unsigned short>(bpf.size() / sizeof(sock_filter));
  prog.filter = reinterpret_cast<sock_filter*>(bpf.data());
  // In a child, which only makes two prctl calls and exits: the filter is for life.
  const pid_t pid = fork();
  if (pid < 0) return absl::InternalError(absl::StrCat("fork: ", std::strerror(errno)));
  if (pid == 0) {
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) _exit(errno & 0x7f);
    _exit(prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog, 0, 0) == 0 ? 0 : errno & 0x7f);
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0)
    if (errno != EINTR) return absl::InternalError(absl::StrCat("waitpid: ", std::strerror(errno)));
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return absl::OkStatus();
  return absl::FailedPreconditionError(
      absl::StrCat("this system refuses seccomp filters (",
                   WIFEXITED(status) ? std::strerror(WEXITSTATUS(status)) : "the probe died",
                   "; a kernel without CONFIG_SECCOMP_FILTER, or an emulator such as qemu-user)"));
}

std::string DescribeSandboxSupport() {
  const int abi = LandlockAbi();
  return abi > 0 ? absl::StrCat("landlock ABI ", abi,
                                abi >= 6   ? " (filesystem, TCP, signals, abstract sockets)"
                                : abi >= 4 ? " (filesystem, TCP)"
                                           : " (filesystem)",
                                "; seccomp deny-list; no capabilities; rlimits")
                 : "no landlock in this kernel: workers can read the state directory (tokens, "
                   "ledger); seccomp deny-list; no capabilities; rlimits";
}

absl::StatusOr<std::unique_ptr<PreparedSandbox>> PrepareSandbox(const SandboxSpec& spec) {
  std::unique_ptr<PreparedSandbox> sb(new PreparedSandbox());
  sb->limits_ = std::make_unique<PreparedSandbox::Limits>();
  PreparedSandbox::Limits& lim = *sb->limits_;
  std::vector<std::string> in_force;

  lim.cgroup_fd = spec.cgroup_procs_fd;
  if (lim.cgroup_fd >= 0) {
    // Writing 0 moves the writer: the child joins before it can start anything.
    sb->steps_.push_back(
        {"join job cgroup", [fd = lim.cgroup_fd] { return ::write(fd, "0", 1) == 1 ? 0 : errno; }});
    in_force.push_back("own cgroup");
  }

  auto add_limit = [&](int resource, int64_t value) {
    const rlim_t v = static_cast<rlim_t>(value);
    lim.entries.push_back({resource, rlimit{v, v}});
  };
  add_limit(RLIMIT_CORE, 0);
  if (spec.cpu_seconds.count() > 0) add_limit(RLIMIT_CPU, spec.cpu_seconds.count());
  if (spec.file_size_bytes > 0) add_limit(RLIMIT_FSIZE, spec.file_size_bytes);
  if (spec.address_space_bytes > 0) add_limit(RLIMIT_AS, spec.address_space_bytes);
  const uid_t worker_uid = spec.run_as_uid >= 0 ? static_cast<uid_t>(spec.run_as_uid) : getuid();
  if (spec.max_processes > 0)
    add_limit(RLIMIT_NPROC, ProcessesOfUid(worker_uid) + spec.max_processes);
  sb->steps_.push_back({"setrlimit", [l = &lim] {
                          for (const auto& e : l->entries)
                            if (setrlimit(e.resource, &e.value) != 0) return errno;
                          return 0;
                        }});
  in_force.push_back("rlimits");

  sb->steps_.push_back(
      {"no_new_privs", [] { return prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0 ? 0 : errno; }});

  const int abi = spec.landlock ? LandlockAbi() : 0;
  if (abi > 0) {
    RulesetAttr attr{
        HandledFs(abi), abi >= 4 ? (kNetBindTcp | kNetConnectTcp) : 0,
        abi >= 6 && spec.landlock_scopes ? (kScopeAbstractUnixSocket | kScopeSignal) : 0};
    const size_t size = abi >= 6 ? sizeof(RulesetAttr) : abi >= 4 ? 16 : 8;
    const long fd = syscall(SYS_landlock_create_ruleset, &attr, size, 0U);
    if (fd < 0)
      return absl::InternalError(absl::StrCat("landlock_create_ruleset: ", std::strerror(errno)));
    sb->landlock_fd_ = static_cast<int>(fd);
    RulesetBuilder rules(sb->landlock_fd_, attr.handled_access_fs);
    std::set<std::string> protect;
    for (const std::string& p : spec.protected_dirs) protect.insert(Canonical(p));
    if (protect.count("/")) return absl::InvalidArgumentError("the root cannot be protected");
    absl::Status s;
    if (spec.readable.empty()) {
      s = rules.AllowReadExcept("/", protect);
    } else {
      std::set<std::string> roots(spec.readable.begin(), spec.readable.end());
      for (const char* p : kSystemReadable) roots.insert(Canonical(p));
      for (const std::string& r : roots) {
        const std::string root = Canonical(r);
        bool inside_protected = false;
        for (const std::string& p : protect)
          inside_protected |= root == p || absl::StartsWith(root, p + "/");
        if (!inside_protected && s.ok()) s = rules.AllowReadExcept(root, protect);
      }
      if (s.ok()) s = rules.Allow("/dev", kFsReadDir);
    }
    const uint64_t all = attr.handled_access_fs;
    std::vector<std::string> writable = spec.writable;
    writable.insert(writable.end(), spec.group_writable.begin(), spec.group_writable.end());
    writable.push_back(spec.job_dir);
    for (const std::string& w : writable) {
      // A rule needs the tree to exist; the artifact store is created on first use.
      std::error_code ec;
      fs::create_directories(w, ec);
      if (s.ok()) s = rules.Allow(Canonical(w), all);
    }
    for (const char* dev : {"/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom"})
      if (s.ok()) s = rules.Allow(dev, kFsReadFile | kFsWriteFile | kFsTruncate);
    if (s.ok()) s = rules.Allow("/dev/shm", all);
    if (spec.gpu && s.ok()) {
      std::error_code ec;
      for (const auto& e : fs::directory_iterator("/dev", ec))
        if (absl::StartsWith(e.path().filename().string(), "nvidia") && s.ok())
          s = rules.Allow(e.path().string(), kFsReadFile | kFsWriteFile | kFsReadDir);
      // The CUDA driver names its threads (/proc/self/task/TID/comm, opened with O_TRUNC) and
      // cuInit fails with CUDA_ERROR_OPERATING_SYSTEM when it cannot; under compute-sanitizer
      // the process doing so is a grandchild whose pid is not known here. So GPU jobs may write
      // beneath /proc, where the kernel and DAC still decide: a process renames only its own
      // threads, and an unprivileged worker uid writes no tunable (the unit also mounts them
      // read-only).
      if (s.ok()) s = rules.Allow("/proc", kFsWriteFile | kFsTruncate);
    }
    if (!s.ok()) return s;
    sb->steps_.push_back({"landlock_restrict_self", [fd = sb->landlock_fd_] {
                            return syscall(SYS_landlock_restrict_self, fd, 0U) == 0 ? 0 : errno;
                          }});
    in_force.push_back(absl::StrCat("landlock ABI ", abi, " (", rules.rules(), " rules)"));
  } else {
    in_force.push_back("no landlock (the state directory stays readable)");
  }

  lim.drop_caps = getuid() == 0 || HasAnyCapability();
  if (lim.drop_caps) {
    // The bounding set first: dropping it needs CAP_SETPCAP, which the uid change takes away.
    sb->steps_.push_back({"drop capabilities", [] {
                            // Only what the set still holds: dropping needs CAP_SETPCAP even
                            // for a capability already gone (a daemon started without any).
                            for (int cap = 0; cap <= 63; ++cap)
                              if (prctl(PR_CAPBSET_READ, cap, 0, 0, 0) == 1 &&
                                  prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) != 0)
                                return errno;
                            prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0);
                            return 0;
                          }});
  }
  if (spec.run_as_uid >= 0) {
    lim.uid = static_cast<uid_t>(spec.run_as_uid);
    lim.gid = static_cast<gid_t>(spec.run_as_gid >= 0 ? spec.run_as_gid : spec.run_as_uid);
    lim.parent = getpid();
    sb->steps_.push_back({"run as the worker uid", [l = &lim] {
                            if (setgroups(0, nullptr) != 0) return errno;
                            if (setresgid(l->gid, l->gid, l->gid) != 0) return errno;
                            if (setresuid(l->uid, l->uid, l->uid) != 0) return errno;
                            // A credential change clears the parent-death signal: set it again.
                            prctl(PR_SET_PDEATHSIG, SIGKILL);
                            return getppid() == l->parent ? 0 : ESRCH;
                          }});
    in_force.push_back(absl::StrCat("uid ", lim.uid));
  }
  if (lim.drop_caps) {
    sb->steps_.push_back({"clear capabilities", [] {
                            __user_cap_header_struct header{_LINUX_CAPABILITY_VERSION_3, 0};
                            __user_cap_data_struct data[2] = {};
                            return syscall(SYS_capset, &header, data) == 0 ? 0 : errno;
                          }});
    in_force.push_back("no capabilities");
  }

  if (!spec.seccomp) {
    sb->description_ = absl::StrJoin(in_force, ", ");
    return sb;
  }
  CAKE_ASSIGN_OR_RETURN(sb->bpf_, BuildSeccompFilter());
  lim.prog.len = static_cast<unsigned short>(sb->bpf_.size() / sizeof(sock_filter));
  lim.prog.filter = reinterpret_cast<sock_filter*>(sb->bpf_.data());
  sb->steps_.push_back({"seccomp", [prog = &lim.prog] {
                          return prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, prog, 0, 0) == 0
                                     ? 0
                                     : errno;
                        }});
  in_force.push_back("seccomp deny-list");
  sb->description_ = absl::StrJoin(in_force, ", ");
  return sb;
}

std::vector<std::string> WorkerReadSet(const std::string& worker_path,
                                       const std::map<std::string, std::string>& env,
                                       const std::vector<std::string>& tools) {
  std::set<std::string> out;
  auto add = [&](const fs::path& p) {
    std::error_code ec;
    const fs::path c = fs::canonical(p, ec);
    if (!ec && c != "/") out.insert(c.string());
  };
  if (!worker_path.empty()) add(fs::path(Canonical(worker_path)).parent_path());
  for (const std::string& tool : tools) {
    if (tool.empty()) continue;
    std::error_code ec;
    const fs::path found = fs::canonical(tool, ec);
    if (ec) continue;
    if (fs::is_directory(found, ec)) {  // a toolkit root such as $CUDA_HOME
      add(found);
      continue;
    }
    const fs::path bin = found.parent_path();
    add(bin.filename() == "bin" ? bin.parent_path() : bin);
  }
  for (const char* var : {"PATH", "LD_LIBRARY_PATH"}) {
    auto it = env.find(var);
    if (it == env.end()) continue;
    for (absl::string_view dir : absl::StrSplit(it->second, ':', absl::SkipEmpty()))
      if (absl::StartsWith(dir, "/")) add(std::string(dir));
  }
  return {out.begin(), out.end()};
}

}  // namespace cake::gpuqueue
