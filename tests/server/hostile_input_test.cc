// Regression tests of the hostile-input and fault defects, one test each, with a real caked,
// real workers and a real SQLite ledger: deep nesting, unbounded fields, list size, empty
// schedules, concurrent idempotency, stuck candidates, file modes, keyed contract ids, a flipped
// contract bit, start-up faults (a directory, a 0-byte token, a read-only ledger, a full disk),
// graceful stop inside the unit's timeout, and cakectl's handling of a bad token file.
#include <gtest/gtest.h>
#include <sqlite3.h>
#include <sys/stat.h>

#include <set>
#include <thread>

#include "absl/strings/str_cat.h"
#include "base/digest.h"
#include "base/subprocess.h"
#include "compiler/canonical.h"
#include "daemon_fixture.h"
#include "tests/compiler/test_util.h"
#include "workloads/gemm_bf16/space.h"
#include "workloads/workload.h"

namespace cake {
namespace {

namespace fs = std::filesystem;
using testing::Daemon;

std::string ScheduleText(int variant, const std::string& name = "") {
  auto space = workloads::gemm_bf16::WarpGemmCandidates();
  ir::Module m =
      workloads::gemm_bf16::MakeWarpGemm(space[static_cast<size_t>(variant) % space.size()]);
  if (!name.empty()) m.set_name(name);
  std::string text;
  google::protobuf::TextFormat::PrintToString(m, &text);
  return text;
}

using testing::AgentHypothesis;
using testing::BundledContract;
using testing::CreateContract;

grpc::Status Propose(Daemon& d, const std::string& contract, const std::string& text,
                     v1::ProposeReply* reply, const std::string& key = "",
                     const evidence::Hypothesis* h = nullptr) {
  v1::ProposeRequest req;
  req.set_contract_id(contract);
  req.set_schedule_text(text);
  req.set_idempotency_key(key);
  *req.mutable_hypothesis() = h ? *h : AgentHypothesis(d, contract);
  return d.stub()->Propose(d.Ctx("agent").get(), req, reply);
}

bool Settled(const evidence::Candidate& c) {
  return c.state() == evidence::COMPILED || c.state() == evidence::REJECTED;
}

int64_t Scalar(const fs::path& db, const std::string& sql) {
  sqlite3* raw = nullptr;
  sqlite3_open_v2(db.c_str(), &raw, SQLITE_OPEN_READONLY, nullptr);
  sqlite3_stmt* s = nullptr;
  int64_t v = -1;
  if (sqlite3_prepare_v2(raw, sql.c_str(), -1, &s, nullptr) == SQLITE_OK &&
      sqlite3_step(s) == SQLITE_ROW)
    v = sqlite3_column_int64(s, 0);
  sqlite3_finalize(s);
  sqlite3_close(raw);
  return v;
}

bool HaveTool(const std::string& name) { return base::FindOnPath(name).has_value(); }

class HostileInputTest : public testing::StateDirTest {
 protected:
  HostileInputTest() : StateDirTest("caked_hostile") {}
};

TEST_F(HostileInputTest, DeeplyNestedProposeIsRefusedAndTheDaemonKeepsServing) {
  Daemon d(state_);
  ASSERT_TRUE(d.Start()) << d.Log();
  const std::string contract = CreateContract(d);
  // 5000 nested bodies segfaulted caked's gRPC thread in the text parser.
  std::string deep =
      "name: \"deep\"\nkernels { name: \"k\"\nops { id: \"o\" role_region { role: \"r\" }\n";
  for (int i = 0; i < 5000; ++i) deep += " body { role_region { role: \"r\" }\n";
  deep += std::string(5000, '}') + "}\n}\n";
  v1::ProposeReply r;
  grpc::Status s = Propose(d, contract, deep, &r);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(s.error_message(),
            "schedule.textproto:65:21: Message is too deep, the parser exceeded the configured "
            "recursion limit of 64.");
  v1::StatusReply st;
  EXPECT_TRUE(d.stub()->Status(d.Ctx().get(), {}, &st).ok()) << "the daemon died";
}

TEST_F(HostileInputTest, OversizedFieldsAreRefusedNamingTheFieldAndListsStayBounded) {
  Daemon d(state_);
  ASSERT_TRUE(d.Start({"--max-message-bytes", "16777216"})) << d.Log();
  const std::string contract = CreateContract(d);
  v1::ProposeReply r;
  evidence::Hypothesis big;
  big.set_expected_effect(std::string(3 << 20, 'h'));
  grpc::Status s = Propose(d, contract, ScheduleText(1), &r, "", &big);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(s.error_message(),
            "ProposeRequest.hypothesis.expected_effect is 3145728 bytes (limit 2048)");
  s = Propose(d, contract, ScheduleText(1), &r, std::string(1 << 20, 'k'));
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(s.error_message(), "ProposeRequest.idempotency_key is 1048576 bytes (limit 128)");
  s = Propose(d, contract, ScheduleText(1), &r, "key with\x01control");
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(s.error_message(), "idempotency_key byte 3 is not printable ASCII (0x21-0x7e)");
  evidence::Hypothesis many;
  for (int i = 0; i < 33; ++i) many.add_changed_decisions("stages");
  s = Propose(d, contract, ScheduleText(1), &r, "", &many);
  EXPECT_EQ(s.error_message(),
            "ProposeRequest.hypothesis.changed_decisions has 33 entries (limit 32)");
  // Within the limits, five proposals; the list pages through them as summaries.
  evidence::Hypothesis ok = AgentHypothesis(d, contract);
  std::string effect;
  while (effect.size() < 2048) effect += "latency drops ";
  effect.resize(2048);
  ok.set_expected_effect(effect);
  std::set<std::string> proposed;
  for (int i = 0; i < 5; ++i) {
    ASSERT_TRUE(Propose(d, contract, ScheduleText(i, absl::StrCat("v", i)), &r, "", &ok).ok());
    proposed.insert(r.candidate_id());
  }
  std::set<std::string> listed;
  std::string token;
  int pages = 0;
  do {
    v1::ListCandidatesRequest req;
    req.set_page_size(2);
    req.set_page_token(token);
    v1::ListCandidatesReply page;
    ASSERT_TRUE(d.stub()->ListCandidates(d.Ctx().get(), req, &page).ok());
    EXPECT_LE(page.candidates_size(), 2);
    for (const auto& c : page.candidates()) {
      listed.insert(c.id());
      EXPECT_TRUE(c.summary());
      EXPECT_TRUE(c.schedule_text().empty());
    }
    token = page.next_page_token();
    ++pages;
  } while (!token.empty() && pages < 10);
  EXPECT_EQ(pages, 3);  // 6 candidates (the baseline too), 2 a page
  for (const std::string& id : proposed) EXPECT_TRUE(listed.count(id)) << id;
  v1::ListCandidatesRequest bad;
  bad.set_page_token("not-ours");
  v1::ListCandidatesReply reply;
  grpc::Status ls = d.stub()->ListCandidates(d.Ctx().get(), bad, &reply);
  EXPECT_EQ(ls.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  bad.set_page_token("");
  bad.set_page_size(100000);
  EXPECT_EQ(d.stub()->ListCandidates(d.Ctx().get(), bad, &reply).error_code(),
            grpc::StatusCode::INVALID_ARGUMENT);
  // The full candidate is still one GetCandidate away.
  v1::GetCandidateRequest g;
  g.set_candidate_id(*proposed.begin());
  evidence::Candidate full;
  ASSERT_TRUE(d.stub()->GetCandidate(d.Ctx().get(), g, &full).ok());
  EXPECT_FALSE(full.summary());
  EXPECT_FALSE(full.schedule_text().empty());
}

TEST_F(HostileInputTest, EmptyScheduleIsNotACandidate) {
  Daemon d(state_);
  ASSERT_TRUE(d.Start()) << d.Log();
  const std::string contract = CreateContract(d);
  v1::ProposeReply r;
  for (const std::string& empty :
       {std::string(""), std::string("  \n# nothing\n"), std::string("name: \"only a name\"\n")}) {
    grpc::Status s = Propose(d, contract, empty, &r);
    EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << empty;
    EXPECT_EQ(s.error_message(),
              "schedule.textproto:1:1: the schedule declares no kernel; an empty schedule is not "
              "a candidate");
  }
}

TEST_F(HostileInputTest, AScheduleOfAnotherWorkloadIsRefusedSayingWhich) {
  Daemon d(state_);
  ASSERT_TRUE(d.Start()) << d.Log();
  const std::string contract = CreateContract(d);
  const std::string own = BundledContract().operation();
  int tried = 0;
  for (const std::string& op : workloads::RegisteredOperations()) {
    if (op == own) continue;
    ++tried;
    v1::ProposeReply r;
    grpc::Status s =
        Propose(d, contract, workloads::FindWorkload(op)->ScheduleSpace()[0].schedule_text, &r);
    EXPECT_EQ(s.error_code(), grpc::StatusCode::FAILED_PRECONDITION)
        << op << ": " << s.error_message();
    EXPECT_NE(s.error_message().find("for operation '" + op + "'"), std::string::npos)
        << s.error_message();
    EXPECT_NE(s.error_message().find("is for '" + own + "'"), std::string::npos)
        << s.error_message();
  }
  EXPECT_GT(tried, 0) << "a second workload is registered";
  v1::ProposeReply ok;
  EXPECT_TRUE(
      Propose(d, contract, workloads::FindWorkload(own)->ScheduleSpace()[1].schedule_text, &ok)
          .ok());
}

TEST_F(HostileInputTest, ConcurrentProposesWithOneKeyNeverAnswerInternal) {
  Daemon d(state_);
  ASSERT_TRUE(d.Start()) << d.Log();
  const std::string contract = CreateContract(d);
  for (int round = 0; round < 20; ++round) {
    const std::string key = absl::StrCat("shared-", round);
    std::vector<grpc::StatusCode> codes(16);
    std::vector<std::string> ids(16);
    std::vector<std::thread> threads;
    for (int t = 0; t < 16; ++t)
      threads.emplace_back([&, t] {
        v1::ProposeReply r;
        // Half propose the same schedule, half another: one key, two bodies.
        codes[t] =
            Propose(d, contract, ScheduleText(t % 2, absl::StrCat("r", round, "_", t % 2)), &r, key)
                .error_code();
        ids[t] = r.candidate_id();
      });
    for (auto& th : threads) th.join();
    std::set<std::string> winners;
    for (int t = 0; t < 16; ++t) {
      EXPECT_TRUE(codes[t] == grpc::StatusCode::OK || codes[t] == grpc::StatusCode::ALREADY_EXISTS)
          << "round " << round << ": code " << codes[t];
      if (codes[t] == grpc::StatusCode::OK) winners.insert(ids[t]);
    }
    EXPECT_EQ(winners.size(), 1u) << "one key, one candidate";
  }
}

// A daemon that crashes while a job runs is the machine's failure: once the job is out of
// attempts it is BLOCKED and its candidate says so (it was REJECTED for good before, and its
// contract could not take the schedule again); a retry runs it to its true verdict.
TEST_F(HostileInputTest, AJobOutOfAttemptsIsBlockedNotRejectedAndARetryRunsIt) {
  const fs::path faults = state_ / "faults";
  fs::create_directories(faults);
  const fs::path config = state_ / "caked.conf";
  std::ofstream(config) << "max_attempts = 1\ncpu_workers = 1\n";
  std::string contract, candidate;
  {
    Daemon d(state_);
    ASSERT_TRUE(
        d.Start({"--config", config.string()}, {"CAKE_WORKER_FAULT_DIR=" + faults.string()}))
        << d.Log();
    contract = CreateContract(d);
    v1::ListCandidatesReply list;
    ASSERT_TRUE(d.stub()->ListCandidates(d.Ctx().get(), {}, &list).ok());
    ASSERT_TRUE(d.WaitFor(list.candidates(0).id(), Settled));
    std::ofstream(faults / "compile.hang") << "";
    v1::ProposeReply r;
    ASSERT_TRUE(Propose(d, contract, ScheduleText(2), &r).ok());
    candidate = r.candidate_id();
    for (int i = 0; i < 100 && fs::exists(faults / "compile.hang"); ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    d.Kill();  // a crash while the job runs: one interrupted attempt, the limit
  }
  Daemon again(state_);
  ASSERT_TRUE(again.Start({"--config", config.string()})) << again.Log();
  v1::GetCandidateRequest g;
  g.set_candidate_id(candidate);
  evidence::Candidate c;
  ASSERT_TRUE(again.stub()->GetCandidate(again.Ctx().get(), g, &c).ok());
  EXPECT_EQ(c.state(), evidence::PROPOSED) << c.status_note();
  EXPECT_EQ(c.status_note(),
            absl::StrCat("waiting on the machine: interrupted by daemon crashes in 1 of 1 allowed "
                         "attempts; blocked until retried (cakectl retry ",
                         candidate, ")"));
  v1::StatusReply st;
  ASSERT_TRUE(again.stub()->Status(again.Ctx().get(), {}, &st).ok());
  ASSERT_EQ(st.blocked_jobs_size(), 1);
  EXPECT_EQ(st.blocked_jobs(0).candidate_id(), candidate);
  // The fault is gone (the hang was taken by the crashed attempt): a retry compiles it.
  v1::RetryRequest rr;
  rr.set_candidate_id(candidate);
  v1::RetryReply retried;
  ASSERT_TRUE(again.stub()->Retry(again.Ctx("agent").get(), rr, &retried).ok());
  EXPECT_EQ(retried.requeued_jobs(), 1);
  EXPECT_TRUE(again.WaitFor(candidate, [](const evidence::Candidate& x) {
    return x.state() == evidence::COMPILED;
  })) << again.Log();
  rr.set_candidate_id("c99-nothere");
  EXPECT_EQ(again.stub()->Retry(again.Ctx().get(), rr, &retried).error_code(),
            grpc::StatusCode::NOT_FOUND);
}

TEST_F(HostileInputTest, StateFilesAreNotReadableByOthers) {
  Daemon d(state_);
  ASSERT_TRUE(d.Start()) << d.Log();
  CreateContract(d);
  struct stat st;
  for (const char* f : {"ledger.db", "ledger.db-wal", "keys/contract-id", "tokens/operator"}) {
    ASSERT_EQ(stat((state_ / f).c_str(), &st), 0) << f;
    EXPECT_EQ(st.st_mode & 0007, 0u) << f << " is readable by others";
  }
  ASSERT_EQ(stat((state_ / "keys/contract-id").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  // Others may traverse it (a root caked's workers run as nobody), never list or read it.
  ASSERT_EQ(stat(state_.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, geteuid() == 0 ? 0751u : 0750u);
  // And as that user, a worker cannot read what the state directory keeps.
  if (geteuid() == 0 && HaveTool("setpriv")) {
    base::SubprocessOptions opts;
    auto r = base::RunSubprocess(
        {"setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "/bin/sh", "-c",
         absl::StrCat("ls ", state_.string(), "; cat ", (state_ / "ledger.db").string(), " ",
                      (state_ / "tokens/operator").string(), " ",
                      (state_ / "keys/contract-id").string(), " | wc -c")},
        opts);
    ASSERT_TRUE(r.ok());
    EXPECT_NE(r->stderr_bytes.find("Permission denied"), std::string::npos) << r->stderr_bytes;
    EXPECT_EQ(r->stdout_bytes, "0\n") << "bytes read by another user";
  }
}

TEST_F(HostileInputTest, ContractIdsAreKeyedSoHeldOutRowsCannotBeConfirmedOffline) {
  const contract::Contract c = BundledContract();
  // What an agent could compute from a guess: the unkeyed digest the id used to be.
  const std::string unkeyed =
      "ct-" + base::Sha256Hex("cake-contract-v1\n" + compiler::DeterministicBytes(c)).substr(0, 16);
  std::string first;
  {
    Daemon d(state_);
    ASSERT_TRUE(d.Start()) << d.Log();
    first = CreateContract(d);
  }
  EXPECT_NE(first, unkeyed);
  EXPECT_EQ(first.size(), unkeyed.size());
  {
    Daemon d(state_);  // the same state directory: the same id
    ASSERT_TRUE(d.Start()) << d.Log();
    EXPECT_EQ(CreateContract(d), first);
  }
  const fs::path other = testing::FreshDir("caked_hostile_other");
  Daemon d(other);  // another daemon, another key
  ASSERT_TRUE(d.Start()) << d.Log();
  EXPECT_NE(CreateContract(d), first);
  d.Kill();
  fs::remove_all(other);
}

TEST_F(HostileInputTest, AFlippedBitInAStoredContractIsRefusedNotServed) {
  std::string contract;
  {
    Daemon d(state_);
    ASSERT_TRUE(d.Start()) << d.Log();
    contract = CreateContract(d);
  }
  {
    // Flip one bit of the stored body (the immutability trigger set aside, as a disk would).
    sqlite3* raw = nullptr;
    ASSERT_EQ(sqlite3_open((state_ / "ledger.db").c_str(), &raw), SQLITE_OK);
    sqlite3_stmt* s = nullptr;
    ASSERT_EQ(sqlite3_prepare_v2(raw, "SELECT body FROM contracts", -1, &s, nullptr), SQLITE_OK);
    ASSERT_EQ(sqlite3_step(s), SQLITE_ROW);
    std::string body(static_cast<const char*>(sqlite3_column_blob(s, 0)),
                     static_cast<size_t>(sqlite3_column_bytes(s, 0)));
    sqlite3_finalize(s);
    body[body.size() / 2] ^= 0x01;
    ASSERT_EQ(
        sqlite3_exec(raw, "DROP TRIGGER contracts_immutable_update", nullptr, nullptr, nullptr),
        SQLITE_OK);
    ASSERT_EQ(sqlite3_prepare_v2(raw, "UPDATE contracts SET body = ?", -1, &s, nullptr), SQLITE_OK);
    sqlite3_bind_blob(s, 1, body.data(), static_cast<int>(body.size()), SQLITE_TRANSIENT);
    ASSERT_EQ(sqlite3_step(s), SQLITE_DONE);
    sqlite3_finalize(s);
    sqlite3_close(raw);
  }
  Daemon d(state_);
  ASSERT_TRUE(d.Start()) << d.Log();
  v1::GetContractRequest g;
  g.set_contract_id(contract);
  v1::GetContractReply reply;
  grpc::Status s = d.stub()->GetContract(d.Ctx().get(), g, &reply);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::DATA_LOSS);
  EXPECT_NE(s.error_message().find("does not match the digest"), std::string::npos)
      << s.error_message();
  v1::StatusReply st;
  ASSERT_TRUE(d.stub()->Status(d.Ctx().get(), {}, &st).ok());
  ASSERT_EQ(st.corrupt_contracts_size(), 1);
  EXPECT_EQ(st.corrupt_contracts(0), contract);
  v1::ProposeReply r;
  EXPECT_EQ(Propose(d, contract, ScheduleText(1), &r).error_code(), grpc::StatusCode::DATA_LOSS);
}

TEST_F(HostileInputTest, ADirectoryWhereTheLedgerShouldBeIsAClearErrorNotAnAbort) {
  fs::create_directories(state_ / "ledger.db");
  Daemon d(state_);
  EXPECT_FALSE(d.Start());
  ASSERT_TRUE(WIFEXITED(d.exit_status())) << "caked died by a signal (an uncaught exception)";
  EXPECT_EQ(WEXITSTATUS(d.exit_status()), 1);
  EXPECT_NE(d.Log().find("ledger.db is a directory, not a ledger file"), std::string::npos)
      << d.Log();
}

TEST_F(HostileInputTest, AZeroByteTokenFileLeftByAFullDiskDoesNotBlockTheStart) {
  fs::create_directories(state_ / "tokens");
  std::ofstream(state_ / "tokens" / "agent").close();  // what a non-atomic write left
  Daemon d(state_);
  ASSERT_TRUE(d.Start()) << d.Log();
  EXPECT_EQ(d.Token("agent").size(), 64u);
  v1::StatusReply st;
  EXPECT_TRUE(d.stub()->Status(d.Ctx("agent").get(), {}, &st).ok());
  // Tokens are written whole or not at all: no temporary file is left beside them.
  for (const auto& e : fs::directory_iterator(state_ / "tokens"))
    EXPECT_EQ(e.path().filename().string().find(".tmp"), std::string::npos) << e.path();
}

TEST_F(HostileInputTest, AReadOnlyLedgerIsRefusedAtStart) {
  if (geteuid() == 0 && !HaveTool("setpriv")) GTEST_SKIP() << "root without setpriv";
  {
    Daemon d(state_);
    ASSERT_TRUE(d.Start()) << d.Log();
    CreateContract(d);
    d.Stop();
  }
  // As root every file is writable, so caked runs as nobody on a state directory nobody owns,
  // with the ledger read-only for it; its binaries are copied where nobody can run them (the
  // checkout may lie in a 0700 folder).
  const fs::path bin = testing::FreshDir("caked_ro_bin");
  ::chmod(bin.c_str(), 0755);
  for (const char* exe : {"caked", "cake-worker"})
    fs::copy_file(fs::path(CAKED_PATH).parent_path() / exe, bin / exe);
  const std::string log = (state_ / "ro.log").string();
  const std::string cmd = absl::StrCat(
      "chown -R 65534:65534 ", state_.string(), " && chmod 0444 ", state_.string(),
      "/ledger.db && ", geteuid() == 0 ? "setpriv --reuid=65534 --regid=65534 --clear-groups " : "",
      (bin / "caked").string(), " --state-dir ", state_.string(), " --no-gpu > ", log,
      " 2>&1; echo rc=$?");
  base::SubprocessOptions opts;
  opts.timeout = std::chrono::seconds(30);
  auto r = base::RunSubprocess({"/bin/sh", "-c", cmd}, opts);
  ASSERT_TRUE(r.ok());
  EXPECT_NE(r->stdout_bytes.find("rc=1"), std::string::npos) << r->stdout_bytes;
  const std::string text = testing::ReadText(log);
  EXPECT_NE(text.find("is read-only for this process"), std::string::npos) << text;
  fs::remove_all(bin);
}

TEST_F(HostileInputTest, AFullDiskSaysSoInsteadOfNotADatabase) {
  if (!HaveTool("unshare")) GTEST_SKIP() << "no unshare";
  // A 2 MiB tmpfs in a private mount namespace: caked makes its ledger there and stops, the disk
  // is filled to the last byte, then caked starts again on it.
  const fs::path mnt = state_ / "small";
  fs::create_directories(mnt);
  const std::string log = (state_ / "full.log").string();
  const std::string st = mnt.string() + "/state";
  const std::string cmd =
      absl::StrCat("mount -t tmpfs -o size=2m tmpfs ", mnt.string(), " || exit 77; mkdir ", st,
                   "; ", CAKED_PATH, " --state-dir ", st,
                   " --no-gpu > /dev/null 2>&1 & pid=$!; for i in $(seq 1 50); "
                   "do [ -S ",
                   st,
                   "/caked.sock ] && break; sleep 0.1; done; kill -TERM $pid; wait $pid; "
                   "dd if=/dev/zero of=",
                   mnt.string(), "/fill bs=4k 2>/dev/null; dd if=/dev/zero of=", mnt.string(),
                   "/fill2 bs=1 2>/dev/null; rm -f ", st, "/ledger.db-wal ", st, "/ledger.db-shm; ",
                   CAKED_PATH, " --state-dir ", st, " --no-gpu > ", log, " 2>&1; echo rc=$?");
  base::SubprocessOptions opts;
  opts.timeout = std::chrono::seconds(30);
  auto r = base::RunSubprocess({"unshare", "-Urm", "/bin/sh", "-c", cmd}, opts);
  ASSERT_TRUE(r.ok());
  if (r->exit_code == 77 || r->stderr_bytes.find("unshare") != std::string::npos)
    GTEST_SKIP() << "no private mount namespace here: " << r->stderr_bytes;
  EXPECT_NE(r->stdout_bytes.find("rc=1"), std::string::npos) << r->stdout_bytes;
  const std::string text = testing::ReadText(log);
  EXPECT_EQ(text.find("not a SQLite database"), std::string::npos) << text;
  const bool says_full = text.find("No space left") != std::string::npos ||
                         text.find("disk full") != std::string::npos ||
                         text.find("database or disk is full") != std::string::npos;
  EXPECT_TRUE(says_full) << text;
}

TEST_F(HostileInputTest, GracefulStopKillsRunningJobsAndRequeuesThem) {
  const fs::path faults = state_ / "faults";
  fs::create_directories(faults);
  std::string candidate;
  {
    Daemon d(state_);
    ASSERT_TRUE(d.Start({"--cpu-workers", "1"}, {"CAKE_WORKER_FAULT_DIR=" + faults.string()}))
        << d.Log();
    const std::string contract = CreateContract(d);
    v1::ListCandidatesReply list;
    ASSERT_TRUE(d.stub()->ListCandidates(d.Ctx().get(), {}, &list).ok());
    ASSERT_TRUE(d.WaitFor(list.candidates(0).id(), Settled));
    std::ofstream(faults / "compile.hang") << "";  // the worker hangs: it would never finish
    v1::ProposeReply r;
    ASSERT_TRUE(Propose(d, contract, ScheduleText(3), &r).ok());
    candidate = r.candidate_id();
    for (int i = 0; i < 100 && fs::exists(faults / "compile.hang"); ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    const auto t0 = std::chrono::steady_clock::now();
    d.Stop();
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    // Before: the stop waited for the job (up to the GPU timeout, 10 min, past TimeoutStopSec).
    EXPECT_LT(seconds, 10.0);
    EXPECT_TRUE(WIFEXITED(d.exit_status()) && WEXITSTATUS(d.exit_status()) == 0);
  }
  EXPECT_EQ(
      Scalar(state_ / "ledger.db", "SELECT COUNT(*) FROM job_attempts WHERE outcome = 'SHUTDOWN'"),
      1);
  Daemon again(state_);
  ASSERT_TRUE(again.Start()) << again.Log();
  EXPECT_TRUE(again.WaitFor(candidate, [](const evidence::Candidate& c) {
    return c.state() == evidence::COMPILED;
  })) << "the re-queued job did not run after the restart";
}

TEST_F(HostileInputTest, CakectlRefusesABadTokenFileWithoutAbortingOrPrintingIt) {
  Daemon d(state_);
  ASSERT_TRUE(d.Start()) << d.Log();
  const fs::path token = state_ / "bad-token";
  const std::string secret = "0123456789abcdef0123456789abcdef";
  std::ofstream(token) << secret << "\x07" << secret << "\n";
  base::SubprocessOptions opts;
  opts.env = {{"CAKE_ADDR", d.Address()}, {"CAKE_TOKEN_FILE", token.string()}};
  auto r = base::RunSubprocess({CAKECTL_PATH, "status"}, opts);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->term_signal, 0) << "cakectl aborted";
  EXPECT_EQ(r->exit_code, 4);
  EXPECT_NE(r->stderr_bytes.find("byte 32 of the token is not printable ASCII"), std::string::npos)
      << r->stderr_bytes;
  EXPECT_EQ(r->stderr_bytes.find(secret), std::string::npos) << "the token was printed";
  // A well-formed but wrong token: refused, and not echoed either.
  std::ofstream(token, std::ios::trunc) << secret << secret << "\n";
  r = base::RunSubprocess({CAKECTL_PATH, "status"}, opts);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->exit_code, 4);
  EXPECT_EQ(r->stderr_bytes.find(secret), std::string::npos) << r->stderr_bytes;
}

TEST_F(HostileInputTest, StatusSaysWhichContainmentAndSandboxAreInForce) {
  Daemon d(state_);
  ASSERT_TRUE(d.Start()) << d.Log();
  v1::StatusReply st;
  ASSERT_TRUE(d.stub()->Status(d.Ctx().get(), {}, &st).ok());
  EXPECT_TRUE(st.containment().rfind("cgroup v2 per job", 0) == 0 ||
              st.containment().rfind("process group", 0) == 0)
      << st.containment();
  EXPECT_FALSE(st.worker_sandbox().empty());
  const fs::path config = state_ / "pg.conf";
  std::ofstream(config) << "job_containment = process_group\n";
  d.Stop();
  Daemon pg(state_);
  ASSERT_TRUE(pg.Start({"--config", config.string()})) << pg.Log();
  grpc::Status s = pg.stub()->Status(pg.Ctx().get(), {}, &st);
  ASSERT_TRUE(s.ok()) << s.error_message() << pg.Log();
  EXPECT_EQ(st.containment().rfind("process group + PR_SET_PDEATHSIG", 0), 0u) << st.containment();
}

}  // namespace
}  // namespace cake
