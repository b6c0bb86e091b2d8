#include "exporter/export_bundle.h"

#include <algorithm>
#include <set>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "base/digest.h"
#include "base/status_macros.h"
#include "compiler/artifact_store.h"
#include "compiler/parse.h"
#include "compiler/passes.h"
#include "compiler/portfolio.h"
#include "compiler/targets.h"
#include "exporter/launcher_files.h"
#include "google/protobuf/io/coded_stream.h"
#include "google/protobuf/io/zero_copy_stream_impl_lite.h"
#include "google/protobuf/text_format.h"

namespace cake::exporter {
namespace {

constexpr int kFormatVersion = 1;

std::string DeterministicBytes(const google::protobuf::Message& m) {
  std::string out;
  google::protobuf::io::StringOutputStream stream(&out);
  google::protobuf::io::CodedOutputStream coded(&stream);
  coded.SetSerializationDeterministic(true);
  m.SerializeToCodedStream(&coded);
  coded.Trim();
  return out;
}

// A name usable as a file name in the folder: the schedule's own when it is plain.
std::string FileName(const std::string& name, size_t index) {
  const bool plain = !name.empty() && name.size() <= 64 && name != "." && name != ".." &&
                     name.find_first_not_of(
                         "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                         "0123456789_.-") == std::string::npos;
  return plain ? name : absl::StrCat("entry", index);
}

absl::StatusOr<int> ElementBytes(ir::DType t, const std::string& tensor) {
  const int bits = compiler::DTypeBits(t);
  if (bits > 0 && bits % 8 == 0) return bits / 8;
  return absl::FailedPreconditionError(absl::StrCat(
      "tensor '", tensor, "' is ", ir::DType_Name(t),
      ": the launcher binds whole-byte elements only (packed FP4/FP6 is not exported yet)"));
}

std::string WorkspaceWords(const report::LaunchSpec& launch) {
  std::vector<std::string> parts;
  for (const report::LaunchSpec::Arg& a : launch.args())
    if (a.kind() == report::LaunchSpec::Arg::WORKSPACE)
      parts.push_back(absl::StrCat("'", a.name(), "': ", a.bytes_per_element(), " * ", a.rows(),
                                   " * ", a.cols(), " + ", a.bytes_per_tile(), " * ceil(", a.rows(),
                                   " / ", a.box_rows(), ") * ceil(", a.cols(), " / ", a.box_cols(),
                                   ") bytes, rounded up to 4"));
  if (parts.empty()) return "0";
  return absl::StrCat(absl::StrJoin(parts, "; then "),
                      parts.size() > 1 ? " (each at a multiple of 256 bytes)" : "");
}

// One entry of the export, per target: what the receipt (or the dispatcher manifest) says.
struct TargetEntry {
  std::string name;
  portfolio::ShapeGuard guard;
  report::LoweringReceipt receipt;
  std::string schedule_text;
};

absl::StatusOr<std::vector<TargetEntry>> EntriesOn(
    const ExportInputs& in, const std::string& target, const ir::Module& representative,
    const std::map<std::string, std::string>& member_texts) {
  std::vector<TargetEntry> out;
  if (auto m = in.manifests.find(target); m != in.manifests.end()) {
    for (const portfolio::DispatcherManifest::Entry& e : m->second.entries()) {
      auto text = member_texts.find(e.name());
      out.push_back(
          {e.name(), e.guard(), e.receipt(), text == member_texts.end() ? "" : text->second});
    }
    return out;
  }
  auto r = in.receipts.find(target);
  if (r == in.receipts.end())
    return absl::FailedPreconditionError(
        absl::StrCat("incumbent ", in.incumbent.id(), " has no receipt for ", target));
  out.push_back({representative.kernels(0).name(),
                 compiler::DeclaredFacts(representative.kernels(0)), r->second,
                 in.incumbent.schedule_text()});
  return out;
}

std::string ExecutionWitness(const ExportInputs& in) {
  std::string device;
  int passed = 0;
  for (const evidence::EvidenceRecord& r : in.incumbent.evidence())
    if (r.status() == evidence::PASSED) {
      ++passed;
      if (device.empty()) device = r.device();
    }
  return absl::StrCat("validated on ", device.empty() ? "an unnamed device" : device, ": ", passed,
                      " evidence records passed, every required one (",
                      in.contract.execution_target(), ")");
}

}  // namespace

LedgerTiming TimingOf(const evidence::Measurement& m, const std::string& candidate) {
  LedgerTiming t;
  t.set_measurement_of(m.candidate());
  t.set_arm(m.candidate() == candidate ? "challenger" : "incumbent");
  t.set_run(m.run());
  t.set_device(m.device());
  for (const evidence::RowTiming& r : m.rows()) {
    std::vector<double> us(
        m.candidate() == candidate ? r.challenger_us().begin() : r.incumbent_us().begin(),
        m.candidate() == candidate ? r.challenger_us().end() : r.incumbent_us().end());
    if (us.empty()) continue;
    std::sort(us.begin(), us.end());
    const size_t n = us.size();
    RowTime* row = t.add_rows();
    row->set_row(r.row());
    row->set_mode(r.mode());
    row->set_cache(r.cache());
    row->set_median_us(n % 2 == 1 ? us[n / 2] : (us[n / 2 - 1] + us[n / 2]) / 2);
    row->set_samples(static_cast<int32_t>(n));
  }
  return t;
}

absl::StatusOr<ExportBundle> BuildExport(const ExportInputs& in, const ArtifactReader& read) {
  ExportBundle out;
  Manifest& m = out.manifest;
  // The schedules: one, or a portfolio's members (the fallback last).
  std::map<std::string, std::string> member_texts;
  std::string representative_text = in.incumbent.schedule_text();
  if (!in.manifests.empty()) {
    CAKE_ASSIGN_OR_RETURN(portfolio::Portfolio p,
                          compiler::ParsePortfolioText(in.incumbent.schedule_text(), "incumbent"));
    for (const portfolio::Member& member : p.members())
      member_texts[compiler::MemberName(member)] = member.schedule_text();
    member_texts[compiler::MemberName(p.fallback())] = p.fallback().schedule_text();
    representative_text = p.fallback().schedule_text();
  }
  CAKE_ASSIGN_OR_RETURN(compiler::ParsedModule parsed,
                        compiler::ParseModuleText(representative_text, "incumbent"));
  if (parsed.module.kernels_size() != 1)
    return absl::FailedPreconditionError("the launcher exports single-kernel schedules only");
  const ir::Kernel& kernel = parsed.module.kernels(0);

  // Which targets: asked ones must have been compiled; unqualified ones need the flag.
  std::set<std::string> compiled;
  for (const auto& [t, r] : in.receipts) compiled.insert(t);
  for (const auto& [t, r] : in.manifests) compiled.insert(t);
  std::vector<std::string> targets = in.targets;
  const bool defaulted = targets.empty();
  if (defaulted) targets.assign(compiled.begin(), compiled.end());
  // The one qualification rule: an execution witness exists on the target.
  const auto qualifies = [&](const std::string& t) {
    return in.eligible && t == in.contract.execution_target();
  };
  std::vector<std::string> chosen;
  for (const std::string& t : targets) {
    if (auto info = compiler::TargetByName(t); !info.ok())
      return absl::InvalidArgumentError(absl::StrCat("unknown target '", t, "'"));
    if (!compiled.count(t))
      return absl::FailedPreconditionError(
          absl::StrCat("incumbent ", in.incumbent.id(), " was not compiled for ", t,
                       "; it has receipts for ", absl::StrJoin(compiled, ", ")));
    if (!qualifies(t) && !in.allow_unqualified) {
      const std::string why =
          absl::StrCat(t, " has no execution witness (",
                       in.eligible ? "compiled and receipted only"
                                   : "the incumbent's required evidence is not all there",
                       ")");
      if (!defaulted)
        return absl::FailedPreconditionError(
            absl::StrCat(why, "; export it with --allow-unqualified to ship it marked so"));
      out.notes.push_back(absl::StrCat("left out ", why, "; --allow-unqualified ships it"));
      continue;
    }
    chosen.push_back(t);
  }
  if (chosen.empty())
    return absl::FailedPreconditionError(absl::StrCat(
        "no target of incumbent ", in.incumbent.id(),
        " has an execution witness; --allow-unqualified exports the compiled-only cubins"));
  std::sort(chosen.begin(), chosen.end());

  m.set_format_version(kFormatVersion);
  m.set_daemon_version(in.daemon_version);
  m.set_contract_id(in.contract_id);
  m.set_contract_sha256(base::Sha256Hex(DeterministicBytes(in.contract)));
  m.set_operation(in.contract.operation());
  m.set_incumbent(in.incumbent.id());
  m.set_schedule_hash(in.incumbent.schedule_hash());
  m.set_toolchain(in.contract.toolchain());
  for (const ir::ScalarParam& s : kernel.scalars()) m.add_scalars(s.name());
  for (const ir::TensorParam& t : kernel.tensors()) {
    ExportedTensor* e = m.add_tensors();
    e->set_name(t.name());
    e->set_dtype(absl::AsciiStrToLower(ir::DType_Name(t.dtype())));
    CAKE_ASSIGN_OR_RETURN(int bytes, ElementBytes(t.dtype(), t.name()));
    e->set_element_bytes(bytes);
    for (const ir::Dim& d : t.shape().dims())
      e->add_dims(d.symbol().empty() ? absl::StrCat(d.size()) : d.symbol());
    e->set_alignment_bytes(std::max(t.alignment_bytes(), 1));
    e->set_written(t.access() != ir::READ_ONLY);
  }
  m.set_dispatch_rule(
      "first entry whose guard admits the shape, in order; the last entry (the fallback, the "
      "kernel's declared facts alone) otherwise; a shape no entry admits is refused naming the "
      "fallback's failed fact");
  m.set_launcher(
      "launcher/cake_launcher.h: MakePlan(shape) -> Launcher::Prepare(device) -> Bind(live "
      "shape, tensors, workspace, stream) -> Run(); C face launcher/cake_export_c.h, Python face "
      "launcher/cake_export.py");

  // Entries come from the first target; every other target must list the same entries.
  std::map<std::string, ExportedEntry*> entry_by_name;
  for (const std::string& t : chosen) {
    CAKE_ASSIGN_OR_RETURN(std::vector<TargetEntry> entries,
                          EntriesOn(in, t, parsed.module, member_texts));
    if (t != chosen.front() && entries.size() != static_cast<size_t>(m.entries_size()))
      return absl::FailedPreconditionError(
          absl::StrCat("targets ", chosen.front(), " and ", t, " have different entries"));
    for (size_t i = 0; i < entries.size(); ++i) {
      const TargetEntry& te = entries[i];
      const report::LoweringReceipt& r = te.receipt;
      if (r.outcome() != report::LoweringReceipt::PASS || r.launch().args_size() == 0)
        return absl::FailedPreconditionError(
            absl::StrCat("entry '", te.name, "' has no passing receipt with a launch on ", t));
      const std::string file = FileName(te.name, i);
      ExportedEntry* e = nullptr;
      if (t == chosen.front()) {
        e = m.add_entries();
        e->set_name(te.name);
        e->set_schedule_hash(r.schedule_hash());
        e->set_kernel_symbol(r.kernel_symbol());
        *e->mutable_guard() = te.guard;
        *e->mutable_launch() = r.launch();
        e->set_workspace_bytes(WorkspaceWords(r.launch()));
        e->set_schedule_path(absl::StrCat("schedules/", file, ".textproto"));
        out.files[e->schedule_path()] = te.schedule_text;
        entry_by_name[te.name] = e;
      } else {
        auto it = entry_by_name.find(te.name);
        if (it == entry_by_name.end())
          return absl::FailedPreconditionError(
              absl::StrCat("entry '", te.name, "' of ", t, " is not on ", chosen.front()));
        e = it->second;
        // One launcher spec serves every target: the launches must agree.
        if (DeterministicBytes(r.launch()) != DeterministicBytes(e->launch()) ||
            r.kernel_symbol() != e->kernel_symbol())
          return absl::FailedPreconditionError(absl::StrCat(
              "entry '", te.name, "' launches differently on ", chosen.front(), " and ", t));
      }
      CAKE_ASSIGN_OR_RETURN(std::string cubin, read(r.artifact_dir() + "/kernel.cubin"));
      CAKE_ASSIGN_OR_RETURN(std::string source, read(r.artifact_dir() + "/kernel.cu"));
      if (base::Sha256Hex(cubin) != r.cubin_sha256() ||
          (!r.source_sha256().empty() && base::Sha256Hex(source) != r.source_sha256()))
        return absl::DataLossError(absl::StrCat("artifact ", r.artifact_key(), " of entry '",
                                                te.name, "' no longer hashes to its receipt"));
      ExportedCubin* c = e->add_cubins();
      c->set_target(t);
      c->set_path(absl::StrCat("cubins/", t, "/", file, ".cubin"));
      c->set_sha256(r.cubin_sha256());
      c->set_artifact_key(r.artifact_key());
      c->set_source_path(absl::StrCat("sources/", t, "/", file, ".cu"));
      c->set_source_sha256(base::Sha256Hex(source));
      c->set_registers(r.resources().registers());
      c->set_spill_bytes(r.resources().spill_store_bytes() + r.resources().spill_load_bytes());
      c->set_static_shared_bytes(r.resources().shared_static_bytes());
      c->set_witness(r.witness());
      out.files[c->path()] = std::move(cubin);
      out.files[c->source_path()] = std::move(source);
    }
    ExportedTarget* et = m.add_targets();
    et->set_target(t);
    const bool qualified = qualifies(t);
    et->set_qualified(qualified);
    Witnesses* w = et->mutable_witnesses();
    w->set_static_analysis("verified: every entry's analysis passed before it was lowered");
    w->set_sass(absl::StrCat("admitted: every entry's receipt on ", t,
                             " passed (registers, spills, shared memory, SASS census)"));
    const bool sm90 = absl::StartsWith(t, "sm_90");
    const bool sm12x = absl::StartsWith(t, "sm_12");
    w->set_sm90_execution(qualified && sm90 ? ExecutionWitness(in) : "none");
    w->set_sm12x_execution(qualified && sm12x ? ExecutionWitness(in) : "none");
    et->set_qualification(qualified ? absl::StrCat("qualified: ", ExecutionWitness(in))
                                    : absl::StrCat("unqualified: no execution witness on ", t,
                                                   " (exported with --allow-unqualified)"));
    if (!qualified) m.set_unqualified(true);
  }
  if (in.timing.has_value()) *m.mutable_ledger_timing() = *in.timing;

  out.files["manifest.json"] = compiler::ToJson(m);
  out.files["generated/cake_export_spec.cc"] = LauncherSpecSource(m);
  for (const auto& [path, bytes] : LauncherFiles()) out.files[path] = bytes;
  return out;
}

namespace {

std::string Quoted(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    if (static_cast<unsigned char>(c) < 0x20 || c == '?') {
      absl::StrAppend(&out, "\\", absl::Dec(static_cast<unsigned char>(c) >> 6),
                      absl::Dec((static_cast<unsigned char>(c) >> 3) & 7),
                      absl::Dec(static_cast<unsigned char>(c) & 7));
      continue;
    }
    out += c;
  }
  return out + "\"";
}

std::string ArgKindName(report::LaunchSpec::Arg::Kind k) {
  switch (k) {
    case report::LaunchSpec::Arg::SCALAR:
      return "ArgKind::kScalar";
    case report::LaunchSpec::Arg::TENSOR_MAP:
      return "ArgKind::kTensorMap";
    case report::LaunchSpec::Arg::WORKSPACE:
      return "ArgKind::kWorkspace";
    default:
      return "ArgKind::kTensor";
  }
}

std::string Grid(const report::LaunchSpec::GridDim& g) {
  return absl::StrCat("{", Quoted(g.extent()), ", ", std::max(g.divisor(), 1), ", ", g.count(),
                      "}");
}

}  // namespace

std::string LauncherSpecSource(const Manifest& m) {
  std::string s = absl::StrCat(
      "// Generated by caked from manifest.json (contract ", m.contract_id(), ", incumbent ",
      m.incumbent(),
      "). Do not edit.\n#include \"cake_launcher.h\"\n\nnamespace cake_launcher {\n\n"
      "const OperationSpec& ExportedOperation() {\n  static const OperationSpec op = [] {\n"
      "    OperationSpec op;\n    op.operation = ",
      Quoted(m.operation()), ";\n    op.contract_id = ", Quoted(m.contract_id()), ";\n");
  for (const std::string& scalar : m.scalars())
    absl::StrAppend(&s, "    op.scalars.push_back(", Quoted(scalar), ");\n");
  for (const ExportedTensor& t : m.tensors()) {
    std::vector<std::string> dims;
    for (const std::string& d : t.dims())
      dims.push_back(!d.empty() && absl::ascii_isdigit(d[0])
                         ? absl::StrCat("{\"\", ", d, "}")
                         : absl::StrCat("{", Quoted(d), ", 0}"));
    absl::StrAppend(&s, "    op.tensors.push_back({", Quoted(t.name()), ", ", Quoted(t.dtype()),
                    ", ", t.element_bytes(), ", {", absl::StrJoin(dims, ", "), "}, ",
                    t.alignment_bytes(), ", ", t.written() ? "true" : "false", "});\n");
  }
  for (const ExportedEntry& e : m.entries()) {
    absl::StrAppend(&s, "    {\n      EntrySpec e;\n      e.name = ", Quoted(e.name()),
                    ";\n      e.kernel_symbol = ", Quoted(e.kernel_symbol()), ";\n");
    for (const portfolio::ScalarGuard& g : e.guard().scalars())
      absl::StrAppend(&s, "      e.guard.push_back({", Quoted(g.scalar()), ", ", g.min(), ", ",
                      g.max(), ", ", g.multiple_of(), "});\n");
    for (const report::LaunchSpec::Arg& a : e.launch().args())
      absl::StrAppend(&s, "      e.args.push_back({", ArgKindName(a.kind()), ", ", Quoted(a.name()),
                      ", ", Quoted(a.rows()), ", ", Quoted(a.cols()), ", ", a.box_rows(), ", ",
                      a.box_cols(), ", ", a.element_bytes(), ", ", a.swizzle_bytes(), ", ",
                      a.bytes_per_element(), ", ", a.bytes_per_tile(), "});\n");
    absl::StrAppend(&s, "      e.grid[0] = ", Grid(e.launch().grid_x()),
                    ";\n      e.grid[1] = ", Grid(e.launch().grid_y()),
                    ";\n      e.grid[2] = ", Grid(e.launch().grid_z()),
                    ";\n      e.threads_per_cta = ", e.launch().threads_per_cta(),
                    ";\n      e.dynamic_shared_bytes = ", e.launch().dynamic_shared_bytes(),
                    ";\n      e.persistent = ", e.launch().persistent() ? "true" : "false",
                    ";\n      e.max_ctas = ", e.launch().max_ctas(), ";\n");
    for (const ExportedCubin& c : e.cubins())
      absl::StrAppend(&s, "      e.cubin_files[", Quoted(c.target()), "] = ", Quoted(c.path()),
                      ";\n");
    absl::StrAppend(&s, "      op.entries.push_back(std::move(e));\n    }\n");
  }
  absl::StrAppend(&s, "    return op;\n  }();\n  return op;\n}\n\n}  // namespace cake_launcher\n");
  return s;
}

}  // namespace cake::exporter
