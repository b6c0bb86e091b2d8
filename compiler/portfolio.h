// Portfolios: several schedules of one kernel signature, each verified and compiled under its
// shape guard (extra facts on the kernel's scalars), then a fallback verified for every shape
// the kernel declares; compiled together they form a dispatcher manifest. Pure except
// CompilePortfolio, which reads the member files and runs the toolchain through Compile.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "cake/ir.pb.h"
#include "cake/portfolio.pb.h"
#include "cake/report.pb.h"
#include "compiler.h"
#include "targets.h"

namespace cake::compiler {

using ScalarValues = std::map<std::string, int64_t>;

// `module` with `guard` added to its kernels' scalar facts: ranges intersected, divisibility
// combined (least common multiple). InvalidArgument naming the scalar when the guard names a
// scalar no kernel declares, states a multiple_of outside [0, kMaxGuardMultiple], or leaves a
// range that admits no value.
absl::StatusOr<ir::Module> ApplyGuard(const ir::Module& module, const portfolio::ShapeGuard& guard);

// The facts a kernel's scalars carry, as a guard over every scalar (what a manifest entry records).
portfolio::ShapeGuard DeclaredFacts(const ir::Kernel& kernel);

// True when every fact of `guard` holds for `scalars`; a scalar the guard names but `scalars`
// lacks fails it.
bool GuardAdmits(const portfolio::ShapeGuard& guard, const ScalarValues& scalars);

// The entry that runs `scalars`: the first whose guard admits them. NotFound when none does
// (the shape breaks the kernel's declared facts, which the fallback's guard restates).
absl::StatusOr<int> Dispatch(const portfolio::DispatcherManifest& manifest,
                             const ScalarValues& scalars);

// Structure only: 1..kMaxPortfolioMembers members with distinct non-empty names, a fallback
// with a schedule and no guard, each member's schedule given once (a file named relative to the
// portfolio file, or its text).
absl::Status CheckPortfolio(const portfolio::Portfolio& p);

// A member's name in messages, manifests and row names; an unnamed fallback is "fallback".
std::string MemberName(const portfolio::Member& m);

// CheckPortfolio, and every member carries its schedule as schedule_text (what the daemon
// accepts in a proposal: it never reads a file an agent names).
absl::Status CheckSelfContained(const portfolio::Portfolio& p);

// The portfolio's identity (a candidate's schedule_hash): SHA-256 over its name and, in dispatch
// order, each member's name, canonical schedule hash and guard facts (in any order they are
// listed). Needs a self-contained portfolio whose schedules parse.
absl::StatusOr<std::string> PortfolioHash(const portfolio::Portfolio& p);

// `p` with every schedule_file read (relative to `base_dir`) into schedule_text: the portfolio
// as one self-contained message. InvalidArgument when the schedules come to more than
// kMaxScheduleTextBytes together; NotFound for an unreadable file.
absl::StatusOr<portfolio::Portfolio> InlineMemberFiles(const portfolio::Portfolio& p,
                                                       const std::filesystem::path& base_dir);

// Parses a portfolio in protobuf text format (size- and depth-limited like schedules);
// InvalidArgument prefixed with `file` when malformed.
absl::StatusOr<portfolio::Portfolio> ParsePortfolioText(absl::string_view text,
                                                        absl::string_view file);
absl::StatusOr<portfolio::Portfolio> ParsePortfolioFile(const std::string& path);

struct PortfolioMemberResult {
  std::string name;
  std::string file;
  report::AnalysisReport analysis;                 // of the guarded schedule
  std::optional<report::LoweringReceipt> receipt;  // set when it verified and compiled
  std::string error;                               // why it is not in the manifest, if it is not
};

struct PortfolioResult {
  portfolio::DispatcherManifest manifest;      // entries of the members that compiled, in order
  std::vector<PortfolioMemberResult> members;  // the guarded members, then the fallback
  bool complete = false;  // every member and the fallback compiled (PASS), one signature
};

// Reads a dispatcher manifest (the JSON `cakec portfolio` prints) the way a runtime loads it:
// 1..kMaxPortfolioMembers + 1 entries, each with a schedule hash, a cubin hash and a launch, and
// every entry's cubin (receipt.artifact_dir/kernel.cubin) present with the hash the manifest
// states. InvalidArgument naming the entry otherwise; NotFound for an unreadable file.
absl::StatusOr<portfolio::DispatcherManifest> LoadManifest(const std::string& path);

// Checks the portfolio, then verifies and compiles every member under its guard and the fallback
// unguarded for `target`. A member that fails stays out of the manifest with its reason; the
// manifest is complete only when none failed. InvalidArgument for a malformed portfolio or an
// unreadable member file; FailedPrecondition when the toolchain is missing.
absl::StatusOr<PortfolioResult> CompilePortfolio(const portfolio::Portfolio& p,
                                                 const std::filesystem::path& base_dir,
                                                 const TargetInfo& target,
                                                 const CompileOptions& options = {});

}  // namespace cake::compiler
