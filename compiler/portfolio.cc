#include "portfolio.h"

#include <algorithm>
#include <fstream>
#include <limits>
#include <numeric>
#include <set>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "base/digest.h"
#include "canonical.h"
#include "google/protobuf/text_format.h"
#include "google/protobuf/util/json_util.h"
#include "parse.h"
#include "schedule_limits.h"

namespace cake::compiler {
namespace {

// max = 0 reads as unbounded, in schedules and guards alike.
int64_t UpperBound(int64_t max) { return max == 0 ? std::numeric_limits<int64_t>::max() : max; }

// What a runtime must pass for every member: tensors (name, dtype, extents) and scalars, in
// declaration order.
std::string Signature(const ir::Module& m) {
  std::vector<std::string> parts;
  for (const ir::Kernel& k : m.kernels()) {
    for (const ir::TensorParam& t : k.tensors()) {
      std::vector<std::string> dims;
      for (const ir::Dim& d : t.shape().dims())
        dims.push_back(d.symbol().empty() ? absl::StrCat(d.size()) : d.symbol());
      parts.push_back(absl::StrCat(t.name(), ":", ir::DType_Name(t.dtype()), "[",
                                   absl::StrJoin(dims, ","), "]"));
    }
    for (const ir::ScalarParam& s : k.scalars())
      parts.push_back(absl::StrCat(s.name(), ":", ir::DType_Name(s.dtype())));
  }
  return absl::StrJoin(parts, " ");
}

// The guarded members in dispatch order, then the fallback.
std::vector<const portfolio::Member*> MembersInOrder(const portfolio::Portfolio& p) {
  std::vector<const portfolio::Member*> all;
  for (const portfolio::Member& m : p.members()) all.push_back(&m);
  all.push_back(&p.fallback());
  return all;
}

}  // namespace

std::string MemberName(const portfolio::Member& m) {
  return m.name().empty() ? "fallback" : m.name();
}

absl::StatusOr<ir::Module> ApplyGuard(const ir::Module& module,
                                      const portfolio::ShapeGuard& guard) {
  ir::Module out = module;
  for (const portfolio::ScalarGuard& g : guard.scalars()) {
    if (g.multiple_of() < 0 || g.multiple_of() > kMaxGuardMultiple)
      return absl::InvalidArgumentError(absl::StrCat("guard on '", g.scalar(), "': multiple_of ",
                                                     g.multiple_of(), " outside [0, ",
                                                     kMaxGuardMultiple, "]"));
    bool found = false;
    for (ir::Kernel& k : *out.mutable_kernels())
      for (ir::ScalarParam& s : *k.mutable_scalars()) {
        if (s.name() != g.scalar()) continue;
        found = true;
        const int64_t lo = std::max(s.min(), g.min());
        const int64_t hi = std::min(UpperBound(s.max()), UpperBound(g.max()));
        const int64_t declared = std::max<int64_t>(s.multiple_of(), 1);
        const int64_t multiple = std::lcm(declared, std::max<int64_t>(g.multiple_of(), 1));
        if (multiple > kMaxGuardMultiple)
          return absl::InvalidArgumentError(absl::StrCat(
              "guard on '", g.scalar(), "': multiple of ", declared, " and of ", g.multiple_of(),
              " is a multiple of ", multiple, ", beyond ", kMaxGuardMultiple));
        // Some multiple lies in [lo, hi]: lo rounded up to the multiple, without overflow.
        const int64_t rem = ((lo % multiple) + multiple) % multiple;
        const bool admits =
            lo <= hi && (rem == 0 || static_cast<uint64_t>(hi) - static_cast<uint64_t>(lo) >=
                                         static_cast<uint64_t>(multiple - rem));
        if (!admits)
          return absl::InvalidArgumentError(
              absl::StrCat("guard on '", g.scalar(), "' admits no value: [", lo, ", ",
                           hi == std::numeric_limits<int64_t>::max() ? "inf" : absl::StrCat(hi),
                           "] has no multiple of ", multiple));
        s.set_min(lo);
        s.set_max(hi == std::numeric_limits<int64_t>::max() ? 0 : hi);
        s.set_multiple_of(multiple > 1 ? multiple : 0);
      }
    if (!found)
      return absl::InvalidArgumentError(
          absl::StrCat("guard names scalar '", g.scalar(), "', which no kernel declares"));
  }
  return out;
}

portfolio::ShapeGuard DeclaredFacts(const ir::Kernel& kernel) {
  portfolio::ShapeGuard g;
  for (const ir::ScalarParam& s : kernel.scalars()) {
    portfolio::ScalarGuard* f = g.add_scalars();
    f->set_scalar(s.name());
    f->set_min(s.min());
    f->set_max(s.max());
    f->set_multiple_of(s.multiple_of() > 1 ? s.multiple_of() : 0);
  }
  return g;
}

bool GuardAdmits(const portfolio::ShapeGuard& guard, const ScalarValues& scalars) {
  for (const portfolio::ScalarGuard& g : guard.scalars()) {
    auto it = scalars.find(g.scalar());
    if (it == scalars.end()) return false;
    const int64_t v = it->second;
    if (v < g.min() || v > UpperBound(g.max())) return false;
    if (g.multiple_of() > 1 && v % g.multiple_of() != 0) return false;
  }
  return true;
}

absl::StatusOr<int> Dispatch(const portfolio::DispatcherManifest& manifest,
                             const ScalarValues& scalars) {
  for (int i = 0; i < manifest.entries_size(); ++i)
    if (GuardAdmits(manifest.entries(i).guard(), scalars)) return i;
  std::vector<std::string> values;
  for (const auto& [name, v] : scalars) values.push_back(absl::StrCat(name, "=", v));
  return absl::NotFoundError(absl::StrCat("no entry of portfolio '", manifest.portfolio(),
                                          "' admits ", absl::StrJoin(values, " "),
                                          " (not even the fallback: the kernel's declared "
                                          "facts exclude it)"));
}

absl::Status CheckPortfolio(const portfolio::Portfolio& p) {
  if (p.members_size() < 1 || p.members_size() > kMaxPortfolioMembers)
    return absl::InvalidArgumentError(absl::StrCat("a portfolio has 1 to ", kMaxPortfolioMembers,
                                                   " guarded members; this one has ",
                                                   p.members_size()));
  if (p.fallback().schedule_file().empty() && p.fallback().schedule_text().empty())
    return absl::InvalidArgumentError("the portfolio has no fallback schedule");
  if (p.fallback().guard().scalars_size() != 0)
    return absl::InvalidArgumentError(
        "the fallback carries a guard: it must take every shape the kernel declares");
  auto plain = [](const std::string& name) {
    return name.size() <= 64 &&
           name.find_first_not_of(
               "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-") ==
               std::string::npos;
  };
  if (!plain(p.name()))
    return absl::InvalidArgumentError(
        "the portfolio's name has at most 64 characters from [A-Za-z0-9_.-]");
  std::set<std::string> names;
  const std::vector<const portfolio::Member*> all = MembersInOrder(p);
  for (const portfolio::Member* m : all) {
    const std::string name = m->name().empty() && m == &p.fallback() ? "fallback" : m->name();
    // Names land in row names ("case @member"), logs and manifests: plain characters only.
    if (name.empty() || !plain(name))
      return absl::InvalidArgumentError(
          "every member needs a name of 1 to 64 characters from [A-Za-z0-9_.-]");
    if (!names.insert(name).second)
      return absl::InvalidArgumentError(absl::StrCat("member name '", name, "' is used twice"));
    if (m->schedule_file().empty() == m->schedule_text().empty())
      return absl::InvalidArgumentError(
          absl::StrCat("member '", name, "': give exactly one of schedule_file and schedule_text"));
    const std::filesystem::path file(m->schedule_file());
    if (!m->schedule_file().empty() && file.is_absolute())
      return absl::InvalidArgumentError(absl::StrCat(
          "member '", name, "': schedule_file must be a path relative to the portfolio"));
    if (m->guard().scalars_size() > 16)
      return absl::InvalidArgumentError(
          absl::StrCat("member '", name, "': a guard states at most 16 scalar facts"));
  }
  return absl::OkStatus();
}

absl::StatusOr<portfolio::Portfolio> ParsePortfolioText(absl::string_view text,
                                                        absl::string_view file) {
  if (text.size() > kMaxScheduleTextBytes)
    return absl::InvalidArgumentError(absl::StrCat(file, ": portfolio text is ", text.size(),
                                                   " bytes (limit ", kMaxScheduleTextBytes, ")"));
  portfolio::Portfolio p;
  google::protobuf::TextFormat::Parser parser;
  parser.SetRecursionLimit(kMaxTextNesting);
  if (!parser.ParseFromString(std::string(text), &p))
    return absl::InvalidArgumentError(absl::StrCat(file, ": malformed portfolio text"));
  return p;
}

absl::Status CheckSelfContained(const portfolio::Portfolio& p) {
  if (absl::Status s = CheckPortfolio(p); !s.ok()) return s;
  const std::vector<const portfolio::Member*> all = MembersInOrder(p);
  for (const portfolio::Member* m : all)
    if (!m->schedule_file().empty())
      return absl::InvalidArgumentError(absl::StrCat(
          "member '", MemberName(*m), "' names schedule_file '", m->schedule_file().substr(0, 200),
          "': a proposed portfolio carries every schedule as schedule_text (the daemon reads no "
          "file a proposal names; `cakectl propose --portfolio` inlines them)"));
  return absl::OkStatus();
}

absl::StatusOr<std::string> PortfolioHash(const portfolio::Portfolio& p) {
  if (absl::Status s = CheckSelfContained(p); !s.ok()) return s;
  const std::vector<const portfolio::Member*> all = MembersInOrder(p);
  std::string canonical = absl::StrCat("cake.portfolio.v1\n", p.name(), "\n");
  for (const portfolio::Member* m : all) {
    const std::string name = MemberName(*m);
    auto module = ParseModuleText(m->schedule_text(), absl::StrCat(name, ".textproto"));
    if (!module.ok()) return module.status();
    // Dispatch order is meaning; the order a guard lists its facts is not.
    std::vector<std::string> facts;
    for (const portfolio::ScalarGuard& g : m->guard().scalars())
      facts.push_back(absl::StrCat(g.scalar(), ":", g.min(), ":", g.max(), ":",
                                   std::max<int64_t>(g.multiple_of(), 1)));
    std::sort(facts.begin(), facts.end());
    absl::StrAppend(&canonical, name, "\t", ScheduleHash(module->module), "\t",
                    absl::StrJoin(facts, ","), "\n");
  }
  return base::Sha256Hex(canonical);
}

absl::StatusOr<portfolio::Portfolio> InlineMemberFiles(const portfolio::Portfolio& p,
                                                       const std::filesystem::path& base_dir) {
  if (absl::Status s = CheckPortfolio(p); !s.ok()) return s;
  portfolio::Portfolio out = p;
  std::vector<portfolio::Member*> all;
  for (portfolio::Member& m : *out.mutable_members()) all.push_back(&m);
  all.push_back(out.mutable_fallback());
  size_t total = 0;
  for (portfolio::Member* m : all) {
    if (m->schedule_file().empty()) continue;
    const std::filesystem::path file = base_dir / m->schedule_file();
    std::ifstream in(file, std::ios::binary);
    if (!in)
      return absl::NotFoundError(absl::StrCat(file.string(), ": cannot open member schedule"));
    std::ostringstream buf;
    buf << in.rdbuf();
    total += buf.str().size();
    if (total > kMaxScheduleTextBytes)
      return absl::InvalidArgumentError(
          absl::StrCat("the portfolio's schedules come to more than ", kMaxScheduleTextBytes,
                       " bytes (at member file ", file.string(), "), the limit of one proposal"));
    m->set_schedule_text(buf.str());
    m->clear_schedule_file();
  }
  return out;
}

absl::StatusOr<portfolio::Portfolio> ParsePortfolioFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(absl::StrCat(path, ": cannot open portfolio file"));
  std::ostringstream buf;
  buf << in.rdbuf();
  return ParsePortfolioText(buf.str(), path);
}

