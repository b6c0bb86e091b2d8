#include "clients/cakectl_output.h"

#include <cstdio>
#include <iostream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "google/protobuf/util/json_util.h"

namespace cake::clients {
namespace {
namespace svc = cake::v1;
namespace ev = cake::evidence;

std::string Verdicts(const ev::Candidate& c) {
  std::string out;
  for (const auto& m : c.measurements())
    absl::StrAppend(&out, out.empty() ? "" : ",", ev::TimingVerdict_Name(m.verdict()));
  return out;
}

}  // namespace

std::string Json(const google::protobuf::Message& m, bool pretty) {
  std::string out;
  google::protobuf::util::JsonPrintOptions o;
  o.add_whitespace = pretty;
  o.preserve_proto_field_names = true;
  (void)google::protobuf::util::MessageToJsonString(m, &out, o);
  if (!pretty && !out.empty() && out.back() == '\n') out.pop_back();
  return out;
}
void PrintStatus(const svc::StatusReply& s) {
  std::cout << "devices:   " << (s.execution_device() ? "" : s.device_note()) << "\n";
  for (const auto& d : s.devices())
    std::cout << "  " << d.name() << (d.uuid().empty() ? "" : "  " + d.uuid()) << "  [" << d.state()
              << "]  busy " << absl::StrFormat("%.1f", d.busy_seconds()) << " s, " << d.jobs_run()
              << " job(s) run, " << d.admitted_queued_jobs() << " queued for it\n";
  std::cout << "queue:     " << s.queued_jobs() << " queued, " << s.running_jobs() << " running"
            << (s.unplaced_jobs() > 0
                    ? absl::StrCat(" (", s.unplaced_jobs(), " no device lane here admits)")
                    : "")
            << "\n";
  std::cout << "candidates:";
  for (const auto& [k, v] : s.candidates_by_state()) std::cout << " " << k << "=" << v;
  std::cout << "\ncontracts:\n";
  for (const auto& c : s.contracts())
    std::cout << "  " << c.contract_id() << "  " << c.name()
              << "  incumbent: " << (c.incumbent().empty() ? "(none)" : c.incumbent())
              << "\n    execution: " << c.execution() << "\n";
  std::cout << "recent failures:" << (s.recent_failures().empty() ? " none" : "") << "\n";
  for (const auto& f : s.recent_failures())
    std::cout << "  job " << f.job_id() << " (" << f.kind() << ", " << f.candidate_id()
              << "): " << f.error() << "\n";
  if (!s.machine_failure().empty())
    std::cout << "machine:   latest failure " << s.machine_failure() << "\n";
  if (!s.blocked_jobs().empty())
    std::cout << "blocked (the machine failed them; `cakectl retry ID` re-queues):\n";
  for (const auto& f : s.blocked_jobs())
    std::cout << "  job " << f.job_id() << " (" << f.kind() << ", " << f.candidate_id()
              << "): " << f.error() << "\n";
}

void PrintInspect(const svc::InspectReply& r) {
  const ev::Candidate& c = r.candidate();
  std::printf("contract %s: %s\n", r.contract_id().c_str(), r.contract_summary().c_str());
  std::printf("incumbent %s\n", r.incumbent().empty() ? "(none)" : r.incumbent().c_str());
  if (!c.id().empty())
    std::printf("candidate %s on branch %s: %s\n", c.id().c_str(), c.branch().c_str(),
                ev::CandidateState_Name(c.state()).c_str());
  for (const std::string& b : r.bottlenecks()) std::printf("  - %s\n", b.c_str());
  if (r.branches_size() > 0) std::printf("branches:\n");
  for (const auto& b : r.branches())
    std::printf("  %-24s %3lld candidates, %lld rejected, head %s%s\n", b.name().c_str(),
                static_cast<long long>(b.candidates()), static_cast<long long>(b.rejected()),
                b.head().c_str(),
                b.forked_from().empty() ? "" : (", forked from " + b.forked_from()).c_str());
  if (r.recent_failures_size() > 0) std::printf("recent failures:\n");
  for (const auto& f : r.recent_failures())
    std::printf("  %s (%s) %s: %s\n", f.candidate_id().c_str(), f.branch().c_str(),
                ev::CandidateState_Name(f.state()).c_str(), f.note().c_str());
  for (const auto& e : r.events())
    std::printf("  event %lld %s: %s\n", static_cast<long long>(e.id()), e.kind().c_str(),
                e.message().c_str());
  std::string omitted;
  for (int s : r.omitted())
    absl::StrAppend(&omitted, omitted.empty() ? "" : ", ",
                    svc::EvidenceSection_Name(static_cast<svc::EvidenceSection>(s)));
  if (!omitted.empty())
    std::printf("omitted (over --max-bytes; ask for fewer sections or more bytes): %s\n",
                omitted.c_str());
  if (r.granted_size() > 0) std::cout << Json(c);
}

void PrintCandidates(const svc::ListCandidatesReply& r) {
  std::printf("%-14s %-18s %-10s %-10s %s\n", "ID", "STATE", "ELIGIBLE", "TIMING", "NOTE");
  for (const auto& c : r.candidates()) {
    const auto& e = c.eligibility();
    const std::string valid = e.eligible()           ? "yes"
                              : !e.failed().empty()  ? "FAILED"
                              : c.evidence().empty() ? "-"
                                                     : "missing";
    std::string note = c.status_note();
    if (note.size() > 90) note = note.substr(0, 87) + "...";
    std::printf("%-14s %-18s %-10s %-10s %s\n", c.id().c_str(),
                ev::CandidateState_Name(c.state()).c_str(), valid.c_str(),
                Verdicts(c).empty() ? "-" : Verdicts(c).c_str(), note.c_str());
  }
}

void PrintCandidate(const ev::Candidate& c) {
  std::cout << "candidate " << c.id() << "  (" << ev::CandidateState_Name(c.state());
  if (c.state() == ev::REJECTED) std::cout << " at " << ev::CandidateState_Name(c.rejected_at());
  std::cout << ")\ncontract  " << c.contract_id() << "\nschedule  " << c.schedule_hash()
            << "\nnote      " << c.status_note() << "\n";
  if (c.has_hypothesis())
    std::cout << "hypothesis: " << c.hypothesis().expected_effect()
              << (c.hypothesis().falsification().empty()
                      ? ""
                      : " (falsified if: " + c.hypothesis().falsification() + ")")
              << "\n";
  for (const auto& d : c.diagnostics())
    std::cout << "  " << cake::report::Severity_Name(d.severity()) << " "
              << cake::report::DiagId_Name(d.id()) << ": " << d.message() << "\n";
  if (c.has_receipt()) {
    const auto& r = c.receipt();
    std::cout << "receipt   " << r.target() << " "
              << (r.outcome() == cake::report::LoweringReceipt::PASS ? "PASS" : "FAIL") << ", "
              << r.resources().registers() << " registers, " << r.resources().spill_store_bytes()
              << " B spills\n  witness: " << r.witness() << "\n";
    for (const auto& f : r.selected_forms())
      std::cout << "  " << f.op_id() << ": " << f.expected_sass() << " x" << f.observed_count()
                << "\n";
  }
  std::cout << "eligibility " << c.eligibility().summary() << "\n";
  for (const auto& r : c.evidence()) {
    std::cout << "  " << ev::EvidenceKind_Name(r.kind()) << (r.tool().empty() ? "" : ":")
              << r.tool() << " " << ev::EvidenceStatus_Name(r.status()) << ": " << r.summary()
              << (r.failure().empty() || r.status() == ev::PASSED ? "" : " (" + r.failure() + ")")
              << "\n";
    if (r.kind() == ev::NUMERICAL_CONTRACT)
      for (const auto& k : r.cases())
        std::printf("    %-26s %-26s %-18s rel_l2 %.2e %s\n", k.row().c_str(),
                    k.problem().ShortDebugString().c_str(), k.distribution().c_str(),
                    k.relative_l2_error(), k.passed() ? "ok" : ("FAIL " + k.failure()).c_str());
  }
  for (const auto& m : c.measurements()) {
    std::cout << "measurement run " << m.run() << " vs " << m.incumbent() << " on " << m.device()
              << ": " << ev::TimingVerdict_Name(m.verdict());
    if (m.invalid()) std::cout << " (" << m.invalid_reason() << ")";
    std::cout << " (geomean ratio " << m.weighted_geomean_ratio() << ", worst row " << m.worst_row()
              << ")\n";
    if (!m.required_regression().empty()) std::cout << "  " << m.required_regression() << "\n";
    for (const auto& r : m.rows())
      std::printf(
          "  %-12s %-11s ratio %.4f [%.4f, %.4f] %-9s %8.1f vs %8.1f us  span ratio %.4f"
          "  (%d pairs, %d discarded, %s)\n",
          r.row().c_str(), (r.mode() + "/" + r.cache()).c_str(), r.median_ratio(), r.ratio_low(),
          r.ratio_high(), ev::TimingVerdict_Name(r.verdict()).c_str(), r.challenger_median_us(),
          r.incumbent_median_us(), r.span_median_ratio(), r.incumbent_us_size(),
          r.discarded_pairs(), r.stop_reason().c_str());
    for (const auto& chk : m.output_checks())
      std::printf("  timed outputs of the %s: %lld launches checked, %lld mismatches\n",
                  chk.arm().c_str(), static_cast<long long>(chk.launches_checked()),
                  static_cast<long long>(chk.mismatches()));
  }
}

}  // namespace cake::clients
