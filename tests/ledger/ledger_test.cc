// The ledger against real SQLite files: schema and identity, immutability of contracts,
// exactly-once job records, restart recovery, refusal of foreign and newer files.
#include <gtest/gtest.h>

#include <sqlite3.h>
#include <chrono>
#include <thread>

#include <filesystem>

#include "absl/strings/str_format.h"
#include "ledger/candidates.h"
#include "ledger/ledger.h"
#include "ledger/sqlite.h"
#include "tests/compiler/test_util.h"

namespace cake {
namespace {

namespace fs = std::filesystem;

int Exec(const fs::path& db, const std::string& sql, std::string* err = nullptr) {
  sqlite3* raw = nullptr;
  sqlite3_open(db.c_str(), &raw);
  char* msg = nullptr;
  const int rc = sqlite3_exec(raw, sql.c_str(), nullptr, nullptr, &msg);
  if (err && msg) *err = msg;
  sqlite3_free(msg);
  sqlite3_close(raw);
  return rc;
}

// The first column of the first row of `sql`, or -1.
int64_t Scalar(const fs::path& db, const std::string& sql) {
  sqlite3* raw = nullptr;
  sqlite3_open(db.c_str(), &raw);
  sqlite3_stmt* s = nullptr;
  sqlite3_prepare_v2(raw, sql.c_str(), -1, &s, nullptr);
  int64_t v = -1;
  if (sqlite3_step(s) == SQLITE_ROW) v = sqlite3_column_int64(s, 0);
  sqlite3_finalize(s);
  sqlite3_close(raw);
  return v;
}

// The first column of the first row of `sql` as text, or "<none>".
std::string Text(const fs::path& db, const std::string& sql) {
  sqlite3* raw = nullptr;
  sqlite3_open(db.c_str(), &raw);
  sqlite3_stmt* s = nullptr;
  sqlite3_prepare_v2(raw, sql.c_str(), -1, &s, nullptr);
  std::string v = "<none>";
  if (sqlite3_step(s) == SQLITE_ROW && sqlite3_column_text(s, 0) != nullptr)
    v = reinterpret_cast<const char*>(sqlite3_column_text(s, 0));
  sqlite3_finalize(s);
  sqlite3_close(raw);
  return v;
}

int64_t Pragma(const fs::path& db, const std::string& p) { return Scalar(db, "PRAGMA " + p); }

class LedgerTest : public ::testing::Test {
 protected:
  void SetUp() override { dir_ = testing::FreshDir("ledger"); }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path dir_;
};

contract::Contract SmallContract() {
  contract::Contract c;
  c.set_name("c");
  c.set_operation("gemm_bf16_tn");
  return c;
}

TEST_F(LedgerTest, NewFileHasIdentityWalAndSchema) {
  const fs::path db = dir_ / "l.db";
  { ASSERT_TRUE(ledger::Ledger::Open(db.string()).ok()); }
  EXPECT_EQ(Pragma(db, "application_id"), ledger::kApplicationId);
  EXPECT_EQ(Pragma(db, "user_version"), ledger::kSchemaVersion);
  sqlite3* raw = nullptr;
  sqlite3_open(db.c_str(), &raw);
  sqlite3_stmt* s = nullptr;
  sqlite3_prepare_v2(raw, "PRAGMA journal_mode", -1, &s, nullptr);
  ASSERT_EQ(sqlite3_step(s), SQLITE_ROW);
  EXPECT_STREQ(reinterpret_cast<const char*>(sqlite3_column_text(s, 0)), "wal");
  sqlite3_finalize(s);
  sqlite3_close(raw);
  // Reopening an existing ledger works and keeps its rows.
  {
    auto l = ledger::Ledger::Open(db.string());
    ASSERT_TRUE(l.ok());
    ASSERT_TRUE((*l)->contracts().Insert("ct-1", SmallContract()).ok());
  }
  auto again = ledger::Ledger::Open(db.string());
  ASSERT_TRUE(again.ok());
  EXPECT_TRUE((*again)->contracts().Get("ct-1").ok());
}

TEST_F(LedgerTest, ContractsAreImmutable) {
  const fs::path db = dir_ / "l.db";
  {
    auto l = ledger::Ledger::Open(db.string());
    ASSERT_TRUE(l.ok());
    auto existed = (*l)->contracts().Insert("ct-1", SmallContract());
    ASSERT_TRUE(existed.ok());
    EXPECT_FALSE(*existed);
    contract::Contract changed = SmallContract();
    changed.set_name("other");
    // Same id again is not an update: the stored body stays.
    EXPECT_TRUE(*(*l)->contracts().Insert("ct-1", changed));
    EXPECT_EQ((*l)->contracts().Get("ct-1")->name(), "c");
  }
  std::string err;
  EXPECT_NE(Exec(db, "UPDATE contracts SET name = 'x'", &err), SQLITE_OK);
  EXPECT_NE(err.find("contracts are immutable"), std::string::npos) << err;
  EXPECT_NE(Exec(db, "DELETE FROM contracts", &err), SQLITE_OK);
}

TEST_F(LedgerTest, JobAttemptsAreRecordedExactlyOnce) {
  auto l = ledger::Ledger::Open((dir_ / "l.db").string());
  ASSERT_TRUE(l.ok());
  ASSERT_TRUE((*l)->jobs().Recover("boot-a", 3).ok());
  auto id = (*l)->jobs().Enqueue("cand", ledger::JobKind::kCompile, "req");
  ASSERT_TRUE(id.ok());
  ASSERT_TRUE((*l)->jobs().MarkRunning(*id, 123).ok());
  EXPECT_FALSE((*l)->jobs().MarkRunning(*id, 124).ok()) << "a running job cannot be taken twice";
  ASSERT_TRUE((*l)->jobs().Finish(*id, true, "").ok());
  // A job ends once: finishing it again records nothing (UNIQUE(job_id, attempt) backs that).
  EXPECT_TRUE((*l)->jobs().Finish(*id, false, "late").ok());
  EXPECT_EQ((*l)->jobs().Get(*id)->state, ledger::JobState::kDone);
  EXPECT_EQ(Scalar(dir_ / "l.db", "SELECT COUNT(*) FROM job_attempts"), 1);
}

// Each attempt names the lane's device it ran on, and the job names its latest; the queue's rows
// carry their candidate (the lanes' admission reads the contract through it).
TEST_F(LedgerTest, EachAttemptNamesItsDevice) {
  auto l = ledger::Ledger::Open((dir_ / "l.db").string());
  ASSERT_TRUE(l.ok());
  ASSERT_TRUE((*l)->jobs().Recover("boot-a", 3).ok());
  auto id = (*l)->jobs().Enqueue("cand-7", ledger::JobKind::kValidate, "req");
  ASSERT_TRUE(id.ok());
  auto queued = (*l)->jobs().Queued();
  ASSERT_TRUE(queued.ok());
  ASSERT_EQ(queued->size(), 1u);
  EXPECT_EQ(queued->front().candidate_id, "cand-7");
  EXPECT_EQ(queued->front().contract_id, "") << "its candidate is not in the ledger";
  ASSERT_TRUE((*l)->jobs().MarkRunning(*id, 1, "GPU-aaaa").ok());
  EXPECT_EQ((*l)->jobs().Get(*id)->device, "GPU-aaaa");
  ASSERT_TRUE((*l)->jobs().RetryLater(*id, "the machine failed", 0).ok());
  ASSERT_TRUE((*l)->jobs().MarkRunning(*id, 2, "GPU-bbbb").ok());
  ASSERT_TRUE((*l)->jobs().Finish(*id, true, "").ok());
  EXPECT_EQ((*l)->jobs().Get(*id)->device, "GPU-bbbb");
  EXPECT_EQ(Text(dir_ / "l.db",
                 "SELECT group_concat(attempt || '=' || outcome || '@' || device, ' ') FROM "
                 "(SELECT * FROM job_attempts ORDER BY attempt)"),
            "1=INFRA@GPU-aaaa 2=DONE@GPU-bbbb");
}

TEST_F(LedgerTest, RestartRequeuesRunningJobsThenBlocksThemNeverFails) {
  const fs::path db = dir_ / "l.db";
  int64_t job = 0;
  {
    auto l = ledger::Ledger::Open(db.string());
    ASSERT_TRUE((*l)->jobs().Recover("boot-1", 2).ok());
    job = *(*l)->jobs().Enqueue("cand", ledger::JobKind::kCompile, "req");
    ASSERT_TRUE((*l)->jobs().Enqueue("cand2", ledger::JobKind::kCompile, "req").ok());
    ASSERT_TRUE((*l)->jobs().MarkRunning(job, 1).ok());
  }  // the daemon dies with job RUNNING
  {
    auto l = ledger::Ledger::Open(db.string());
    auto rec = (*l)->jobs().Recover("boot-2", 2);
    ASSERT_TRUE(rec.ok());
    EXPECT_EQ(rec->requeued, 1);
    EXPECT_EQ(rec->queued, 2);
    EXPECT_EQ((*l)->jobs().Get(job)->state, ledger::JobState::kQueued);
    ASSERT_TRUE((*l)->jobs().MarkRunning(job, 2).ok());
  }  // dies again: attempt 2 of 2
  auto l = ledger::Ledger::Open(db.string());
  auto rec = (*l)->jobs().Recover("boot-3", 2);
  ASSERT_TRUE(rec.ok());
  EXPECT_EQ(rec->blocked, 1);
  const ledger::Job j = *(*l)->jobs().Get(job);
  EXPECT_EQ(j.state, ledger::JobState::kBlocked) << "a crashing daemon is no verdict on the job";
  EXPECT_EQ(j.error,
            "interrupted by daemon crashes in 2 of 2 allowed attempts; blocked until retried "
            "(cakectl retry cand)");
  ASSERT_EQ(rec->gave_up.size(), 1u);
  EXPECT_EQ(rec->gave_up[0].id, job);
  EXPECT_EQ(rec->interrupted.size(), 1u);
  auto events = (*l)->events().After(0, 100);
  int requeued = 0;
  for (const auto& e : *events) requeued += e.kind == "job_requeued";
  EXPECT_EQ(requeued, 1);
}

TEST_F(LedgerTest, RefusesForeignNewerAndCorruptFilesWithoutTouchingThem) {
  const fs::path foreign = dir_ / "foreign.db";
  ASSERT_EQ(Exec(foreign, "PRAGMA application_id = 7; CREATE TABLE t(x);"), SQLITE_OK);
  const auto size = fs::file_size(foreign);
  auto f = ledger::Ledger::Open(foreign.string());
  ASSERT_FALSE(f.ok());
  EXPECT_EQ(f.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(f.status().message().find("another application"), absl::string_view::npos);
  EXPECT_EQ(fs::file_size(foreign), size);
  EXPECT_EQ(Pragma(foreign, "application_id"), 7);

  const fs::path newer = dir_ / "newer.db";
  { ASSERT_TRUE(ledger::Ledger::Open(newer.string()).ok()); }
  ASSERT_EQ(Exec(newer, "PRAGMA user_version = 99"), SQLITE_OK);
  auto n = ledger::Ledger::Open(newer.string());
  ASSERT_FALSE(n.ok());
  EXPECT_NE(n.status().message().find("newer"), absl::string_view::npos);
  EXPECT_EQ(Pragma(newer, "user_version"), 99);

  const fs::path junk = dir_ / "junk.db";
  std::ofstream(junk) << std::string(4096, '\x5a');
  auto j = ledger::Ledger::Open(junk.string());
  ASSERT_FALSE(j.ok());
  EXPECT_EQ(testing::ReadText(junk), std::string(4096, '\x5a'));
}

TEST_F(LedgerTest, CandidatesDeduplicateByScheduleHashAndKeepTheirEvidence) {
  auto l = ledger::Ledger::Open((dir_ / "l.db").string());
  ASSERT_TRUE((*l)->contracts().Insert("ct-1", SmallContract()).ok());
  evidence::Candidate c;
  c.set_contract_id("ct-1");
  c.set_schedule_hash(std::string(64, 'a'));
  c.set_schedule_text("x");
  c.set_state(evidence::PROPOSED);
  c.set_proposer("agent");
  c.mutable_hypothesis()->set_expected_effect("faster");
  auto first = (*l)->candidates().Insert(c, "k1");
  ASSERT_TRUE(first.ok());
  EXPECT_FALSE(first->existed);
  auto dup = (*l)->candidates().Insert(c, "");
  EXPECT_TRUE(dup->existed);
  EXPECT_EQ(dup->id, first->id);
  evidence::Validation v;
  v.set_passed(true);
  ASSERT_TRUE((*l)->evidence().PutValidation(first->id, 1, v).ok());
  ASSERT_TRUE(
      (*l)->candidates()
          .SetState(first->id, evidence::VALIDATED, evidence::CANDIDATE_STATE_UNSPECIFIED, "")
          .ok());
  evidence::Measurement m;
  m.set_incumbent("c0");
  evidence::RowTiming* row = m.add_rows();
  row->set_row("r");
  for (int i = 0; i < 4; ++i) {
    row->add_incumbent_us(100 + i);
    row->add_challenger_us(90 + i);
    row->add_challenger_first(i % 2);
  }
  ASSERT_TRUE((*l)->evidence().PutMeasurement(first->id, m).ok());
  auto got = (*l)->candidates().Get(first->id);
  ASSERT_TRUE(got.ok());
  EXPECT_EQ(got->state(), evidence::VALIDATED);
  EXPECT_TRUE(got->validation().passed());
  EXPECT_EQ(got->hypothesis().expected_effect(), "faster");
  ASSERT_EQ(got->measurements_size(), 1);
  EXPECT_EQ(got->measurements(0).rows(0).challenger_us_size(), 4);
  EXPECT_EQ((*l)->candidates().Get("nope").status().code(), absl::StatusCode::kNotFound);
}

}  // namespace
}  // namespace cake

namespace cake {
namespace {

// A contract "ct" with one candidate.
absl::StatusOr<ledger::CandidateStore::Inserted> InsertOneCandidate(ledger::Ledger& l) {
  if (auto s = l.contracts().Insert("ct", SmallContract()); !s.ok()) return s.status();
  evidence::Candidate cand;
  cand.set_contract_id("ct");
  cand.set_schedule_hash("h");
  cand.set_schedule_text("t");
  cand.set_proposer("agent");
  return l.candidates().Insert(cand, "");
}

// The ledger of the H200 demo round (evidence/demo_round/ledger.db) was written by schema v1.
// Opening a copy migrates it in place: every row kept, v2 tables and columns added.
TEST_F(LedgerTest, MigratesARealVersionOneLedgerWithoutLosingRows) {
  const fs::path db = dir_ / "v1.db";
  fs::copy_file(testing::SourceDir() / "evidence/demo_round/ledger.db", db);
  ASSERT_EQ(Pragma(db, "user_version"), 1);
  auto count = [&](const std::string& table) {
    return Scalar(db, "SELECT COUNT(*) FROM " + table);
  };
  const int64_t samples = count("measurement_samples"), candidates = count("candidates");
  ASSERT_GT(samples, 0);
  // The recorded hypotheses name no parent; give one a parent so the v5 key has work to do.
  evidence::Hypothesis with_parent;
  with_parent.set_parent("c1-1b15bcce");
  with_parent.add_changed_decisions("Tile 128x128x32");
  const std::string blob = with_parent.SerializeAsString();
  std::string hex;
  for (unsigned char ch : blob) hex += absl::StrFormat("%02X", ch);
  std::string err;
  ASSERT_EQ(
      Exec(db, "UPDATE hypotheses SET body = X'" + hex + "' WHERE candidate_id = 'c2-b92654b5'",
           &err),
      SQLITE_OK)
      << err;
  {
    auto l = ledger::Ledger::Open(db.string());
    ASSERT_TRUE(l.ok()) << l.status();
    auto all = (*l)->candidates().List("", 0);
    ASSERT_TRUE(all.ok()) << all.status();
    EXPECT_EQ(int64_t(all->candidates.size()), candidates);
    EXPECT_FALSE(all->more);
    int64_t measured = 0;
    for (const auto& c : all->candidates) {
      measured += c.measurements_size();
      EXPECT_TRUE(c.evidence().empty()) << "v1 kept no separate records";
    }
    EXPECT_GT(measured, 0);
    // v4: the GEMM-only shapes became the gemm_bf16 arm of ProblemShape, values kept.
    auto contracts = (*l)->contracts().List();
    ASSERT_TRUE(contracts.ok());
    ASSERT_FALSE(contracts->empty());
    for (const auto& [id, c] : *contracts) {
      for (const auto& row : c.rows()) {
        EXPECT_TRUE(row.problem().has_gemm_bf16()) << row.name();
        EXPECT_GT(row.problem().gemm_bf16().m(), 0) << row.name();
        EXPECT_GT(row.problem().gemm_bf16().k(), 0) << row.name();
      }
      EXPECT_EQ(c.rows(0).GetReflection()->GetUnknownFields(c.rows(0)).field_count(), 0);
    }
    int64_t checks = 0;
    for (const auto& c : all->candidates)
      for (const auto& rc : c.validation().rows()) {
        EXPECT_GT(rc.problem().gemm_bf16().n(), 0) << rc.row();
        ++checks;
      }
    EXPECT_GT(checks, 0);
    // v5: every earlier candidate is on "main", and its hypothesis (if any) got its key.
    for (const auto& c : all->candidates) EXPECT_EQ(c.branch(), "main") << c.id();
    auto branches = (*l)->candidates().Branches(all->candidates[0].contract_id());
    ASSERT_TRUE(branches.ok()) << branches.status();
    ASSERT_EQ(branches->size(), 1u);
    EXPECT_EQ((*branches)[0].name, "main");
  }
  EXPECT_EQ(Scalar(db,
                   "SELECT COUNT(*) FROM candidates WHERE id = 'c2-b92654b5' AND "
                   "hypothesis_key = '" +
                       ledger::HypothesisKey(with_parent) + "'"),
            1)
      << "an old hypothesis with a parent gets its key";
  EXPECT_EQ(Pragma(db, "user_version"), ledger::kSchemaVersion);
  EXPECT_EQ(count("measurement_samples"), samples);
  EXPECT_EQ(count("evidence_records"), 0);
  EXPECT_EQ(Exec(db,
                 "SELECT discarded, incumbent_sm_mhz, incumbent_span_us FROM "
                 "measurement_samples LIMIT 1",
                 &err),
            SQLITE_OK)
      << err;
}

TEST(HypothesisKeyTest, SameParentDecisionsAndEffectInAnyOrderAndCaseMatch) {
  evidence::Hypothesis a, b;
  a.set_parent("c1");
  a.add_changed_decisions("tile 128x64");
  a.add_changed_decisions("stages");
  a.set_expected_effect("one wording");
  b.set_parent("c1");
  b.add_changed_decisions("STAGES ");
  b.add_changed_decisions("tile   128x64");
  b.add_changed_decisions("stages");
  b.set_expected_effect("One   WORDING ");
  EXPECT_EQ(ledger::HypothesisKey(a), ledger::HypothesisKey(b));
  b.set_expected_effect("another wording");
  EXPECT_NE(ledger::HypothesisKey(a), ledger::HypothesisKey(b)) << "another claimed effect";
  b.set_expected_effect("one wording");
  EXPECT_FALSE(ledger::HypothesisKey(a).empty());
  b.set_parent("c2");
  EXPECT_NE(ledger::HypothesisKey(a), ledger::HypothesisKey(b));
  b.set_parent("c1");
  b.add_changed_decisions("swizzle");
  EXPECT_NE(ledger::HypothesisKey(a), ledger::HypothesisKey(b));
  a.clear_parent();
  EXPECT_EQ(ledger::HypothesisKey(a), "") << "no parent: nothing to match";
}

TEST_F(LedgerTest, BranchesKeepTheirOwnHistoryAndFailuresAreFoundByHypothesis) {
  auto l = ledger::Ledger::Open((dir_ / "l.db").string());
  ASSERT_TRUE(l.ok());
  ASSERT_TRUE((*l)->contracts().Insert("ct", SmallContract()).ok());
  auto propose = [&](const std::string& hash, const std::string& branch,
                     const std::string& parent) {
    evidence::Candidate c;
    c.set_contract_id("ct");
    c.set_schedule_hash(hash);
    c.set_schedule_text("t");
    c.set_proposer("agent");
    c.set_branch(branch);
    c.mutable_hypothesis()->set_parent(parent);
    c.mutable_hypothesis()->add_changed_decisions("tile");
    auto ins = (*l)->candidates().Insert(c, "");
    EXPECT_TRUE(ins.ok()) << ins.status();
    return ins.ok() ? ins->id : "";
  };
  const std::string root = propose("h0", "", "");
  const std::string a1 = propose("h1", "", root);
  const std::string b1 = propose("h2", "sweep/b", a1);
  const std::string b2 = propose("h3", "sweep/b", b1);
  auto head = (*l)->candidates().HeadOf(b2);
  ASSERT_TRUE(head.ok());
  EXPECT_EQ(head->branch, "sweep/b");
  EXPECT_GT(head->seq, (*l)->candidates().HeadOf(b1)->seq);
  EXPECT_EQ((*l)->candidates().HeadOf("nope").status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(*(*l)->candidates().CountOnBranch("ct", "sweep/b"), 2);
  EXPECT_EQ(*(*l)->candidates().CountOnBranch("ct", "main"), 2);
  auto branches = (*l)->candidates().Branches("ct");
  ASSERT_TRUE(branches.ok());
  ASSERT_EQ(branches->size(), 2u);
  EXPECT_EQ((*branches)[0].name, "main");
  EXPECT_EQ((*branches)[1].name, "sweep/b");
  EXPECT_EQ((*branches)[1].first, b1);
  EXPECT_EQ((*branches)[1].head, b2);
  EXPECT_EQ((*branches)[1].forked_from, a1);
  auto only_b = (*l)->candidates().List("ct", 10, 0, "sweep/b");
  ASSERT_TRUE(only_b.ok());
  ASSERT_EQ(only_b->candidates.size(), 2u);
  EXPECT_EQ(only_b->candidates[0].id(), b2);
  EXPECT_EQ(only_b->candidates[0].branch(), "sweep/b");

  // A failure is found by its hypothesis key: rejected or measured-not-faster, newest first.
  evidence::Hypothesis h;
  h.set_parent(a1);
  h.add_changed_decisions("tile");
  const std::string key = ledger::HypothesisKey(h);
  EXPECT_FALSE((*l)->candidates().LatestFailure("ct", key)->has_value()) << "nothing failed yet";
  ASSERT_TRUE((*l)->candidates()
                  .SetState(b1, evidence::REJECTED, evidence::ANALYZED, "DIAG_X at tile")
                  .ok());
  auto failed = (*l)->candidates().LatestFailure("ct", key);
  ASSERT_TRUE(failed.ok() && failed->has_value());
  EXPECT_EQ((*failed)->id, b1);
  EXPECT_EQ((*failed)->status_note, "DIAG_X at tile");
  EXPECT_FALSE((*l)->candidates().LatestFailure("other", key)->has_value()) << "per contract";
  EXPECT_FALSE((*l)->candidates().LatestFailure("ct", "")->has_value());
  // A failed compile says nothing of the hypothesis: it is a failure, not a refutation.
  ASSERT_TRUE((*l)->candidates()
                  .SetState(b2, evidence::REJECTED, evidence::COMPILED, "worker killed")
                  .ok());
  evidence::Hypothesis h2 = h;
  h2.set_parent(b1);
  EXPECT_FALSE((*l)->candidates().LatestFailure("ct", ledger::HypothesisKey(h2))->has_value());
  auto recent = (*l)->candidates().Failures("ct", 5);
  ASSERT_TRUE(recent.ok());
  ASSERT_EQ(recent->size(), 2u);
  EXPECT_EQ((*recent)[0].id, b2) << "newest first";
  EXPECT_EQ((*recent)[0].rejected_at, evidence::COMPILED);
  EXPECT_EQ((*recent)[1].id, b1);
  EXPECT_EQ((*l)->candidates().Failures("ct", 1)->size(), 1u);
  EXPECT_EQ(*(*l)->candidates().Oldest("ct"), root);
  EXPECT_EQ(*(*l)->candidates().Oldest("none"), "");
  EXPECT_EQ((*l)->candidates().HypothesisOf(b2)->parent(), b1);
}

TEST_F(LedgerTest, EvidenceRecordsKeepHistoryAndServeTheLatestPerKind) {
  auto l = ledger::Ledger::Open((dir_ / "l.db").string());
  ASSERT_TRUE(l.ok());
  auto ins = InsertOneCandidate(**l);
  ASSERT_TRUE(ins.ok()) << ins.status();
  evidence::EvidenceRecord r;
  r.set_kind(evidence::SANITIZER);
  r.set_tool("racecheck");
  r.set_status(evidence::FAILED);
  r.set_created_unix_ms(1000);
  ASSERT_TRUE((*l)->evidence().PutRecord(ins->id, 7, r).ok());
  r.set_status(evidence::PASSED);
  r.set_created_unix_ms(2000);
  ASSERT_TRUE((*l)->evidence().PutRecord(ins->id, 9, r).ok());
  r.set_kind(evidence::NUMERICAL_CONTRACT);
  r.clear_tool();
  ASSERT_TRUE((*l)->evidence().PutRecord(ins->id, 9, r).ok());
  auto latest = (*l)->evidence().LatestRecords(ins->id);
  ASSERT_TRUE(latest.ok());
  ASSERT_EQ(latest->size(), 2u);
  for (const auto& rec : *latest) {
    EXPECT_EQ(rec.status(), evidence::PASSED);
    EXPECT_EQ(rec.job_id(), 9);
  }
  auto got = (*l)->candidates().Get(ins->id);
  ASSERT_TRUE(got.ok());
  EXPECT_EQ(got->evidence_size(), 2);
  EXPECT_EQ(Pragma(dir_ / "l.db", "user_version"), ledger::kSchemaVersion);
}

TEST_F(LedgerTest, InvalidRunsAndEverySampleAreStored) {
  const fs::path db = dir_ / "l.db";
  auto l = ledger::Ledger::Open(db.string());
  ASSERT_TRUE(l.ok());
  auto ins = InsertOneCandidate(**l);
  ASSERT_TRUE(ins.ok());
  evidence::Measurement m;
  m.set_incumbent("c0");
  m.set_invalid(true);
  m.set_invalid_reason("row r (eager/cold): cuLaunchKernel failed: CUDA_ERROR_ILLEGAL_ADDRESS");
  m.set_verdict(evidence::INVALID);
  evidence::RowTiming* row = m.add_rows();
  row->set_row("r");
  row->set_mode("graph");
  row->set_cache("cold");
  for (int i = 0; i < 3; ++i) {
    row->add_incumbent_us(100 + i);
    row->add_challenger_us(99 + i);
    row->add_challenger_first(i % 2);
    row->add_discarded(i == 1);
    row->add_incumbent_sm_mhz(i == 2 ? NAN : 1980.f);
  }
  ASSERT_TRUE((*l)->evidence().PutMeasurement(ins->id, m).ok());
  sqlite3* raw = nullptr;
  sqlite3_open(db.c_str(), &raw);
  sqlite3_stmt* s = nullptr;
  sqlite3_prepare_v2(raw,
                     "SELECT m.invalid, m.invalid_reason, s.mode, s.discarded, s.incumbent_sm_mhz "
                     "FROM measurement_samples s JOIN measurements m ON m.id = s.measurement_id "
                     "ORDER BY s.pair",
                     -1, &s, nullptr);
  int rows = 0;
  while (sqlite3_step(s) == SQLITE_ROW) {
    EXPECT_EQ(sqlite3_column_int(s, 0), 1);
    EXPECT_NE(std::string(reinterpret_cast<const char*>(sqlite3_column_text(s, 1)))
                  .find("ILLEGAL_ADDRESS"),
              std::string::npos);
    EXPECT_STREQ(reinterpret_cast<const char*>(sqlite3_column_text(s, 2)), "graph");
    EXPECT_EQ(sqlite3_column_int(s, 3), rows == 1 ? 1 : 0);
    EXPECT_EQ(sqlite3_column_type(s, 4), rows == 2 ? SQLITE_NULL : SQLITE_FLOAT);
    ++rows;
  }
  sqlite3_finalize(s);
  sqlite3_close(raw);
  EXPECT_EQ(rows, 3);
}

// A job the machine failed waits out its backoff, is counted, and once BLOCKED comes back only
// by Unblock, its count reset.
TEST_F(LedgerTest, MachineFailuresRetryLaterThenBlockUntilUnblocked) {
  auto l = ledger::Ledger::Open((dir_ / "l.db").string());
  ASSERT_TRUE(l.ok());
  auto& jobs = (*l)->jobs();
  ASSERT_TRUE(jobs.Recover("boot-1", 3).ok());
  const int64_t job = *jobs.Enqueue("cand", ledger::JobKind::kCompile, "req");
  ASSERT_TRUE(jobs.MarkRunning(job, 1).ok());
  ASSERT_TRUE(jobs.RetryLater(job, "No space left on device", ledger::NowMs() + 400).ok());
  EXPECT_EQ(jobs.Get(job)->state, ledger::JobState::kQueued);
  EXPECT_EQ(jobs.Get(job)->infra_failures, 1);
  EXPECT_TRUE(jobs.Queued()->empty()) << "a job waiting out its backoff is not handed out";
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  ASSERT_EQ(jobs.Queued()->size(), 1u);
  ASSERT_TRUE(jobs.MarkRunning(job, 2).ok());
  ASSERT_TRUE(jobs.Block(job, "No space left on device").ok());
  EXPECT_EQ(jobs.Get(job)->state, ledger::JobState::kBlocked);
  EXPECT_EQ(jobs.Get(job)->infra_failures, 2);
  EXPECT_TRUE(jobs.Queued()->empty());
  ASSERT_EQ(jobs.Blocked()->size(), 1u);
  EXPECT_EQ(*jobs.Unblock("other"), 0);
  EXPECT_EQ(*jobs.Unblock("cand"), 1);
  EXPECT_EQ(jobs.Get(job)->state, ledger::JobState::kQueued);
  EXPECT_EQ(jobs.Get(job)->infra_failures, 0);
  EXPECT_EQ(jobs.Queued()->size(), 1u);
  EXPECT_EQ(Scalar(dir_ / "l.db", "SELECT COUNT(*) FROM job_attempts WHERE outcome = 'INFRA'"), 2);
}

TEST_F(LedgerTest, AGracefulStopDoesNotCountAgainstTheAttempts) {
  const fs::path db = dir_ / "l.db";
  int64_t job = 0;
  {
    auto l = ledger::Ledger::Open(db.string());
    ASSERT_TRUE((*l)->jobs().Recover("boot-1", 1).ok());
    job = *(*l)->jobs().Enqueue("cand", ledger::JobKind::kCompile, "req");
    for (int stop = 0; stop < 3; ++stop) {
      ASSERT_TRUE((*l)->jobs().MarkRunning(job, 10 + stop).ok());
      ASSERT_TRUE((*l)->jobs().RequeueAfterShutdown(job).ok());
      EXPECT_EQ((*l)->jobs().Get(job)->state, ledger::JobState::kQueued);
    }
    ASSERT_TRUE((*l)->jobs().MarkRunning(job, 20).ok());
  }  // then a crash
  auto l = ledger::Ledger::Open(db.string());
  auto rec = (*l)->jobs().Recover("boot-2", 2);
  ASSERT_TRUE(rec.ok());
  EXPECT_EQ(rec->requeued, 1) << "three graceful stops and one crash: 1 of 2 attempts used";
  EXPECT_EQ(Scalar(db, "SELECT COUNT(*) FROM job_attempts WHERE outcome = 'SHUTDOWN'"), 3);
  ASSERT_EQ(rec->interrupted.size(), 1u);
  EXPECT_EQ(rec->interrupted[0].worker_pid, 20) << "the worker pid is what recovery kills";
}

TEST_F(LedgerTest, AnActiveJobIsQueuedOrRunningAndOfItsKind) {
  auto l = ledger::Ledger::Open((dir_ / "l.db").string());
  ASSERT_TRUE(l.ok());
  ASSERT_TRUE((*l)->jobs().Recover("boot-1", 1).ok());
  auto& jobs = (*l)->jobs();
  EXPECT_EQ(*jobs.ActiveJob("cand", ledger::JobKind::kMeasure), 0);
  const int64_t compile = *jobs.Enqueue("cand", ledger::JobKind::kCompile, "req");
  EXPECT_EQ(*jobs.ActiveJob("cand", ledger::JobKind::kMeasure), 0) << "another kind";
  const int64_t measure = *jobs.Enqueue("cand", ledger::JobKind::kMeasure, "req");
  *jobs.Enqueue("other", ledger::JobKind::kMeasure, "req");
  EXPECT_EQ(*jobs.ActiveJob("cand", ledger::JobKind::kMeasure), measure);
  ASSERT_TRUE(jobs.MarkRunning(measure, 42).ok());
  EXPECT_EQ(*jobs.ActiveJob("cand", ledger::JobKind::kMeasure), measure) << "running is active";
  ASSERT_TRUE(jobs.Finish(measure, true, "").ok());
  EXPECT_EQ(*jobs.ActiveJob("cand", ledger::JobKind::kMeasure), 0) << "finished is not";
  EXPECT_EQ(*jobs.ActiveJob("cand", ledger::JobKind::kCompile), compile);
}

// A search's row survives a reopen; only running ones are resumed; calibrations come newest
// first per device and operation; ids are unique and an unknown one is NOT_FOUND.
TEST_F(LedgerTest, SearchesAndCalibrationsPersist) {
  const std::string path = (dir_ / "l.db").string();
  {
    auto l = ledger::Ledger::Open(path);
    ASSERT_TRUE(l.ok());
    contract::Contract c;
    c.set_name("s");
    ASSERT_TRUE((*l)->contracts().Insert("ct-s", c).ok());
    ledger::SearchStore& s = (*l)->searches();
    ASSERT_TRUE(s.Insert({"s-1", "ct-s", "running", 1000, std::string("a\0b", 3)}).ok());
    ASSERT_TRUE(s.Insert({"s-2", "ct-s", "running", 2000, "x"}).ok());
    EXPECT_EQ(s.Insert({"s-1", "ct-s", "running", 1, "y"}).code(),
              absl::StatusCode::kAlreadyExists);
    EXPECT_FALSE(s.Insert({"s-3", "ct-nothing", "running", 1, "y"}).ok()) << "unknown contract";
    EXPECT_FALSE(s.Insert({"s-4", "ct-s", "paused", 1, "y"}).ok()) << "unknown state";
    ASSERT_TRUE(s.Update("s-2", "finished", "done").ok());
    EXPECT_EQ(s.Update("s-9", "finished", "z").code(), absl::StatusCode::kNotFound);
    for (int i = 1; i <= 3; ++i)
      ASSERT_TRUE(s.AddCalibration({"GPU A", "gemm_bf16_tn", "ct-s", "s-1", 10 * i, 0.1 * i,
                                    absl::StrCat("body", i)})
                      .ok());
    ASSERT_TRUE(s.AddCalibration({"GPU B", "gemm_bf16_tn", "ct-s", "s-1", 99, 0.9, "b"}).ok());
  }
  auto l = ledger::Ledger::Open(path);
  ASSERT_TRUE(l.ok());
  auto running = (*l)->searches().Running();
  ASSERT_TRUE(running.ok());
  ASSERT_EQ(running->size(), 1u);
  EXPECT_EQ(running->front().id, "s-1");
  EXPECT_EQ(running->front().body, std::string("a\0b", 3));
  EXPECT_EQ(running->front().deadline_ms, 1000);
  auto done = (*l)->searches().Get("s-2");
  ASSERT_TRUE(done.ok());
  EXPECT_EQ(done->state, "finished");
  EXPECT_EQ(done->body, "done");
  EXPECT_EQ((*l)->searches().Get("s-9").status().code(), absl::StatusCode::kNotFound);
  auto cal = (*l)->searches().Calibrations("GPU A", "gemm_bf16_tn", 2);
  ASSERT_TRUE(cal.ok());
  ASSERT_EQ(cal->size(), 2u);
  EXPECT_EQ((*cal)[0].samples, 30);
  EXPECT_DOUBLE_EQ((*cal)[0].held_out_tau, 0.3);
  EXPECT_EQ((*cal)[1].body, "body2");
}

TEST_F(LedgerTest, MeasureKeysMapToTheirFirstJob) {
  auto l = ledger::Ledger::Open((dir_ / "l.db").string());
  ASSERT_TRUE(l.ok());
  contract::Contract c;
  c.set_name("k");
  ASSERT_TRUE((*l)->contracts().Insert("ct-k", c).ok());
  evidence::Candidate cand;
  cand.set_contract_id("ct-k");
  cand.set_schedule_hash("ab12cd34ef");
  cand.set_proposer("agent");
  auto ins = (*l)->candidates().Insert(cand, "");
  ASSERT_TRUE(ins.ok());
  EXPECT_FALSE((*l)->jobs().MeasureForKey("m1")->has_value());
  ASSERT_TRUE((*l)->jobs().InsertMeasureRequest("m1", ins->id, 77).ok());
  auto prior = (*l)->jobs().MeasureForKey("m1");
  ASSERT_TRUE(prior.ok() && prior->has_value());
  EXPECT_EQ((*prior)->first, ins->id);
  EXPECT_EQ((*prior)->second, 77);
  // A second insert of one key is a conflict the caller sees as ALREADY_EXISTS.
  EXPECT_EQ((*l)->jobs().InsertMeasureRequest("m1", ins->id, 78).code(),
            absl::StatusCode::kAlreadyExists);
}

TEST_F(LedgerTest, StoredValuesAreBounded) {
  auto l = ledger::Ledger::Open((dir_ / "l.db").string());
  ASSERT_TRUE(l.ok());
  auto id = (*l)->jobs().Enqueue("cand", ledger::JobKind::kCompile,
                                 std::string(ledger::kMaxBoundBytes + 1, 'x'));
  ASSERT_FALSE(id.ok());
  EXPECT_EQ(id.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ((*l)->jobs().Count(ledger::JobState::kQueued).value(), 0) << "nothing half-stored";
}

TEST_F(LedgerTest, AVersionTwoLedgerGetsContractDigestsAndRefusesAFlippedBit) {
  const fs::path db = dir_ / "l.db";
  {
    auto l = ledger::Ledger::Open(db.string());
    contract::Contract c;
    c.set_name("digest");
    c.set_baseline_schedule("name: \"x\"");
    ASSERT_TRUE((*l)->contracts().Insert("ct-d", c).ok());
  }
  // Make it look like schema v2 (no digest column), as a ledger of the previous release.
  ASSERT_EQ(Exec(db,
                 "DROP TABLE searches; DROP TABLE calibrations; DROP TABLE portfolio_manifests; "
                 "DROP TABLE measure_requests; DROP TABLE write_probe; DROP TRIGGER "
                 "contracts_immutable_update; DROP TRIGGER contracts_immutable_delete; ALTER TABLE "
                 "contracts DROP COLUMN body_sha256; CREATE TRIGGER contracts_immutable_update "
                 "BEFORE UPDATE ON contracts BEGIN SELECT RAISE(ABORT, 'immutable'); END; "
                 "CREATE TRIGGER contracts_immutable_delete BEFORE DELETE ON contracts BEGIN "
                 "SELECT RAISE(ABORT, 'immutable'); END; DROP INDEX candidates_by_branch; DROP "
                 "INDEX candidates_by_hypothesis; DROP INDEX events_by_candidate; ALTER TABLE "
                 "candidates DROP COLUMN branch; ALTER TABLE candidates DROP COLUMN "
                 "hypothesis_key; ALTER TABLE jobs DROP COLUMN not_before_ms; ALTER TABLE jobs "
                 "DROP COLUMN infra_failures; ALTER TABLE jobs DROP COLUMN device; ALTER TABLE "
                 "job_attempts DROP COLUMN device; PRAGMA user_version = 2;"),
            SQLITE_OK);
  {
    auto l = ledger::Ledger::Open(db.string());
    ASSERT_TRUE(l.ok()) << l.status();
    auto c = (*l)->contracts().Get("ct-d");
    ASSERT_TRUE(c.ok()) << c.status();
    EXPECT_EQ(c->name(), "digest");
  }
  EXPECT_EQ(Pragma(db, "user_version"), ledger::kSchemaVersion);
  EXPECT_EQ(Scalar(db, "SELECT length(body_sha256) FROM contracts"), 64);
  std::string err;
  EXPECT_NE(Exec(db, "UPDATE contracts SET name = 'x'", &err), SQLITE_OK) << "triggers restored";
  ASSERT_EQ(Exec(db,
                 "DROP TRIGGER contracts_immutable_update; UPDATE contracts SET body = "
                 "CAST('garbage' AS BLOB);"),
            SQLITE_OK);
  auto l = ledger::Ledger::Open(db.string());
  ASSERT_TRUE(l.ok()) << l.status();
  auto c = (*l)->contracts().Get("ct-d");
  EXPECT_EQ(c.status().code(), absl::StatusCode::kDataLoss);
  std::vector<std::string> corrupt;
  auto all = (*l)->contracts().List(&corrupt);
  ASSERT_TRUE(all.ok());
  EXPECT_TRUE(all->empty());
  EXPECT_EQ(corrupt, std::vector<std::string>{"ct-d"});
}

}  // namespace
}  // namespace cake
