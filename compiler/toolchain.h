// The pinned NVIDIA toolchain: discovery (nvcc, ptxas, cuobjdump), invocation with explicit
// -gencode flags, the ptxas resource report, and a census of the SASS actually produced.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "cake/report.pb.h"
#include "targets.h"

namespace cake::compiler {

struct Toolchain {
  std::string nvcc;
  std::string nvcc_version;  // "release 13.0, V13.0.88"
  std::string ptxas_version;
  int cuda_major = 0, cuda_minor = 0;
  std::optional<PtxVersion> ptx;  // the PTX ISA version this nvcc emits
  std::string cuobjdump;
  std::string cuobjdump_version;
  report::ToolchainIdentity Identity() const;
};

// Finds nvcc ($CAKE_NVCC, the build's configured path, then PATH) and cuobjdump ($CAKE_CUOBJDUMP,
// the toolkit, the project's .toolchain/bin, then PATH). FailedPrecondition with one line naming
// what is missing and how to install it.
// The versions are probed once per process for each identity of the three binaries (path,
// inode, size, modification time), so repeated calls start no subprocess until a binary changes.
absl::StatusOr<Toolchain> DetectToolchain();

// Flags for one target, in a fixed order (part of the artifact identity).
std::vector<std::string> CompileFlags(const TargetInfo& target);

struct NvccOutput {
  bool ok = false;
  std::string log;    // nvcc + ptxas stdout/stderr, verbatim
  std::string cubin;  // bytes, when ok
  std::string ptx;    // the intermediate PTX, when ok
};

// Compiles `source` (written to workdir/kernel.cu) to a cubin for `target`.
absl::StatusOr<NvccOutput> RunNvcc(const Toolchain& tc, const TargetInfo& target,
                                   const std::string& source, const std::string& workdir);

// Parses "ptxas info" lines for `kernel`: registers, barriers, smem, stack, spills, lmem.
// nullopt when the report has no entry for the kernel.
std::optional<report::ResourceUsage> ParsePtxasReport(absl::string_view log,
                                                      absl::string_view kernel);

// ".version X.Y" and ".target NAME" of a PTX file.
std::optional<PtxVersion> PtxFileVersion(absl::string_view ptx);
std::string PtxFileTarget(absl::string_view ptx);

// Disassembles a cubin with cuobjdump -sass.
absl::StatusOr<std::string> DumpSass(const Toolchain& tc, const std::string& cubin_path);

// Opcode (with modifiers, predicate stripped) -> occurrences.
std::map<std::string, int64_t> SassCensus(absl::string_view sass);

// Occurrences of a SASS form: an opcode whose first token equals the form's and which carries
// every further modifier of the form, in order, adding none that changes what it computes
// ("LDGSTS.E.BYPASS.128" matches "LDGSTS.E.BYPASS.LTC128B.128"; "HMMA.16816.F32" does not match
// "HMMA.16816.F32.BF16", nor "QMMA.16832.F32.E4M3.E4M3" the block-scaled
// "QMMA.SF.16832.F32.E4M3.E4M3.E8").
int64_t CountSassForm(const std::map<std::string, int64_t>& census, absl::string_view form);

// What of a toolchain log may be shown to whoever proposed the schedule: only the lines about
// the generated source itself, which begin with its path (as nvcc was given it) and a line
// number, shown as "kernel.cu(LINE): ...", and ptxas's errors (ptxas reads only the PTX made from
// that source; line 0, the work folder's path dropped); every other line (an included file's, a
// context line, the toolchain's own chatter) is withheld and only counted. The raw log stays with
// the operator (ArtifactStore::KeepFailedBuild).
struct SourceError {
  int line = 0;
  std::string text;
};
struct ToolchainDiagnostics {
  std::vector<SourceError> errors;
  int withheld_lines = 0;  // non-empty lines not shown
};
ToolchainDiagnostics FilterNvccLog(absl::string_view log, absl::string_view source_path);

}  // namespace cake::compiler
