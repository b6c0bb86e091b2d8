// A contract's incumbent as a folder that leaves the daemon: for each exported target the
// generated CUDA C++ and its cubin, the schedules, manifest.json (cake.exporter.Manifest), the
// launcher (launcher/: Plan -> Prepare -> Bind -> Run, a C face and a Python face), the launcher's
// spec of this operation generated from the manifest, and a CMakeLists.txt that builds them.
// Pure: the caller gathers the ledger's facts and gives a reader for artifact files; the same
// inputs give byte-identical files (no clock, no host name, no absolute path in them).
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "cake/contract.pb.h"
#include "cake/evidence.pb.h"
#include "cake/export.pb.h"
#include "cake/portfolio.pb.h"
#include "cake/report.pb.h"

namespace cake::exporter {

struct ExportInputs {
  std::string contract_id;
  contract::Contract contract;
  evidence::Candidate incumbent;  // with its schedule_text and latest evidence records
  bool eligible = false;          // derived eligibility: every required record passed
  // Per target the incumbent was compiled for: its receipt (one schedule) or its dispatcher
  // manifest (a portfolio).
  std::map<std::string, report::LoweringReceipt> receipts;
  std::map<std::string, portfolio::DispatcherManifest> manifests;
  // The ledger's latest valid timing of the incumbent, if any.
  std::optional<exporter::LedgerTiming> timing;
  std::vector<std::string> targets;  // asked for; empty = every qualified one
  bool allow_unqualified = false;
  std::string daemon_version;
};

struct ExportBundle {
  std::map<std::string, std::string> files;  // path in the folder -> bytes
  exporter::Manifest manifest;
  std::vector<std::string> notes;  // targets left out, and why
};

// Reads an artifact file by absolute path (the artifact store's).
using ArtifactReader = std::function<absl::StatusOr<std::string>(const std::string& path)>;

// FailedPrecondition for a target the incumbent has no receipt for, or one with no execution
// witness without allow_unqualified, or when no target is left; InvalidArgument for a target
// name no compiler target has; DataLoss when an artifact no longer hashes to its receipt.
absl::StatusOr<ExportBundle> BuildExport(const ExportInputs& in, const ArtifactReader& read);

// The launcher's OperationSpec of `m` as C++ (generated/cake_export_spec.cc).
std::string LauncherSpecSource(const exporter::Manifest& m);

// The measurement's rows of `candidate` (either arm) as a LedgerTiming.
exporter::LedgerTiming TimingOf(const evidence::Measurement& m, const std::string& candidate);

}  // namespace cake::exporter
