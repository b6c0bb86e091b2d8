#include "toolchain.h"

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>

#include <sys/stat.h>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "absl/synchronization/mutex.h"
#include "admission.h"
#include "base/files.h"
#include "base/status_macros.h"
#include "base/subprocess.h"

#ifndef CAKE_DEFAULT_NVCC
#define CAKE_DEFAULT_NVCC "nvcc"
#endif
#ifndef CAKE_DEFAULT_CUOBJDUMP
#define CAKE_DEFAULT_CUOBJDUMP "cuobjdump"
#endif

namespace cake::compiler {
namespace fs = std::filesystem;
namespace {

std::optional<std::string> Executable(const std::string& path) {
  if (path.empty()) return std::nullopt;
  return base::FindOnPath(path);
}

std::string LastLine(absl::string_view text) {
  std::vector<absl::string_view> lines = absl::StrSplit(text, '\n', absl::SkipWhitespace());
  return lines.empty() ? "" : std::string(absl::StripAsciiWhitespace(lines.back()));
}

}  // namespace

report::ToolchainIdentity Toolchain::Identity() const {
  report::ToolchainIdentity id;
  id.set_nvcc_path(nvcc);
  id.set_nvcc_version(nvcc_version);
  id.set_ptxas_version(ptxas_version);
  id.set_cuobjdump_path(cuobjdump);
  id.set_cuobjdump_version(cuobjdump_version);
  return id;
}

namespace {

// A binary's identity for the memo: path, inode, size and modification time. A binary replaced
// in place (another inode, size or time) is probed again.
std::string Stamp(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return absl::StrCat(path, " missing");
  return absl::StrCat(path, " ", st.st_ino, " ", st.st_size, " ", st.st_mtim.tv_sec, ".",
                      st.st_mtim.tv_nsec);
}

// The probed toolchains of this process, by the stamps of nvcc, ptxas and cuobjdump: each
// `--version` runs once per binary identity, so a compile that hits the artifact cache starts
// no subprocess.
struct ToolchainMemo {
  absl::Mutex mu;
  std::map<std::string, Toolchain> probed ABSL_GUARDED_BY(mu);
};
ToolchainMemo& Memo() {
  static ToolchainMemo* memo = new ToolchainMemo;
  return *memo;
}

}  // namespace

absl::StatusOr<Toolchain> DetectToolchain() {
  Toolchain tc;
  std::optional<std::string> nvcc;
  // An explicit $CAKE_NVCC is authoritative: no silent fallback to another toolchain.
  if (const char* env = std::getenv("CAKE_NVCC"); env != nullptr && *env) {
    nvcc = Executable(env);
    if (!nvcc)
      return absl::FailedPreconditionError(absl::StrCat(
          "nvcc not found: CAKE_NVCC=", env,
          " is not executable; unset it to use the CUDA toolkit `make bootstrap` checks for"));
  }
  if (!nvcc) nvcc = Executable(CAKE_DEFAULT_NVCC);
  if (!nvcc) nvcc = Executable("nvcc");
  if (!nvcc) nvcc = Executable("/usr/local/cuda/bin/nvcc");
  if (!nvcc)
    return absl::FailedPreconditionError(
        "nvcc not found: install the CUDA 13.0 toolkit (/usr/local/cuda) or set CAKE_NVCC; "
        "`make bootstrap` checks for it");
  tc.nvcc = *nvcc;
  const fs::path bin = fs::path(tc.nvcc).parent_path();
  const std::string ptxas = (bin / "ptxas").string();

  std::optional<std::string> cuobjdump;
  if (const char* env = std::getenv("CAKE_CUOBJDUMP"); env != nullptr && *env) {
    cuobjdump = Executable(env);
    if (!cuobjdump)
      return absl::FailedPreconditionError(absl::StrCat(
          "cuobjdump not found: CAKE_CUOBJDUMP=", env,
          " is not executable; `make bootstrap` installs NVIDIA's pinned nvidia-cuda-cuobjdump "
          "wheel into .toolchain/"));
  }
  if (!cuobjdump) cuobjdump = Executable((bin / "cuobjdump").string());
  if (!cuobjdump) cuobjdump = Executable(CAKE_DEFAULT_CUOBJDUMP);
  if (!cuobjdump) cuobjdump = Executable("cuobjdump");
  if (!cuobjdump)
    return absl::FailedPreconditionError(
        "cuobjdump not found: `make bootstrap` installs NVIDIA's pinned nvidia-cuda-cuobjdump "
        "wheel into .toolchain/ (or set CAKE_CUOBJDUMP)");
  tc.cuobjdump = *cuobjdump;

  const std::string key =
      absl::StrCat(Stamp(tc.nvcc), "\n", Stamp(ptxas), "\n", Stamp(tc.cuobjdump));
  {
    absl::MutexLock lock(&Memo().mu);
    if (auto it = Memo().probed.find(key); it != Memo().probed.end()) return it->second;
  }
  auto v = base::RunSubprocess({tc.nvcc, "--version"});
  if (!v.ok() || !v->ok())
    return absl::FailedPreconditionError(absl::StrCat(tc.nvcc, " --version failed"));
  std::smatch m;
  const std::string out = v->stdout_bytes;
  static const std::regex kRelease(R"(release (\d+)\.(\d+), (V[0-9.]+))");
  if (!std::regex_search(out, m, kRelease))
    return absl::FailedPreconditionError(
        absl::StrCat(tc.nvcc, ": unrecognised --version output: ", LastLine(out)));
  tc.cuda_major = std::stoi(m[1]);
  tc.cuda_minor = std::stoi(m[2]);
  tc.nvcc_version = absl::StrCat("release ", tc.cuda_major, ".", tc.cuda_minor, ", ", m[3].str());
  tc.ptx = PtxVersionForCudaRelease(tc.cuda_major, tc.cuda_minor);
  auto pv = base::RunSubprocess({ptxas, "--version"});
  tc.ptxas_version = pv.ok() && pv->ok() ? LastLine(pv->stdout_bytes) : "unknown";
  auto cv = base::RunSubprocess({tc.cuobjdump, "--version"});
  tc.cuobjdump_version = cv.ok() && cv->ok() ? LastLine(cv->stdout_bytes) : "unknown";
  absl::MutexLock lock(&Memo().mu);
  Memo().probed[key] = tc;
  return tc;
}

std::vector<std::string> CompileFlags(const TargetInfo& target) {
  return {
      "-cubin", "-O3", "-std=c++17",
      // No -lineinfo: it embeds the build directory, and identical inputs must give
      // byte-identical cubins.
      "-Xptxas", "-v", "-gencode",
      absl::StrCat("arch=", std::string(target.virtual_arch), ",code=", std::string(target.name))};
}

absl::StatusOr<NvccOutput> RunNvcc(const Toolchain& tc, const TargetInfo& target,
                                   const std::string& source, const std::string& workdir) {
  std::error_code ec;
  fs::create_directories(workdir, ec);
  if (ec)
    return absl::UnavailableError(absl::StrCat("cannot create ", workdir, ": ", ec.message()));
  const fs::path dir(workdir);
  {
    std::ofstream out(dir / "kernel.cu", std::ios::binary);
    out << source;
    if (!out)
      return absl::UnavailableError(
          absl::StrCat("cannot write ", workdir, "/kernel.cu: ", std::strerror(errno)));
  }
  std::vector<std::string> argv = {tc.nvcc};
  for (const std::string& f : CompileFlags(target)) argv.push_back(f);
  argv.insert(argv.end(), {"--keep", "--keep-dir", workdir, "-o", (dir / "kernel.cubin").string(),
                           (dir / "kernel.cu").string()});
  base::SubprocessOptions opts;
  opts.working_dir = workdir;
  opts.timeout = std::chrono::minutes(5);
  auto run = base::RunSubprocess(argv, opts);
  if (!run.ok()) return run.status();
  NvccOutput out;
  out.log = run->stdout_bytes + run->stderr_bytes;
  if (!run->ok()) {
    if (run->timed_out) out.log += "\n[nvcc timed out]";
    return out;
  }
  out.ok = true;
  out.cubin = base::ReadFileBytes(dir / "kernel.cubin");
  out.ptx = base::ReadFileBytes(dir / "kernel.ptx");
  return out;
}

std::optional<report::ResourceUsage> ParsePtxasReport(absl::string_view log,
                                                      absl::string_view kernel) {
  // ptxas reports per entry: "Function properties for K" then a frame line, then "Used N
  // registers, ..." after "Compiling entry function 'K'".
  const std::string text(log);
  const std::string name(kernel);
  const size_t at = text.find("Compiling entry function '" + name + "'");
  if (at == std::string::npos) return std::nullopt;
  const size_t next = text.find("Compiling entry function", at + 1);
  const std::string section =
      text.substr(at, next == std::string::npos ? std::string::npos : next - at);
  report::ResourceUsage u;
  std::smatch m;
  static const std::regex kRegs(R"(Used (\d+) registers)");
  static const std::regex kBarriers(R"(used (\d+) barriers)");
  static const std::regex kSmem(R"((\d+) bytes smem)");
  static const std::regex kLmem(R"((\d+) bytes lmem)");
  static const std::regex kFrame(
      R"((\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads)");
  if (!std::regex_search(section, m, kRegs)) return std::nullopt;
  u.set_registers(std::stoi(m[1]));
  if (std::regex_search(section, m, kBarriers)) u.set_barriers(std::stoi(m[1]));
  if (std::regex_search(section, m, kSmem)) u.set_shared_static_bytes(std::stoll(m[1]));
  if (std::regex_search(section, m, kLmem)) u.set_local_memory_bytes(std::stoll(m[1]));
  if (std::regex_search(section, m, kFrame)) {
    u.set_stack_frame_bytes(std::stoll(m[1]));
    u.set_spill_store_bytes(std::stoll(m[2]));
    u.set_spill_load_bytes(std::stoll(m[3]));
  }
  return u;
}

std::optional<PtxVersion> PtxFileVersion(absl::string_view ptx) {
  std::smatch m;
  const std::string text(ptx.substr(0, 4096));
  static const std::regex kVersion(R"(\.version\s+(\d+\.\d+))");
  if (!std::regex_search(text, m, kVersion)) return std::nullopt;
  return ParsePtxVersion(m[1].str());
}

std::string PtxFileTarget(absl::string_view ptx) {
  std::smatch m;
  const std::string text(ptx.substr(0, 4096));
  static const std::regex kTarget(R"(\.target\s+([A-Za-z0-9_]+))");
  return std::regex_search(text, m, kTarget) ? m[1].str() : "";
}

absl::StatusOr<std::string> DumpSass(const Toolchain& tc, const std::string& cubin_path) {
  auto run = base::RunSubprocess({tc.cuobjdump, "-sass", cubin_path});
  if (!run.ok()) return run.status();
  if (!run->ok())
    return absl::UnavailableError(absl::StrCat("cuobjdump -sass failed (", run->Describe(),
                                               "): ", LastLine(run->stderr_bytes)));
  return run->stdout_bytes;
}

std::map<std::string, int64_t> SassCensus(absl::string_view sass) {
  std::map<std::string, int64_t> census;
  for (absl::string_view line : absl::StrSplit(sass, '\n')) {
    // "        /*00e0*/                   HMMA.16816.F32.BF16 R8, R8, R12, RZ ;"
    const size_t close = line.find("*/");
    if (line.find("/*") == absl::string_view::npos || close == absl::string_view::npos) continue;
    absl::string_view rest = absl::StripLeadingAsciiWhitespace(line.substr(close + 2));
    if (rest.empty() || rest.front() == '/') continue;
    if (rest.front() == '@') {  // predicate guard
      const size_t sp = rest.find(' ');
      if (sp == absl::string_view::npos) continue;
      rest = absl::StripLeadingAsciiWhitespace(rest.substr(sp));
    }
    const size_t end = rest.find_first_of(" ;");
    absl::string_view opcode = rest.substr(0, end);
    if (opcode.empty() || !(opcode.front() >= 'A' && opcode.front() <= 'Z')) continue;
    ++census[std::string(opcode)];
  }
  return census;
}

namespace {

// Modifiers that change what an instruction computes: operand and accumulator types, block
// scaling (SF) and sparsity (SP). An opcode carrying one that the form does not name is another
// instruction (HMMA.16816.F32.BF16 is not the FP16 HMMA.16816.F32; QMMA.SF...E8 is not the
// unscaled QMMA.16832...), whereas hints (LTC128B, cache policies) may be added freely.
bool ChangesSemantics(absl::string_view modifier) {
  static const auto* const kSemantic = new absl::flat_hash_set<absl::string_view>{
      "SF",   "SP",   "F16", "BF16",  "F32",   "TF32", "F64", "E4M3", "E5M2", "E3M2",
      "E2M3", "E2M1", "E8",  "UE4M3", "UE8M0", "S8",   "U8",  "S4",   "U4"};
  return kSemantic->contains(modifier);
}

}  // namespace

int64_t CountSassForm(const std::map<std::string, int64_t>& census, absl::string_view form) {
  if (form.empty()) return 0;
  std::vector<absl::string_view> want = absl::StrSplit(form, '.');
  int64_t total = 0;
  for (const auto& [opcode, count] : census) {
    std::vector<absl::string_view> have = absl::StrSplit(opcode, '.');
    if (have.empty() || have[0] != want[0]) continue;
    size_t j = 1;
    bool other_instruction = false;
    for (size_t i = 1; i < have.size() && !other_instruction; ++i) {
      if (j < want.size() && have[i] == want[j])
        ++j;
      else
        other_instruction = ChangesSemantics(have[i]);
    }
    if (j == want.size() && !other_instruction) total += count;
  }
  return total;
}

ToolchainDiagnostics FilterNvccLog(absl::string_view log, absl::string_view source_path) {
  constexpr size_t kMaxShownBytes = 400;
  ToolchainDiagnostics out;
  const std::string marker = absl::StrCat(source_path, "(");
  const std::string shown_name(fs::path(std::string(source_path)).filename().string());
  for (absl::string_view line : absl::StrSplit(log, '\n')) {
    if (absl::StripAsciiWhitespace(line).empty()) continue;
    int n = 0;
    absl::string_view rest = line;
    const bool about_source = absl::ConsumePrefix(&rest, marker) && [&] {
      const size_t close = rest.find("): ");
      if (close == absl::string_view::npos || !absl::SimpleAtoi(rest.substr(0, close), &n))
        return false;
      rest.remove_prefix(close);
      return n > 0;
    }();
    // ptxas reads only the PTX generated from that source: its errors are about it too.
    const absl::string_view stripped = absl::StripLeadingAsciiWhitespace(line);
    if (!about_source && absl::StartsWith(stripped, "ptxas") &&
        (absl::StrContains(stripped, "error") || absl::StrContains(stripped, "fatal"))) {
      std::string text(stripped.substr(0, kMaxShownBytes));
      absl::StrReplaceAll(
          {{absl::StrCat(fs::path(std::string(source_path)).parent_path().string(), "/"), ""}},
          &text);
      for (char& c : text)
        if (static_cast<unsigned char>(c) < 0x20 || static_cast<unsigned char>(c) > 0x7e) c = '?';
      out.errors.push_back({0, std::move(text)});
      continue;
    }
    if (!about_source) {
      ++out.withheld_lines;
      continue;
    }
    std::string text = absl::StrCat(shown_name, "(", n, rest.substr(0, kMaxShownBytes));
    // nvcc quotes the generated source, which is printable ASCII; anything else is not shown.
    for (char& c : text)
      if (static_cast<unsigned char>(c) < 0x20 || static_cast<unsigned char>(c) > 0x7e) c = '?';
    out.errors.push_back({n, std::move(text)});
  }
  return out;
}

}  // namespace cake::compiler