absl::StatusOr<portfolio::DispatcherManifest> LoadManifest(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(absl::StrCat(path, ": cannot open manifest"));
  std::ostringstream buf;
  buf << in.rdbuf();
  const std::string text = buf.str();
  // A manifest carries every entry's receipt; 16 MiB is far beyond any real one.
  if (text.size() > (size_t{16} << 20))
    return absl::InvalidArgumentError(absl::StrCat(path, ": manifest of ", text.size(), " bytes"));
  portfolio::DispatcherManifest m;
  google::protobuf::util::JsonParseOptions opts;
  if (auto s = google::protobuf::util::JsonStringToMessage(text, &m, opts); !s.ok())
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": not a dispatcher manifest: ", std::string(s.message())));
  if (m.entries_size() < 1 || m.entries_size() > kMaxPortfolioMembers + 1)
    return absl::InvalidArgumentError(absl::StrCat(path, ": ", m.entries_size(), " entries (1 to ",
                                                   kMaxPortfolioMembers + 1, ")"));
  auto is_sha256 = [](const std::string& h) {
    return h.size() == 64 && h.find_first_not_of("0123456789abcdef") == std::string::npos;
  };
  for (const auto& e : m.entries()) {
    const std::string what = absl::StrCat(path, ": entry '", e.name(), "'");
    if (!is_sha256(e.schedule_hash()) || !is_sha256(e.cubin_sha256()) ||
        e.kernel_symbol().empty() || e.launch().args_size() == 0)
      return absl::InvalidArgumentError(
          absl::StrCat(what, " lacks a schedule hash, cubin hash, symbol or launch"));
    const std::filesystem::path cubin =
        std::filesystem::path(e.receipt().artifact_dir()) / "kernel.cubin";
    std::ifstream cin(cubin, std::ios::binary);
    if (!cin)
      return absl::InvalidArgumentError(absl::StrCat(what, ": cubin ", cubin.string(), " missing"));
    std::ostringstream bytes;
    bytes << cin.rdbuf();
    if (base::Sha256Hex(bytes.str()) != e.cubin_sha256())
      return absl::InvalidArgumentError(absl::StrCat(
          what, ": cubin ", cubin.string(), " does not have the hash the manifest states"));
  }
  return m;
}

