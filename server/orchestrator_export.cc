// Orchestrator::Export: gathers what the ledger holds about a contract's incumbent and hands it
// to the exporter (exporter/export_bundle.h), which alone decides the folder's contents.
#include "absl/strings/str_cat.h"
#include "base/digest.h"
#include "base/files.h"
#include "base/status_macros.h"
#include "eligibility.h"
#include "exporter/export_bundle.h"
#include "orchestrator.h"

namespace cake::server {

absl::StatusOr<v1::ExportReply> Orchestrator::Export(const v1::ExportRequest& req) {
  CAKE_ASSIGN_OR_RETURN(contract::Contract c, ledger_->contracts().Get(req.contract_id()));
  CAKE_ASSIGN_OR_RETURN(std::string incumbent, ledger_->contracts().Incumbent(req.contract_id()));
  if (incumbent.empty())
    return absl::FailedPreconditionError(
        absl::StrCat("contract ", req.contract_id(),
                     " has no incumbent yet: nothing was validated on a device to export"));
  exporter::ExportInputs in;
  in.contract_id = req.contract_id();
  in.contract = c;
  CAKE_ASSIGN_OR_RETURN(in.incumbent, ledger_->candidates().Get(incumbent));
  in.eligible =
      DeriveEligibility(c, {in.incumbent.evidence().begin(), in.incumbent.evidence().end()})
          .eligible();
  CAKE_ASSIGN_OR_RETURN(std::vector<portfolio::DispatcherManifest> manifests,
                        ledger_->evidence().Manifests(incumbent));
  for (portfolio::DispatcherManifest& m : manifests) in.manifests[m.target()] = std::move(m);
  if (in.manifests.empty())
    for (const std::string& t : {c.compile_target(), c.execution_target()}) {
      auto r = ledger_->evidence().GetReceipt(incumbent, t);
      if (r.ok()) {
        in.receipts[t] = *std::move(r);
      } else if (!absl::IsNotFound(r.status())) {
        return r.status();
      }
    }
  // The ledger's latest valid timing of the incumbent: its own record as a challenger, else
  // the newest run in which it was the incumbent arm.
  for (auto m = in.incumbent.measurements().rbegin(); m != in.incumbent.measurements().rend(); ++m)
    if (!m->invalid() && m->candidate() == incumbent) {
      in.timing = exporter::TimingOf(*m, incumbent);
      break;
    }
  if (!in.timing.has_value()) {
    CAKE_ASSIGN_OR_RETURN(ledger::CandidateStore::CandidatePage page,
                          ledger_->candidates().List(req.contract_id(), 256));
    for (const evidence::Candidate& other : page.candidates) {  // newest first
      CAKE_ASSIGN_OR_RETURN(evidence::Candidate full, ledger_->candidates().Get(other.id()));
      for (auto m = full.measurements().rbegin(); m != full.measurements().rend(); ++m)
        if (!m->invalid() && m->incumbent() == incumbent) {
          in.timing = exporter::TimingOf(*m, incumbent);
          break;
        }
      if (in.timing.has_value()) break;
    }
  }
  in.targets.assign(req.targets().begin(), req.targets().end());
  in.allow_unqualified = req.allow_unqualified();
  in.daemon_version = CAKE_VERSION;
  CAKE_ASSIGN_OR_RETURN(
      exporter::ExportBundle bundle,
      exporter::BuildExport(in, [](const std::string& path) -> absl::StatusOr<std::string> {
        if (!std::filesystem::exists(path))
          return absl::DataLossError(absl::StrCat("artifact file ", path, " is gone"));
        return base::ReadFileBytes(path);
      }));
  v1::ExportReply reply;
  reply.set_incumbent(incumbent);
  for (auto& [path, bytes] : bundle.files) {
    v1::ExportFile* f = reply.add_files();
    f->set_path(path);
    f->set_content(std::move(bytes));
  }
  for (const v1::ExportFile& f : reply.files())
    if (f.path() == "manifest.json") reply.set_manifest_sha256(base::Sha256Hex(f.content()));
  for (std::string& n : bundle.notes) reply.add_notes(std::move(n));
  return reply;
}

}  // namespace cake::server
