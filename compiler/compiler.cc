#include "compiler.h"
#include "base/digest.h"

#include <filesystem>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "admission.h"
#include "artifact_store.h"
#include "base/status_macros.h"
#include "canonical.h"
#include "emission_audit.h"

namespace cake::compiler {
namespace fs = std::filesystem;
namespace {

// The op-id whose line range is the innermost one containing `line`.
std::string OpForLine(const std::vector<report::SourceRange>& ranges, int line) {
  std::string best;
  int best_span = 1 << 30;
  for (const report::SourceRange& r : ranges)
    if (r.first_line() <= line && line <= r.last_line() &&
        r.last_line() - r.first_line() < best_span) {
      best = r.op_id();
      best_span = r.last_line() - r.first_line();
    }
  return best;
}

void AddForm(report::LoweringReceipt* receipt, const std::string& op_id, const InstrDescriptor& d,
             ir::Arch arch, const std::map<std::string, int64_t>& census) {
  report::InstructionForm* f = receipt->add_selected_forms();
  f->set_op_id(op_id);
  f->set_ptx(std::string(d.ptx_form));
  f->set_expected_sass(std::string(d.SassFor(arch)));
  f->set_observed_count(CountSassForm(census, d.SassFor(arch)));
}

}  // namespace

EmitResult Emit(const ParsedModule& parsed, const TargetInfo& target,
                const AnalyzeOptions& options) {
  EmitResult out;
  std::unique_ptr<Analysis> a = Analyze(parsed, target, options);
  out.analysis = a->report;
  if (a->report.verdict() != report::VERIFIED) return out;
  const Lowering* lowering = MatchLowering(parsed.module, *a->context.graphs[0]);
  if (lowering == nullptr) return out;  // analysis reported the unsupported lowering
  auto lowered =
      lowering->Lower(parsed.module, *a->context.graphs[0], target, a->report.schedule_hash());
  if (!lowered.ok()) return out;
  out.source = *std::move(lowered);
  out.lowering = lowering;
  return out;
}

absl::StatusOr<CompileResult> Compile(const ParsedModule& parsed, const TargetInfo& target,
                                      const CompileOptions& options) {
  CAKE_ASSIGN_OR_RETURN(Toolchain tc, DetectToolchain());
  AnalyzeOptions aopts;
  aopts.toolchain_ptx = tc.ptx;
  aopts.unchecked_passes = options.unchecked_passes;
  EmitResult emitted = Emit(parsed, target, aopts);
  CompileResult result;
  result.analysis = emitted.analysis;
  if (!emitted.source) return result;
  const LoweredKernel& src = *emitted.source;
  const Lowering& lowering = *emitted.lowering;
  // Nothing reaches nvcc that a schedule's names could have shaped (emission_audit.h).
  if (const std::vector<std::string> problems =
          AuditEmittedSource(parsed, target, aopts, emitted.analysis, src);
      !problems.empty())
    return absl::InternalError(
        absl::StrCat("lowering ", lowering.name(),
                     " emitted source that fails its audit: ", absl::StrJoin(problems, "; ")));

  const std::vector<std::string> flags = CompileFlags(target);
  const std::string source_sha = base::Sha256Hex(src.text);
  const std::string key = base::Sha256Hex(absl::StrCat(
      "cake-artifact-v1\n", result.analysis.schedule_hash(), "\n", std::string(target.name), "\n",
      parsed.module.target().ptx_version(), "\n", lowering.version(), "\n", tc.nvcc, "\n",
      tc.nvcc_version, "\n", tc.ptxas_version, "\n", absl::StrJoin(flags, " "), "\n", source_sha));
  ArtifactStore store(options.store_root.empty() ? DefaultStoreRoot() : options.store_root);

  if (auto hit = store.Lookup(key); hit.ok()) {
    report::LoweringReceipt receipt = *hit;
    receipt.set_cache(report::LoweringReceipt::HIT);
    // A receipt stored before receipts carried their launch gets it from its lowering.
    if (!EnsureLaunchSpec(&receipt))
      return absl::DataLossError(absl::StrCat("stored receipt ", key, " has no launch"));
    receipt.set_artifact_dir(store.DirFor(key));
    result.receipt = receipt;
    return result;
  }

  report::LoweringReceipt& r = result.receipt.emplace();
  r.set_schedule_hash(result.analysis.schedule_hash());
  r.set_target(std::string(target.name));
  r.set_ptx_version_required(parsed.module.target().ptx_version());
  *r.mutable_toolchain() = tc.Identity();
  for (const std::string& f : flags) r.add_flags(f);
  r.set_lowering_version(lowering.version());
  r.set_lowering(lowering.name());
  *r.mutable_launch() = src.launch;
  r.set_artifact_key(key);
  r.set_cache(report::LoweringReceipt::MISS);
  r.set_source_sha256(source_sha);
  for (const report::SourceRange& range : src.op_lines) *r.add_op_source_map() = range;
  r.set_kernel_symbol(src.kernel_symbol);
  r.set_witness(std::string(target.witness));
  *r.mutable_verification_coverage() = result.analysis.passes();
  r.set_threads_per_cta(result.analysis.resources().threads_per_cta());

  const std::string scratch = store.ScratchDir(key);
  CAKE_ASSIGN_OR_RETURN(NvccOutput nv, RunNvcc(tc, target, src.text, scratch));
  std::map<std::string, std::string> files = {{"kernel.cu", src.text}, {"build.log", nv.log}};
  if (!nv.ok) {
    // Map nvcc's errors about the generated source back to operations; the raw log (which may
    // quote any file the toolchain read) is kept for the operator only, never shown.
    r.set_outcome(report::LoweringReceipt::FAIL);
    const ToolchainDiagnostics shown =
        FilterNvccLog(nv.log, (fs::path(scratch) / "kernel.cu").string());
    for (const SourceError& e : shown.errors) {
      report::Diagnostic* d = r.add_failures();
      d->set_id(report::DIAG_TOOLCHAIN_ERROR);
      d->set_severity(report::ERROR);
      d->set_op_id(OpForLine(src.op_lines, e.line));
      d->set_message(e.text);
    }
    if (shown.withheld_lines > 0) {
      report::Diagnostic* d = r.add_failures();
      d->set_id(report::DIAG_TOOLCHAIN_ERROR);
      d->set_severity(report::WARNING);
      d->set_evidence(absl::StrCat(shown.withheld_lines, " lines of the toolchain's log withheld"));
      d->set_message(absl::StrCat(
          shown.withheld_lines,
          " other lines of its log are not shown (the operator finds the raw log in the "
          "artifact store under failed/",
          key, ")"));
    }
    const absl::Status kept = store.KeepFailedBuild(key, files, r);
    std::error_code ec;
    fs::remove_all(scratch, ec);
    // No error about the generated source (a full disk, a crashed or timed-out tool): the
    // machine failed, not the schedule; the job is retried, the schedule not judged.
    if (shown.errors.empty())
      return absl::UnavailableError(absl::StrCat(
          "nvcc failed without an error about the generated source (", shown.withheld_lines,
          " log lines withheld; the raw log is under failed/", key,
          " in the artifact store): the toolchain or the machine failed, not the schedule"));
    if (!kept.ok()) return kept;
    return result;  // failed builds are not cached: the toolchain may be fixed
  }
  files["kernel.cubin"] = nv.cubin;
  files["kernel.ptx"] = nv.ptx;
  r.set_cubin_sha256(base::Sha256Hex(nv.cubin));
  if (auto v = PtxFileVersion(nv.ptx)) r.set_ptx_version_emitted(v->ToString());
  r.set_ptx_target_emitted(PtxFileTarget(nv.ptx));
  if (auto usage = ParsePtxasReport(nv.log, src.kernel_symbol)) *r.mutable_resources() = *usage;
  r.mutable_resources()->set_shared_dynamic_bytes(src.dynamic_shared_bytes);

  CAKE_ASSIGN_OR_RETURN(std::string sass,
                        DumpSass(tc, (fs::path(scratch) / "kernel.cubin").string()));
  files["kernel.sass"] = sass;
  const auto census = SassCensus(sass);
  for (const auto& [opcode, count] : census) {
    report::SassOpcodeCount* c = r.add_sass_census();
    c->set_opcode(opcode);
    c->set_count(count);
  }
  for (const LoweredKernel::Form& form : src.forms) {
    const InstrDescriptor* d = FindInstruction(form.instruction);
    if (d == nullptr)
      return absl::InternalError(absl::StrCat("lowering ", lowering.name(),
                                              " names an unknown instruction ", form.instruction));
    AddForm(&r, form.op_id, *d, target.arch, census);
  }
  for (const SharedRegionPlan& region : src.shared_regions) {
    report::SharedRegion* s = r.add_shared_regions();
    s->set_name(region.name);
    s->set_offset_bytes(region.offset);
    s->set_bytes_per_stage(region.bytes_per_stage);
    s->set_stages(region.stages);
  }

  // A receipt fails when an intended form is missing from the SASS or a spill appears.
  for (const report::InstructionForm& f : r.selected_forms())
    if (f.observed_count() == 0) {
      report::Diagnostic* d = r.add_failures();
      d->set_id(report::DIAG_SASS_FORM_MISSING);
      d->set_severity(report::ERROR);
      d->set_op_id(f.op_id());
      d->set_condition(absl::StrCat(f.ptx(), " appears in SASS as ", f.expected_sass()));
      d->set_message(absl::StrCat("intended form ", f.expected_sass(), " not found in the cubin"));
    }
  const report::ResourceUsage& u = r.resources();
  if (u.spill_store_bytes() > 0 || u.spill_load_bytes() > 0 || u.local_memory_bytes() > 0) {
    report::Diagnostic* d = r.add_failures();
    d->set_id(report::DIAG_UNEXPECTED_SPILL);
    d->set_severity(report::ERROR);
    d->set_resource("registers");
    d->set_evidence(absl::StrCat(u.spill_store_bytes(), " B spill stores, ", u.spill_load_bytes(),
                                 " B spill loads, ", u.local_memory_bytes(), " B local memory"));
    d->set_message("unexpected spill to local memory");
  }
  r.set_outcome(r.failures().empty() ? report::LoweringReceipt::PASS
                                     : report::LoweringReceipt::FAIL);
  r.set_artifact_dir(store.DirFor(key));
  CAKE_RETURN_IF_ERROR(store.Commit(key, files, r));
  std::error_code ec;
  fs::remove_all(scratch, ec);
  return result;
}

}  // namespace cake::compiler