absl::StatusOr<PortfolioResult> CompilePortfolio(const portfolio::Portfolio& p,
                                                 const std::filesystem::path& base_dir,
                                                 const TargetInfo& target,
                                                 const CompileOptions& options) {
  if (absl::Status s = CheckPortfolio(p); !s.ok()) return s;
  PortfolioResult result;
  result.manifest.set_portfolio(p.name());
  result.manifest.set_target(std::string(target.name));
  const std::vector<const portfolio::Member*> all = MembersInOrder(p);
  // Parsed first, so a bad file costs no compile and the signatures compare before any work.
  std::vector<ParsedModule> parsed;
  for (const portfolio::Member* m : all) {
    auto module =
        m->schedule_text().empty()
            ? ParseModuleFile((base_dir / m->schedule_file()).string())
            : ParseModuleText(m->schedule_text(), absl::StrCat(MemberName(*m), ".textproto"));
    if (!module.ok()) return module.status();
    parsed.push_back(*std::move(module));
  }
  const std::string signature = Signature(parsed.back().module);
  bool complete = true;
  for (size_t i = 0; i < all.size(); ++i) {
    const portfolio::Member& m = *all[i];
    PortfolioMemberResult r;
    r.name = MemberName(m);  // CheckPortfolio: only the fallback may be unnamed
    r.file = m.schedule_file().empty() ? "(inline)" : m.schedule_file();
    auto fail = [&](std::string why) {
      r.error = std::move(why);
      complete = false;
      result.members.push_back(std::move(r));
    };
    if (Signature(parsed[i].module) != signature) {
      fail(absl::StrCat("takes (", Signature(parsed[i].module), ") but the fallback takes (",
                        signature, ")"));
      continue;
    }
    auto guarded = ApplyGuard(parsed[i].module, m.guard());
    if (!guarded.ok()) {
      fail(std::string(guarded.status().message()));
      continue;
    }
    ParsedModule under_guard = parsed[i];
    under_guard.module = *std::move(guarded);
    auto compiled = Compile(under_guard, target, options);
    if (!compiled.ok()) return compiled.status();
    r.analysis = compiled->analysis;
    if (!compiled->receipt.has_value()) {
      fail(absl::StrCat("not verified under its guard (verdict ",
                        report::Verdict_Name(compiled->analysis.verdict()), ")"));
      continue;
    }
    r.receipt = compiled->receipt;
    if (compiled->receipt->outcome() != report::LoweringReceipt::PASS) {
      fail("compiled, but its receipt failed (SASS forms or spills)");
      continue;
    }
    portfolio::DispatcherManifest::Entry* e = result.manifest.add_entries();
    e->set_name(r.name);
    *e->mutable_guard() = DeclaredFacts(under_guard.module.kernels(0));
    e->set_schedule_hash(compiled->receipt->schedule_hash());
    e->set_cubin_sha256(compiled->receipt->cubin_sha256());
    e->set_kernel_symbol(compiled->receipt->kernel_symbol());
    e->set_lowering_version(compiled->receipt->lowering_version());
    e->set_artifact_key(compiled->receipt->artifact_key());
    *e->mutable_launch() = compiled->receipt->launch();
    *e->mutable_receipt() = *compiled->receipt;
    result.members.push_back(std::move(r));
  }
  result.complete = complete;
  return result;
}

}  // namespace cake::compiler
