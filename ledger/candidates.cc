#include "candidates.h"

#include <algorithm>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "base/digest.h"
#include "base/status_macros.h"
#include "connection.h"
#include "events.h"
#include "evidence_store.h"

namespace cake::ledger {

namespace {

std::string Normalized(absl::string_view text) {
  std::vector<std::string> words =
      absl::StrSplit(absl::AsciiStrToLower(text), absl::ByAnyChar(" \t\r\n"), absl::SkipEmpty());
  return absl::StrJoin(words, " ");
}

CandidateStore::Head ReadHead(Stmt& s) {
  CandidateStore::Head h;
  h.id = s.Text(0);
  h.contract_id = s.Text(1);
  h.branch = s.Text(2);
  h.schedule_hash = s.Text(3);
  h.state = static_cast<evidence::CandidateState>(s.Int(4));
  h.status_note = s.Text(5);
  h.seq = s.Int(6);
  h.rejected_at = static_cast<evidence::CandidateState>(s.Int(7));
  return h;
}

constexpr const char* kHeadColumns =
    "SELECT id, contract_id, branch, schedule_hash, state, status_note, seq, rejected_at FROM "
    "candidates ";

}  // namespace

std::string HypothesisKey(const evidence::Hypothesis& h) {
  std::vector<std::string> decisions;
  for (const std::string& d : h.changed_decisions())
    if (std::string n = Normalized(d); !n.empty()) decisions.push_back(std::move(n));
  if (h.parent().empty() || decisions.empty()) return "";
  std::sort(decisions.begin(), decisions.end());
  decisions.erase(std::unique(decisions.begin(), decisions.end()), decisions.end());
  return base::Sha256Hex(absl::StrCat(h.parent(), "\n", absl::StrJoin(decisions, "\n"), "\n\n",
                                      Normalized(h.expected_effect())));
}

absl::StatusOr<CandidateStore::Inserted> CandidateStore::Insert(
    const evidence::Candidate& c, const std::string& idempotency_key) {
  Inserted result;
  absl::Status st = conn_->Atomically([&]() -> absl::Status {
    CAKE_ASSIGN_OR_RETURN(
        Stmt same, conn_->db().Prepare(
                       "SELECT id FROM candidates WHERE contract_id = ? AND schedule_hash = ?"));
    same.Bind(1, c.contract_id()).Bind(2, c.schedule_hash());
    if (same.Step()) {
      result.id = same.Text(0);
      result.existed = true;
      return absl::OkStatus();
    }
    CAKE_RETURN_IF_ERROR(same.status());
    CAKE_ASSIGN_OR_RETURN(Stmt seq,
                          conn_->db().Prepare("SELECT COALESCE(MAX(seq), 0) + 1 FROM candidates"));
    if (!seq.Step()) return seq.status();
    const int64_t n = seq.Int(0);
    result.id = absl::StrCat("c", n, "-", c.schedule_hash().substr(0, 8));
    CAKE_ASSIGN_OR_RETURN(
        Stmt ins,
        conn_->db().Prepare(
            "INSERT INTO candidates(id, seq, contract_id, schedule_hash, schedule_text, state, "
            "proposer, idempotency_key, created_ms, branch, hypothesis_key) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"));
    ins.Bind(1, result.id)
        .Bind(2, n)
        .Bind(3, c.contract_id())
        .Bind(4, c.schedule_hash())
        .Bind(5, c.schedule_text())
        .Bind(6, static_cast<int64_t>(c.state()))
        .Bind(7, c.proposer());
    if (idempotency_key.empty()) {
      ins.BindNull(8);
    } else {
      ins.Bind(8, idempotency_key);
    }
    ins.Bind(9, c.created_unix_ms()).Bind(10, c.branch().empty() ? "main" : c.branch());
    CAKE_RETURN_IF_ERROR(ins.Bind(11, HypothesisKey(c.hypothesis())).Run());
    if (c.has_hypothesis()) {
      CAKE_ASSIGN_OR_RETURN(
          Stmt h, conn_->db().Prepare("INSERT INTO hypotheses(candidate_id, body) VALUES (?, ?)"));
      CAKE_RETURN_IF_ERROR(
          h.Bind(1, result.id).BindBlob(2, c.hypothesis().SerializeAsString()).Run());
    }
    return events_->Add(
        "proposed", result.id, 0,
        absl::StrCat("proposed by ", c.proposer(), " for contract ", c.contract_id(), " on branch ",
                     c.branch().empty() ? "main" : c.branch()));
  });
  if (!st.ok()) return st;
  return result;
}

absl::StatusOr<std::string> CandidateStore::ForKey(const std::string& idempotency_key) {
  auto lock = conn_->Lock();
  CAKE_ASSIGN_OR_RETURN(Stmt s,
                        conn_->db().Prepare("SELECT id FROM candidates WHERE idempotency_key = ?"));
  s.Bind(1, idempotency_key);
  if (s.Step()) return s.Text(0);
  CAKE_RETURN_IF_ERROR(s.status());
  return std::string();
}

absl::Status CandidateStore::SetState(const std::string& id, evidence::CandidateState state,
                                      evidence::CandidateState rejected_at,
                                      const std::string& note) {
  return conn_->Atomically([&]() -> absl::Status {
    CAKE_ASSIGN_OR_RETURN(
        Stmt s,
        conn_->db().Prepare(
            "UPDATE candidates SET state = ?, rejected_at = ?, status_note = ? WHERE id = ?"));
    CAKE_RETURN_IF_ERROR(s.Bind(1, static_cast<int64_t>(state))
                             .Bind(2, static_cast<int64_t>(rejected_at))
                             .Bind(3, note)
                             .Bind(4, id)
                             .Run());
    if (conn_->db().Changes() == 0) return absl::NotFoundError(absl::StrCat("no candidate ", id));
    return events_->Add(
        "state", id, 0,
        absl::StrCat(evidence::CandidateState_Name(state),
                     state == evidence::REJECTED
                         ? absl::StrCat(" at ", evidence::CandidateState_Name(rejected_at))
                         : "",
                     note.empty() ? "" : absl::StrCat(": ", note)));
  });
}

absl::StatusOr<evidence::Candidate> CandidateStore::Get(const std::string& id) {
  auto lock = conn_->Lock();
  CAKE_ASSIGN_OR_RETURN(
      Stmt s,
      conn_->db().Prepare(
          "SELECT id, contract_id, schedule_hash, schedule_text, state, rejected_at, status_note, "
          "proposer, created_ms, branch FROM candidates WHERE id = ?"));
  s.Bind(1, id);
  if (!s.Step()) {
    CAKE_RETURN_IF_ERROR(s.status());
    return absl::NotFoundError(absl::StrCat("no candidate '", id, "'"));
  }
  evidence::Candidate c;
  c.set_id(s.Text(0));
  c.set_contract_id(s.Text(1));
  c.set_schedule_hash(s.Text(2));
  c.set_schedule_text(s.Text(3));
  c.set_state(static_cast<evidence::CandidateState>(s.Int(4)));
  c.set_rejected_at(static_cast<evidence::CandidateState>(s.Int(5)));
  c.set_status_note(s.Text(6));
  c.set_proposer(s.Text(7));
  c.set_created_unix_ms(s.Int(8));
  c.set_branch(s.Text(9));
  CAKE_ASSIGN_OR_RETURN(std::optional<evidence::Hypothesis> hyp, ReadHypothesis(id));
  if (hyp.has_value()) *c.mutable_hypothesis() = *std::move(hyp);
  CAKE_ASSIGN_OR_RETURN(
      Stmt a,
      conn_->db().Prepare(
          "SELECT body FROM analysis_reports WHERE candidate_id = ? ORDER BY target LIMIT 1"));
  a.Bind(1, id);
  if (a.Step()) c.mutable_analysis()->ParseFromString(a.Blob(0));
  CAKE_ASSIGN_OR_RETURN(
      Stmt r, conn_->db().Prepare(
                  "SELECT r.body FROM receipts r LEFT JOIN analysis_reports a ON a.candidate_id = "
                  "r.candidate_id AND a.target = r.target WHERE r.candidate_id = ? ORDER BY "
                  "a.target IS NULL, r.target"));
  r.Bind(1, id);
  // The receipt shown is the compile target's: the target of the stored analysis (the compile
  // job stores the compile target's analysis); the execution target's receipt is in evidence().
  if (r.Step()) c.mutable_receipt()->ParseFromString(r.Blob(0));
  CAKE_ASSIGN_OR_RETURN(
      Stmt v, conn_->db().Prepare(
                  "SELECT body FROM validations WHERE candidate_id = ? ORDER BY id DESC LIMIT 1"));
  v.Bind(1, id);
  if (v.Step()) c.mutable_validation()->ParseFromString(v.Blob(0));
  CAKE_ASSIGN_OR_RETURN(
      Stmt m,
      conn_->db().Prepare("SELECT body FROM measurements WHERE candidate_id = ? ORDER BY id"));
  m.Bind(1, id);
  while (m.Step()) c.add_measurements()->ParseFromString(m.Blob(0));
  CAKE_ASSIGN_OR_RETURN(std::vector<portfolio::DispatcherManifest> manifests,
                        evidence_->Manifests(id));
  for (portfolio::DispatcherManifest& pm : manifests) *c.add_manifests() = std::move(pm);
  CAKE_ASSIGN_OR_RETURN(std::vector<evidence::EvidenceRecord> records,
                        evidence_->LatestRecords(id));
  for (evidence::EvidenceRecord& rec : records) *c.add_evidence() = std::move(rec);
  for (const auto& d : c.analysis().diagnostics()) *c.add_diagnostics() = d;
  for (const auto& d : c.receipt().failures()) *c.add_diagnostics() = d;
  return c;
}

absl::StatusOr<CandidateStore::StateOf> CandidateStore::State(const std::string& id) {
  auto lock = conn_->Lock();
  CAKE_ASSIGN_OR_RETURN(
      Stmt s, conn_->db().Prepare("SELECT state, rejected_at FROM candidates WHERE id = ?"));
  s.Bind(1, id);
  if (!s.Step()) {
    CAKE_RETURN_IF_ERROR(s.status());
    return absl::NotFoundError(absl::StrCat("no candidate '", id, "'"));
  }
  return StateOf{static_cast<evidence::CandidateState>(s.Int(0)),
                 static_cast<evidence::CandidateState>(s.Int(1))};
}

absl::StatusOr<CandidateStore::Head> CandidateStore::HeadOf(const std::string& id) {
  auto lock = conn_->Lock();
  CAKE_ASSIGN_OR_RETURN(Stmt s, conn_->db().Prepare(absl::StrCat(kHeadColumns, "WHERE id = ?")));
  s.Bind(1, id);
  if (!s.Step()) {
    CAKE_RETURN_IF_ERROR(s.status());
    return absl::NotFoundError(absl::StrCat("no candidate '", id, "'"));
  }
  return ReadHead(s);
}

absl::StatusOr<std::optional<CandidateStore::Head>> CandidateStore::LatestFailure(
    const std::string& contract_id, const std::string& key) {
  if (key.empty()) return std::nullopt;
  auto lock = conn_->Lock();
  CAKE_ASSIGN_OR_RETURN(
      Stmt s, conn_->db().Prepare(absl::StrCat(
                  kHeadColumns,
                  "WHERE contract_id = ? AND hypothesis_key = ? AND ((state = ? AND rejected_at "
                  "!= ?) OR state = ?) ORDER BY seq DESC LIMIT 1")));
  s.Bind(1, contract_id).Bind(2, key);
  s.Bind(3, static_cast<int64_t>(evidence::REJECTED))
      .Bind(4, static_cast<int64_t>(evidence::COMPILED))
      .Bind(5, static_cast<int64_t>(evidence::MEASURED));
  if (s.Step()) return ReadHead(s);
  CAKE_RETURN_IF_ERROR(s.status());
  return std::nullopt;
}

absl::StatusOr<std::vector<CandidateStore::Head>> CandidateStore::Failures(
    const std::string& contract_id, int limit) {
  auto lock = conn_->Lock();
  CAKE_ASSIGN_OR_RETURN(
      Stmt s,
      conn_->db().Prepare(absl::StrCat(
          kHeadColumns, "WHERE contract_id = ? AND state IN (?, ?) ORDER BY seq DESC LIMIT ?")));
  s.Bind(1, contract_id)
      .Bind(2, static_cast<int64_t>(evidence::REJECTED))
      .Bind(3, static_cast<int64_t>(evidence::MEASURED))
      .Bind(4, static_cast<int64_t>(limit));
  std::vector<Head> out;
  while (s.Step()) out.push_back(ReadHead(s));
  CAKE_RETURN_IF_ERROR(s.status());
  return out;
}

absl::StatusOr<std::string> CandidateStore::Oldest(const std::string& contract_id) {
  auto lock = conn_->Lock();
  CAKE_ASSIGN_OR_RETURN(
      Stmt s,
      conn_->db().Prepare("SELECT id FROM candidates WHERE contract_id = ? ORDER BY seq LIMIT 1"));
  s.Bind(1, contract_id);
  if (s.Step()) return s.Text(0);
  CAKE_RETURN_IF_ERROR(s.status());
  return std::string();
}

absl::StatusOr<evidence::Hypothesis> CandidateStore::HypothesisOf(const std::string& id) {
  auto lock = conn_->Lock();
  CAKE_ASSIGN_OR_RETURN(std::optional<evidence::Hypothesis> h, ReadHypothesis(id));
  return h.value_or(evidence::Hypothesis());
}

absl::StatusOr<std::optional<evidence::Hypothesis>> CandidateStore::ReadHypothesis(
    const std::string& id) {
  CAKE_ASSIGN_OR_RETURN(Stmt s,
                        conn_->db().Prepare("SELECT body FROM hypotheses WHERE candidate_id = ?"));
  s.Bind(1, id);
  if (!s.Step()) {
    CAKE_RETURN_IF_ERROR(s.status());
    return std::nullopt;
  }
  // As candidates have always been read: a body that does not parse reads as an empty one.
  evidence::Hypothesis h;
  if (!h.ParseFromString(s.Blob(0))) h.Clear();
  return h;
}

absl::StatusOr<std::vector<CandidateStore::Branch>> CandidateStore::Branches(
    const std::string& contract_id) {
  std::vector<Branch> out;
  {
    auto lock = conn_->Lock();
    CAKE_ASSIGN_OR_RETURN(
        Stmt s, conn_->db().Prepare(
                    "SELECT branch, COUNT(*), SUM(state = ?), "
                    "(SELECT id FROM candidates f WHERE f.contract_id = c.contract_id AND "
                    "f.branch = c.branch ORDER BY seq LIMIT 1), "
                    "(SELECT id FROM candidates h WHERE h.contract_id = c.contract_id AND "
                    "h.branch = c.branch ORDER BY seq DESC LIMIT 1) "
                    "FROM candidates c WHERE contract_id = ? GROUP BY branch ORDER BY MIN(seq)"));
    s.Bind(1, static_cast<int64_t>(evidence::REJECTED)).Bind(2, contract_id);
    while (s.Step()) {
      Branch b;
      b.name = s.Text(0);
      b.candidates = s.Int(1);
      b.rejected = s.Int(2);
      b.first = s.Text(3);
      b.head = s.Text(4);
      out.push_back(std::move(b));
    }
    CAKE_RETURN_IF_ERROR(s.status());
    for (Branch& b : out) {
      CAKE_ASSIGN_OR_RETURN(std::optional<evidence::Hypothesis> first, ReadHypothesis(b.first));
      if (first.has_value()) b.forked_from = first->parent();
    }
  }
  return out;
}

absl::StatusOr<int64_t> CandidateStore::CountOnBranch(const std::string& contract_id,
                                                      const std::string& branch) {
  auto lock = conn_->Lock();
  CAKE_ASSIGN_OR_RETURN(
      Stmt s,
      conn_->db().Prepare("SELECT COUNT(*) FROM candidates WHERE contract_id = ? AND branch = ?"));
  s.Bind(1, contract_id).Bind(2, branch);
  if (!s.Step()) return s.status();
  return s.Int(0);
}

absl::StatusOr<CandidateStore::CandidatePage> CandidateStore::List(const std::string& contract_id,
                                                                   int limit, int64_t before_seq,
                                                                   const std::string& branch) {
  std::vector<std::pair<std::string, int64_t>> ids;
  const int64_t want = limit > 0 ? limit : 1000;
  {
    auto lock = conn_->Lock();
    CAKE_ASSIGN_OR_RETURN(
        Stmt s,
        conn_->db().Prepare("SELECT id, seq FROM candidates WHERE (? = '' OR contract_id = ?) AND "
                            "(? = 0 OR seq < ?) AND (? = '' OR branch = ?) "
                            "ORDER BY seq DESC LIMIT ?"));
    s.Bind(1, contract_id).Bind(2, contract_id).Bind(3, before_seq).Bind(4, before_seq);
    s.Bind(5, branch).Bind(6, branch);
    s.Bind(7, want + 1);  // one more tells whether another page exists
    while (s.Step()) ids.emplace_back(s.Text(0), s.Int(1));
    CAKE_RETURN_IF_ERROR(s.status());
  }
  CandidatePage page;
  page.more = static_cast<int64_t>(ids.size()) > want;
  if (page.more) ids.pop_back();
  for (const auto& [id, seq] : ids) {
    CAKE_ASSIGN_OR_RETURN(evidence::Candidate c, Get(id));
    page.candidates.push_back(std::move(c));
    page.last_seq = seq;
  }
  return page;
}

absl::StatusOr<std::vector<std::string>> CandidateStore::InState(const std::string& contract_id,
                                                                 evidence::CandidateState state) {
  auto lock = conn_->Lock();
  CAKE_ASSIGN_OR_RETURN(
      Stmt s, conn_->db().Prepare(
                  "SELECT id FROM candidates WHERE contract_id = ? AND state = ? ORDER BY seq"));
  s.Bind(1, contract_id).Bind(2, static_cast<int64_t>(state));
  std::vector<std::string> ids;
  while (s.Step()) ids.push_back(s.Text(0));
  CAKE_RETURN_IF_ERROR(s.status());
  return ids;
}

absl::StatusOr<std::map<std::string, int64_t>> CandidateStore::CountsByState() {
  auto lock = conn_->Lock();
  CAKE_ASSIGN_OR_RETURN(
      Stmt s, conn_->db().Prepare("SELECT state, COUNT(*) FROM candidates GROUP BY state"));
  std::map<std::string, int64_t> out;
  while (s.Step())
    out[evidence::CandidateState_Name(static_cast<evidence::CandidateState>(s.Int(0)))] = s.Int(1);
  CAKE_RETURN_IF_ERROR(s.status());
  return out;
}

}  // namespace cake::ledger
