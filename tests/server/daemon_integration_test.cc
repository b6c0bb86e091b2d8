// Integration tests of the daemon spine: real caked, real cake-worker processes, real SQLite,
// real nvcc. The machine running them has no GPU, so candidates stop at Compiled with "no
// execution device"; GPU stages are covered by the device runs under evidence/.
#include <gtest/gtest.h>
#include "base/digest.h"

#include <fcntl.h>
#include <sqlite3.h>
#include <sys/stat.h>

#include <set>
#include <thread>

#include "absl/strings/str_split.h"
#include "base/subprocess.h"
#include "compiler/canonical.h"
#include "daemon_fixture.h"
#include "tests/compiler/test_util.h"
#include "workloads/gemm_bf16/space.h"

namespace cake {
namespace {

namespace fs = std::filesystem;
using testing::Daemon;

std::string ScheduleText(const workloads::gemm_bf16::WarpGemmParams& p) {
  std::string text;
  google::protobuf::TextFormat::PrintToString(workloads::gemm_bf16::MakeWarpGemm(p), &text);
  return text;
}

using testing::BundledContract;
using testing::CreateContract;

grpc::Status Propose(Daemon& d, const std::string& contract, const std::string& text,
                     v1::ProposeReply* reply, const std::string& role = "agent",
                     const std::string& key = "") {
  v1::ProposeRequest req;
  req.set_contract_id(contract);
  req.set_schedule_text(text);
  req.set_idempotency_key(key);
  if (role == "agent") *req.mutable_hypothesis() = testing::AgentHypothesis(d, contract);
  return d.stub()->Propose(d.Ctx(role).get(), req, reply);
}

bool Compiled(const evidence::Candidate& c) { return c.state() == evidence::COMPILED; }
bool Settled(const evidence::Candidate& c) {
  return c.state() == evidence::COMPILED || c.state() == evidence::REJECTED;
}

class DaemonTest : public testing::StateDirTest {
 protected:
  DaemonTest() : StateDirTest("caked_it") {}
};

TEST_F(DaemonTest, RoundStopsAtCompiledWithoutADeviceAndSaysSo) {
  Daemon d(state_);
  ASSERT_TRUE(d.Start()) << d.Log();
  const std::string contract = CreateContract(d);
  v1::StatusReply st;
  ASSERT_TRUE(d.stub()->Status(d.Ctx().get(), {}, &st).ok());
  EXPECT_FALSE(st.execution_device());
  EXPECT_NE(st.device_note().find("no execution device"), std::string::npos);
  v1::GetContractReply gc;
  v1::GetContractRequest gr;
  gr.set_contract_id(contract);
  ASSERT_TRUE(d.stub()->GetContract(d.Ctx("operator").get(), gr, &gc).ok());
  v1::ListCandidatesReply list;
  ASSERT_TRUE(d.stub()->ListCandidates(d.Ctx().get(), {}, &list).ok());
  ASSERT_EQ(list.candidates_size(), 1);  // the baseline
  const std::string baseline = list.candidates(0).id();
  ASSERT_TRUE(d.WaitFor(baseline, Settled));
  v1::GetCandidateRequest req;
  req.set_candidate_id(baseline);
  evidence::Candidate c;
  ASSERT_TRUE(d.stub()->GetCandidate(d.Ctx().get(), req, &c).ok());
  EXPECT_EQ(c.state(), evidence::COMPILED) << c.status_note();
  EXPECT_NE(c.status_note().find("no execution device"), std::string::npos);
  EXPECT_EQ(c.receipt().outcome(), report::LoweringReceipt::PASS);
  EXPECT_EQ(c.analysis().verdict(), report::VERIFIED);
  // Agents never see held-out rows or held-out validation cases.
  v1::GetContractReply agent_view;
  ASSERT_TRUE(d.stub()->GetContract(d.Ctx("agent").get(), gr, &agent_view).ok());
  EXPECT_EQ(agent_view.contract().rows_size() + 1, gc.contract().rows_size());
  EXPECT_EQ(agent_view.contract().validation().cases_size() + 1,
            gc.contract().validation().cases_size());
  for (const auto& vc : agent_view.contract().validation().cases()) EXPECT_FALSE(vc.held_out());
  // Eligibility is derived, and without any record every required one is missing.
  EXPECT_FALSE(c.eligibility().eligible());
  EXPECT_EQ(c.eligibility().missing_size(), 7) << c.eligibility().summary();
  EXPECT_EQ(c.eligibility().optional_missing_size(), 2) << c.eligibility().summary();
  // Measuring a candidate without validation evidence is refused, naming what is missing;
  // optional evidence is not named as missing.
  v1::MeasureRequest mr;
  mr.set_candidate_id(baseline);
  v1::MeasureReply mreply;
  grpc::Status ms = d.stub()->Measure(d.Ctx("agent").get(), mr, &mreply);
  EXPECT_EQ(ms.error_code(), grpc::StatusCode::FAILED_PRECONDITION);
  for (const char* name : {"missing evidence: numerical_contract", "mutation_and_lifecycle",
                           "repeated_execution_determinism", "sanitizer:memcheck",
                           "sanitizer:racecheck", "sanitizer:initcheck", "sanitizer:synccheck"})
    EXPECT_NE(ms.error_message().find(name), std::string::npos) << ms.error_message();
  EXPECT_EQ(ms.error_message().find("timing_perturbation"), std::string::npos)
      << ms.error_message();
  EXPECT_EQ(d.Stop(), 0);
}

// Branches keep their own lines; a failed hypothesis is kept and a repeat of it without new
// evidence is answered with the failed record instead of a new job.
TEST_F(DaemonTest, BranchesKeepTheirLinesAndARepeatedFailureIsAnsweredWithItsRecord) {
  Daemon d(state_);
  ASSERT_TRUE(d.Start()) << d.Log();
  const std::string contract = CreateContract(d);
  const std::string baseline = testing::AgentHypothesis(d, contract).parent();
  ASSERT_FALSE(baseline.empty());
  auto propose = [&](const workloads::gemm_bf16::WarpGemmParams& p, const std::string& branch,
                     const evidence::Hypothesis& h, v1::ProposeReply* reply) {
    v1::ProposeRequest req;
    req.set_contract_id(contract);
    req.set_schedule_text(ScheduleText(p));
    req.set_branch(branch);
    *req.mutable_hypothesis() = h;
    return d.stub()->Propose(d.Ctx("agent").get(), req, reply);
  };
  auto count = [&](const std::string& branch) {
    v1::ListCandidatesRequest lr;
    lr.set_contract_id(contract);
    lr.set_branch(branch);
    v1::ListCandidatesReply page;
    EXPECT_TRUE(d.stub()->ListCandidates(d.Ctx().get(), lr, &page).ok());
    return page.candidates_size();
  };
  evidence::Hypothesis ktile;
  ktile.set_parent(baseline);
  ktile.add_changed_decisions("tile_k");
  ktile.set_expected_effect("a 24-wide k-tile cuts shared memory per stage by a quarter");
  ktile.set_falsification("the analysis rejects it or the paired run is not FASTER");
  workloads::gemm_bf16::WarpGemmParams k24;
  k24.tile_k = 24;  // not a whole number of K=16 MMA steps: rejected by the analysis
  v1::ProposeReply failed;
  ASSERT_TRUE(propose(k24, "ktile", ktile, &failed).ok());
  EXPECT_EQ(failed.branch(), "ktile");
  EXPECT_TRUE(failed.repeat_of().empty());
  ASSERT_TRUE(d.WaitFor(failed.candidate_id(), [](const evidence::Candidate& c) {
    return c.state() == evidence::REJECTED;
  }));

  // The same hypothesis (in other case and spacing), another schedule: answered with the failed
  // record, nothing created.
  evidence::Hypothesis again = ktile;
  again.set_changed_decisions(0, "  TILE_K ");
  again.set_expected_effect("A 24-wide k-tile  cuts shared memory per stage by a quarter");
  workloads::gemm_bf16::WarpGemmParams k40;
  k40.tile_k = 40;
  v1::ProposeReply repeat;
  ASSERT_TRUE(propose(k40, "ktile", again, &repeat).ok());
  EXPECT_EQ(repeat.repeat_of(), failed.candidate_id());
  EXPECT_EQ(repeat.candidate_id(), failed.candidate_id());
  EXPECT_EQ(repeat.state(), evidence::REJECTED);
  EXPECT_NE(repeat.note().find("DIAG_TILE_NOT_DIVISIBLE"), std::string::npos) << repeat.note();
  EXPECT_NE(repeat.note().find("new_evidence"), std::string::npos) << repeat.note();
  EXPECT_EQ(count("ktile"), 1);
  // Citing only evidence older than the failure is still a repeat; unknown ids are refused.
  again.add_new_evidence(baseline);
  ASSERT_TRUE(propose(k40, "ktile", again, &repeat).ok());
  EXPECT_EQ(repeat.repeat_of(), failed.candidate_id());
  again.add_new_evidence("c99-00000000");
  EXPECT_EQ(propose(k40, "ktile", again, &repeat).error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  again.mutable_new_evidence()->RemoveLast();

  // A candidate recorded since the failure is new evidence: the retry becomes a candidate.
  const auto space = workloads::gemm_bf16::WarpGemmCandidates();
  evidence::Hypothesis tile = ktile;
  tile.set_changed_decisions(0, "tile_m and tile_n");
  v1::ProposeReply on_main;
  ASSERT_TRUE(propose(space[1], "", tile, &on_main).ok());
  EXPECT_EQ(on_main.branch(), "main");
  again.add_new_evidence(on_main.candidate_id());
  v1::ProposeReply retried;
  ASSERT_TRUE(propose(k40, "ktile", again, &retried).ok());
  EXPECT_TRUE(retried.repeat_of().empty());
  EXPECT_NE(retried.candidate_id(), failed.candidate_id());
  EXPECT_EQ(count("ktile"), 2);

  // A branch with a history continues from its own candidates or a shared root, not from
  // another line's candidate; a new branch may fork from it.
  evidence::Hypothesis cross = tile;
  cross.set_parent(on_main.candidate_id());
  cross.set_changed_decisions(0, "stages");
  v1::ProposeReply r;
  grpc::Status s = propose(space[2], "ktile", cross, &r);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(s.error_message().find("is on branch 'main'"), std::string::npos) << s.error_message();
  ASSERT_TRUE(propose(space[2], "fork/stages", cross, &r).ok());
  EXPECT_EQ(r.branch(), "fork/stages");
  EXPECT_EQ(count("fork/stages"), 1);
  EXPECT_EQ(count(""), 5);  // baseline, on_main, two on ktile, one fork
  v1::GetCandidateRequest gr;
  gr.set_candidate_id(r.candidate_id());
  evidence::Candidate got;
  ASSERT_TRUE(d.stub()->GetCandidate(d.Ctx().get(), gr, &got).ok());
  EXPECT_EQ(got.branch(), "fork/stages");
  // A branch name is bounded and plain.
  EXPECT_EQ(propose(space[3], "../etc", tile, &r).error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(propose(space[3], std::string(65, 'b'), tile, &r).error_code(),
            grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(d.Stop(), 0);
}

TEST_F(DaemonTest, ConcurrentProposalsFromSeveralClients) {
  Daemon d(state_);
  ASSERT_TRUE(d.Start({"--cpu-workers", "2"})) << d.Log();
  const std::string contract = CreateContract(d);
  const auto space = workloads::gemm_bf16::WarpGemmCandidates();
  std::vector<std::string> ids(space.size());
  std::vector<std::thread> clients;
  for (size_t i = 1; i < space.size(); ++i)
    clients.emplace_back([&, i] {
      v1::ProposeReply r;
      grpc::Status s = Propose(d, contract, ScheduleText(space[i]), &r);
      EXPECT_TRUE(s.ok()) << s.error_message();
      ids[i] = r.candidate_id();
    });
  for (auto& t : clients) t.join();
  std::set<std::string> distinct(ids.begin() + 1, ids.end());
  EXPECT_EQ(distinct.size(), space.size() - 1);
  for (size_t i = 1; i < ids.size(); ++i)
    EXPECT_TRUE(d.WaitFor(ids[i], Compiled, std::chrono::seconds(240))) << ids[i] << d.Log();
  // The same schedule again is a duplicate, not a new candidate.
  v1::ProposeReply again;
  ASSERT_TRUE(Propose(d, contract, ScheduleText(space[1]), &again).ok());
  EXPECT_TRUE(again.duplicate());
  EXPECT_EQ(again.candidate_id(), ids[1]);
}

TEST_F(DaemonTest, RolesAndTokens) {
  Daemon d(state_);
  ASSERT_TRUE(d.Start()) << d.Log();
  v1::CreateContractRequest req;
  *req.mutable_contract() = BundledContract();
  v1::CreateContractReply reply;
  grpc::Status agent = d.stub()->CreateContract(d.Ctx("agent").get(), req, &reply);
  EXPECT_EQ(agent.error_code(), grpc::StatusCode::PERMISSION_DENIED);
  grpc::Status none = d.stub()->CreateContract(d.Ctx("").get(), req, &reply);
  EXPECT_EQ(none.error_code(), grpc::StatusCode::UNAUTHENTICATED);
  auto bad = std::make_unique<grpc::ClientContext>();
  bad->AddMetadata("authorization", "Bearer not-a-token");
  EXPECT_EQ(d.stub()->CreateContract(bad.get(), req, &reply).error_code(),
            grpc::StatusCode::UNAUTHENTICATED);
  v1::RegressRequest rr;
  v1::RegressReply rreply;
  EXPECT_EQ(d.stub()->Regress(d.Ctx("agent").get(), rr, &rreply).error_code(),
            grpc::StatusCode::PERMISSION_DENIED);
  // Token files are private to the daemon's user.
  struct stat st;
  ASSERT_EQ(stat((state_ / "tokens" / "operator").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
}

TEST_F(DaemonTest, BadInputGetsTheRightStatusCodes) {
  Daemon d(state_);
  ASSERT_TRUE(d.Start({"--max-message-bytes", "65536"})) << d.Log();
  const std::string contract = CreateContract(d);
  v1::ProposeReply r;
  grpc::Status malformed = Propose(d, contract, "kernels { name: \"k\"\n  launch { x }\n", &r);
  EXPECT_EQ(malformed.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(malformed.error_message().rfind("schedule.textproto:2:", 0), 0u)
      << malformed.error_message();
  // Each refusal carries its detail for programs (google.rpc.Status in the status details).
  auto detail = [](const grpc::Status& s) {
    v1::RpcStatus status;
    v1::ErrorDetail out;
    EXPECT_TRUE(status.ParseFromString(s.error_details())) << s.error_message();
    EXPECT_EQ(status.code(), static_cast<int>(s.error_code()));
    EXPECT_EQ(status.message(), s.error_message());
    EXPECT_TRUE(status.details_size() == 1 && status.details(0).UnpackTo(&out));
    return out;
  };
  EXPECT_EQ(detail(malformed).diagnostic_id(), report::DIAG_PARSE_ERROR);
  EXPECT_EQ(detail(malformed).field(), "schedule_text");
  {
    v1::ProposeRequest long_key;
    long_key.set_contract_id(contract);
    long_key.set_schedule_text(ScheduleText({}));
    long_key.mutable_hypothesis()->set_expected_effect(std::string(3000, 'e'));
    grpc::Status s = d.stub()->Propose(d.Ctx("agent").get(), long_key, &r);
    EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
    EXPECT_EQ(detail(s).field(), "hypothesis.expected_effect");
    EXPECT_EQ(detail(s).limit(), 2048);
  }
  EXPECT_EQ(Propose(d, "ct-nope", ScheduleText({}), &r).error_code(), grpc::StatusCode::NOT_FOUND);
  v1::GetCandidateRequest gc;
  gc.set_candidate_id("c999-deadbeef");
  evidence::Candidate c;
  EXPECT_EQ(d.stub()->GetCandidate(d.Ctx().get(), gc, &c).error_code(),
            grpc::StatusCode::NOT_FOUND);
  // Limit + 1 bytes is refused by the transport.
  std::string huge = ScheduleText({}) + "\n# " + std::string(65536, 'x') + "\n";
  EXPECT_EQ(Propose(d, contract, huge, &r).error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  // An idempotency key reused with another body.
  workloads::gemm_bf16::WarpGemmParams other;
  other.stages = 2;
  ASSERT_TRUE(Propose(d, contract, ScheduleText(other), &r, "agent", "key-1").ok());
  v1::ProposeReply same;
  ASSERT_TRUE(Propose(d, contract, ScheduleText(other), &same, "agent", "key-1").ok());
  EXPECT_EQ(same.candidate_id(), r.candidate_id());
  other.stages = 4;
  const std::string first = r.candidate_id();
  grpc::Status reused = Propose(d, contract, ScheduleText(other), &r, "agent", "key-1");
  EXPECT_EQ(reused.error_code(), grpc::StatusCode::ALREADY_EXISTS);
  EXPECT_EQ(detail(reused).earlier_candidate(), first);
  EXPECT_EQ(detail(reused).field(), "idempotency_key");
  // A contract that does not make sense.
  v1::CreateContractRequest bad;
  *bad.mutable_contract() = BundledContract();
  bad.mutable_contract()->mutable_rows(0)->mutable_problem()->mutable_gemm_bf16()->set_k(7);
  v1::CreateContractReply creply;
  EXPECT_EQ(d.stub()->CreateContract(d.Ctx().get(), bad, &creply).error_code(),
            grpc::StatusCode::INVALID_ARGUMENT);
}

TEST_F(DaemonTest, FullQueueIsResourceExhaustedNotAHang) {
  Daemon d(state_);
  ASSERT_TRUE(d.Start({"--max-queue", "2", "--cpu-workers", "1"})) << d.Log();
  const std::string contract = CreateContract(d);  // baseline: 1 queued compile job
  int exhausted = 0;
  for (const auto& p : workloads::gemm_bf16::WarpGemmCandidates()) {
    v1::ProposeReply r;
    grpc::Status s = Propose(d, contract, ScheduleText(p), &r);
    if (s.error_code() == grpc::StatusCode::RESOURCE_EXHAUSTED) ++exhausted;
  }
  EXPECT_GT(exhausted, 0);
}

TEST_F(DaemonTest, CrashedAndHungWorkersLeaveFailureRecordsAndTheNextJobSucceeds) {
  const fs::path faults = state_ / "faults";
  fs::create_directories(faults);
  Daemon d(state_);
  ASSERT_TRUE(d.Start({"--cpu-workers", "1", "--compile-timeout-ms", "20000"},
                      {"CAKE_WORKER_FAULT_DIR=" + faults.string()}))
      << d.Log();
  const std::string contract = CreateContract(d);
  v1::ListCandidatesReply list;
  ASSERT_TRUE(d.stub()->ListCandidates(d.Ctx().get(), {}, &list).ok()) << d.Log();
  ASSERT_TRUE(d.WaitFor(list.candidates(0).id(), Settled));
  auto space = workloads::gemm_bf16::WarpGemmCandidates();

  std::ofstream(faults / "compile.crash") << "";
  v1::ProposeReply crashed;
  ASSERT_TRUE(Propose(d, contract, ScheduleText(space[1]), &crashed).ok());
  ASSERT_TRUE(d.WaitFor(crashed.candidate_id(), Settled));
  v1::ProposeReply after_crash;
  ASSERT_TRUE(Propose(d, contract, ScheduleText(space[2]), &after_crash).ok());
  EXPECT_TRUE(d.WaitFor(after_crash.candidate_id(), Compiled)) << d.Log();

  std::ofstream(faults / "compile.hang") << "";
  v1::ProposeReply hung;
  ASSERT_TRUE(Propose(d, contract, ScheduleText(space[3]), &hung).ok());
  ASSERT_TRUE(d.WaitFor(hung.candidate_id(), Settled));
  v1::ProposeReply after_hang;
  ASSERT_TRUE(Propose(d, contract, ScheduleText(space[4]), &after_hang).ok());
  EXPECT_TRUE(d.WaitFor(after_hang.candidate_id(), Compiled)) << d.Log();

  auto get = [&](const std::string& id) {
    v1::GetCandidateRequest req;
    req.set_candidate_id(id);
    evidence::Candidate c;
    EXPECT_TRUE(d.stub()->GetCandidate(d.Ctx().get(), req, &c).ok());
    return c;
  };
  const evidence::Candidate c1 = get(crashed.candidate_id());
  EXPECT_EQ(c1.state(), evidence::REJECTED);
  EXPECT_EQ(c1.rejected_at(), evidence::COMPILED);
  EXPECT_NE(c1.status_note().find("killed by signal 9"), std::string::npos) << c1.status_note();
  const evidence::Candidate c3 = get(hung.candidate_id());
  EXPECT_EQ(c3.state(), evidence::REJECTED);
  EXPECT_NE(c3.status_note().find("timed out after 20000 ms"), std::string::npos)
      << c3.status_note();
  v1::StatusReply st;
  ASSERT_TRUE(d.stub()->Status(d.Ctx().get(), {}, &st).ok());
  EXPECT_EQ(st.recent_failures_size(), 2);
  for (const auto& f : st.recent_failures()) std::printf("failure: %s\n", f.error().c_str());
  EXPECT_FALSE(fs::exists(faults / "compile.crash"));  // each fault fired once
  EXPECT_FALSE(fs::exists(faults / "compile.hang"));
}

TEST_F(DaemonTest, KillNineWithJobsQueuedThenRestartLosesNothing) {
  std::vector<std::string> ids;
  std::string contract;
  {
    Daemon d(state_);
    ASSERT_TRUE(d.Start({"--cpu-workers", "1"})) << d.Log();
    contract = CreateContract(d);
    for (const auto& p : workloads::gemm_bf16::WarpGemmCandidates()) {
      v1::ProposeReply r;
      ASSERT_TRUE(Propose(d, contract, ScheduleText(p), &r).ok());
      if (!r.duplicate()) ids.push_back(r.candidate_id());
    }
    d.Kill();  // SIGKILL with jobs queued and one running
  }
  ASSERT_GE(ids.size(), 6u);
  Daemon again(state_);
  ASSERT_TRUE(again.Start({"--cpu-workers", "2"})) << again.Log();
  v1::ListCandidatesReply list;
  ASSERT_TRUE(again.stub()->ListCandidates(again.Ctx().get(), {}, &list).ok());
  std::set<std::string> present;
  for (const auto& c : list.candidates()) present.insert(c.id());
  for (const std::string& id : ids) EXPECT_TRUE(present.count(id)) << id << " was lost";
  for (const std::string& id : ids)
    EXPECT_TRUE(again.WaitFor(id, Compiled, std::chrono::seconds(300))) << id << again.Log();
  EXPECT_NE(again.Log().find("ledger recovered"), std::string::npos);
}

TEST_F(DaemonTest, RefusesForeignOrCorruptLedgerAndNeverOverwritesIt) {
  fs::create_directories(state_);
  const fs::path db = state_ / "ledger.db";
  // A foreign SQLite database (another application's).
  {
    sqlite3* raw = nullptr;
    ASSERT_EQ(sqlite3_open(db.c_str(), &raw), SQLITE_OK);
    ASSERT_EQ(sqlite3_exec(raw, "CREATE TABLE t(x); INSERT INTO t VALUES (42);", nullptr, nullptr,
                           nullptr),
              SQLITE_OK);
    sqlite3_close(raw);
  }
  const std::string before = base::Sha256Hex(Daemon::Read(db));
  Daemon d(state_);
  EXPECT_FALSE(d.Start());
  EXPECT_NE(WEXITSTATUS(d.exit_status()), 0);
  EXPECT_NE(d.Log().find("another application"), std::string::npos) << d.Log();
  EXPECT_EQ(base::Sha256Hex(Daemon::Read(db)), before);
  // Not a database at all.
  std::ofstream(db, std::ios::trunc) << std::string(8192, 'Z');
  const std::string garbage = base::Sha256Hex(Daemon::Read(db));
  Daemon d2(state_);
  EXPECT_FALSE(d2.Start());
  EXPECT_NE(d2.Log().find("refusing"), std::string::npos) << d2.Log();
  EXPECT_EQ(base::Sha256Hex(Daemon::Read(db)), garbage);
}

}  // namespace
}  // namespace cake

namespace cake {
namespace {

int Cakectl(const std::vector<std::string>& args, const std::map<std::string, std::string>& env,
            std::string* out = nullptr) {
  std::vector<std::string> argv = {CAKECTL_PATH};
  argv.insert(argv.end(), args.begin(), args.end());
  base::SubprocessOptions opts;
  opts.env = env;
  auto r = base::RunSubprocess(argv, opts);
  EXPECT_TRUE(r.ok());
  if (out) *out = r->stdout_bytes + r->stderr_bytes;
  return r->exit_code;
}

TEST_F(DaemonTest, CakectlExitCodes) {
  Daemon d(state_);
  ASSERT_TRUE(d.Start()) << d.Log();
  const std::map<std::string, std::string> env = {
      {"CAKE_ADDR", d.Address()}, {"CAKE_TOKEN_FILE", (state_ / "tokens" / "operator").string()}};
  std::string out;
  EXPECT_EQ(Cakectl({"-o", "json", "status"}, env, &out), 0) << out;
  EXPECT_NE(out.find("\"boot_id\""), std::string::npos);
  EXPECT_EQ(Cakectl({"frobnicate"}, env), 2);
  EXPECT_EQ(Cakectl({"show", "c404-missing"}, env, &out), 7) << out;
  // Under -o json an error is one JSON object: its code by name, the message, the exit code.
  EXPECT_EQ(Cakectl({"-o", "json", "show", "c404-missing"}, env, &out), 7) << out;
  EXPECT_NE(out.find("\"code\":\"NOT_FOUND\""), std::string::npos) << out;
  EXPECT_NE(out.find("\"exit_code\":7"), std::string::npos) << out;
  // A refused request names its field.
  const fs::path contract_only = testing::SourceDir() / "contracts/gemm_bf16.textproto";
  EXPECT_EQ(Cakectl({"-o", "json", "contract", "create", contract_only.string()}, env, &out), 6)
      << out;
  EXPECT_NE(out.find("\"field\":\"contract.baseline_schedule\""), std::string::npos) << out;
  auto agent = env;
  agent["CAKE_TOKEN_FILE"] = (state_ / "tokens" / "agent").string();
  EXPECT_EQ(Cakectl({"contract", "create",
                     (testing::SourceDir() / "contracts/gemm_bf16.textproto").string()},
                    agent, &out),
            4)
      << out;
  auto missing = env;
  missing["CAKE_TOKEN_FILE"] = "/nonexistent/token";
  EXPECT_EQ(Cakectl({"status"}, missing), 4);
  // The HTML report of a contract with no measurement yet: rows, history, and no plot.
  const std::string contract = CreateContract(d);
  const fs::path html = state_ / "report.html";
  EXPECT_EQ(Cakectl({"report", contract, "--out", html.string()}, env, &out), 0) << out;
  const std::string page = testing::ReadText(html);
  EXPECT_NE(page.find("<!DOCTYPE html>"), std::string::npos);
  EXPECT_NE(page.find("square_4k"), std::string::npos);
  EXPECT_NE(page.find("No valid measurement yet"), std::string::npos);
  EXPECT_NE(page.find("no SM120 execution witness"), std::string::npos);
  EXPECT_EQ(Cakectl({"report", "ct-0000000000000000", "--out", html.string()}, env, &out), 7)
      << out;
  d.Stop();
  EXPECT_EQ(Cakectl({"status"}, env, &out), 5) << out;
}

int Mode(const fs::path& p) {
  struct stat st;
  return ::stat(p.c_str(), &st) == 0 ? static_cast<int>(st.st_mode & 07777) : -1;
}

// A box installed from the project: members of the daemon's group run cakectl with no flags
// but $CAKE_STATE_DIR; they read the ci token, not the operator's.
TEST_F(DaemonTest, GroupMembersUseCakectlWithoutFlagsButNotOperatorVerbs) {
  Daemon d(state_);
  ASSERT_TRUE(d.Start()) << d.Log();
  // 0751 where the workers run as another user (a root daemon): they pass through, not list.
  EXPECT_EQ(Mode(state_) & ~0001, 0750);
  EXPECT_EQ(Mode(state_ / "tokens"), 0750);
  EXPECT_EQ(Mode(state_ / "tokens" / "operator"), 0600);
  EXPECT_EQ(Mode(state_ / "tokens" / "ci"), 0640);
  EXPECT_EQ(Mode(state_ / "tokens" / "agent"), 0640);
  EXPECT_EQ(Mode(state_ / "caked.sock"), 0660);
  // Token files of an older caked (0600) get their role's mode at the next start.
  ASSERT_EQ(::chmod((state_ / "tokens" / "ci").c_str(), 0600), 0);
  d.Stop();
  ASSERT_TRUE(d.Start()) << d.Log();
  EXPECT_EQ(Mode(state_ / "tokens" / "ci"), 0640);

  // With $CAKE_STATE_DIR alone, cakectl finds the socket and the most capable readable token.
  const std::map<std::string, std::string> env = {
      {"CAKE_STATE_DIR", state_.string()}, {"CAKE_ADDR", ""}, {"CAKE_TOKEN_FILE", ""}};
  std::string out;
  EXPECT_EQ(Cakectl({"-o", "json", "status"}, env, &out), 0) << out;
  EXPECT_NE(out.find("\"boot_id\""), std::string::npos) << out;

  if (::geteuid() != 0 || !fs::exists("/usr/bin/setpriv"))
    GTEST_SKIP() << "running as another user needs root and setpriv";
  // A group member: uid nobody, supplementary group = the state directory's group.
  const gid_t group = 4242;
  for (const fs::path& p :
       {state_, state_ / "tokens", state_ / "tokens" / "ci", state_ / "tokens" / "agent",
        state_ / "tokens" / "operator", state_ / "caked.sock"})
    ASSERT_EQ(::chown(p.c_str(), 0, group), 0) << p;
  // Every directory above the state directory must let others through, as /var/lib does.
  for (fs::path p = state_.parent_path(); p != p.root_path(); p = p.parent_path())
    if ((Mode(p) & 0001) == 0) GTEST_SKIP() << p << " is not searchable by others";
  auto as = [&](const std::string& groups, const std::vector<std::string>& args) {
    std::vector<std::string> argv = {"/usr/bin/setpriv", "--reuid=65534", "--regid=65534",
                                     groups.empty() ? "--clear-groups" : "--groups=" + groups,
                                     CAKECTL_PATH};
    argv.insert(argv.end(), args.begin(), args.end());
    base::SubprocessOptions opts;
    opts.env = env;
    auto r = base::RunSubprocess(argv, opts);
    EXPECT_TRUE(r.ok());
    out = r->stdout_bytes + r->stderr_bytes;
    return r->exit_code;
  };
  EXPECT_EQ(as(std::to_string(group), {"-o", "json", "status"}), 0) << out;
  EXPECT_NE(out.find("\"boot_id\""), std::string::npos) << out;
  // The ci token does not create contracts: PERMISSION_DENIED naming the role it needs.
  const fs::path file = state_ / "member-contract.textproto";
  std::ofstream(file) << "name: \"x\"";
  ::chmod(file.c_str(), 0644);
  EXPECT_EQ(as(std::to_string(group), {"contract", "create", file.string()}), 4) << out;
  EXPECT_NE(out.find("needs operator"), std::string::npos) << out;
  // Someone outside the group reads no token and is told which file a member would read.
  EXPECT_EQ(as("", {"status"}), 4) << out;
  EXPECT_NE(out.find((state_ / "tokens" / "ci").string()), std::string::npos) << out;
}

// Watch is one server stream: cakectl prints the events as they come and, with --until-idle,
// ends when the daemon says every event was sent and no job waits; the number of open watches is
// bounded; a stopping daemon ends them.
TEST_F(DaemonTest, WatchStreamsEventsEndsWhenIdleIsBoundedAndEndsOnStop) {
  Daemon d(state_);
  ASSERT_TRUE(d.Start()) << d.Log();
  const std::map<std::string, std::string> env = {
      {"CAKE_ADDR", d.Address()}, {"CAKE_TOKEN_FILE", (state_ / "tokens" / "operator").string()}};
  std::string out;
  EXPECT_EQ(Cakectl({"--version"}, env, &out), 0);
  EXPECT_NE(out.find("cakectl " CAKE_VERSION), std::string::npos) << out;
  v1::StatusReply st;
  ASSERT_TRUE(d.stub()->Status(d.Ctx().get(), {}, &st).ok());
  EXPECT_EQ(st.version(), CAKE_VERSION);
  CreateContract(d);  // its baseline's compile job runs (no GPU: it stops at Compiled)
  EXPECT_EQ(Cakectl({"watch", "--until-idle", "--timeout", "120"}, env, &out), 0) << out;
  int lines = 0;
  std::set<std::string> kinds;
  for (absl::string_view line : absl::StrSplit(out, '\n', absl::SkipEmpty())) {
    ++lines;
    const size_t k = line.find("\"kind\":\"");
    if (k != std::string::npos)
      kinds.insert(std::string(line.substr(k + 8, line.find('"', k + 8) - k - 8)));
  }
  EXPECT_GE(lines, 3) << out;
  EXPECT_TRUE(kinds.count("proposed")) << out;
  EXPECT_TRUE(kinds.count("state")) << out;
  // After the last event: nothing more, and the stream still ends (idle).
  EXPECT_EQ(Cakectl({"watch", "--until-idle", "--after", "100000", "--timeout", "30"}, env, &out),
            0)
      << out;
  EXPECT_TRUE(out.empty()) << out;

  // Open watches are bounded: the 17th is RESOURCE_EXHAUSTED.
  std::vector<std::unique_ptr<grpc::ClientContext>> ctxs;
  std::vector<std::unique_ptr<grpc::ClientReader<v1::Event>>> readers;
  for (int i = 0; i < 16; ++i) {
    ctxs.push_back(d.Ctx());
    v1::WatchRequest req;
    req.set_after_id(100000);
    readers.push_back(d.stub()->Watch(ctxs.back().get(), req));
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  {
    auto ctx = d.Ctx();
    v1::WatchRequest req;
    auto extra = d.stub()->Watch(ctx.get(), req);
    v1::Event e;
    while (extra->Read(&e)) {
    }
    const grpc::Status s = extra->Finish();
    EXPECT_EQ(s.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED) << s.error_message();
    EXPECT_NE(s.error_message().find("at most 16"), std::string::npos);
  }
  // A stopping daemon ends them all, promptly.
  const auto t0 = std::chrono::steady_clock::now();
  d.Stop();
  for (auto& r : readers) {
    v1::Event e;
    while (r->Read(&e)) {
    }
    EXPECT_FALSE(r->Finish().ok());
  }
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(10));
}

// The shipped configuration parses as it is; log_level filters what caked logs; a bad level is
// refused naming the line.
TEST_F(DaemonTest, ShippedConfigParsesAndLogLevelFilters) {
  const fs::path shipped = fs::path(CAKE_SOURCE_DIR_FOR_TESTS) / "deploy" / "caked.conf";
  {
    Daemon d(state_);
    ASSERT_TRUE(d.Start({"--config", shipped.string()})) << d.Log();
    EXPECT_NE(d.Log().find("info caked listening"), std::string::npos) << d.Log();
    d.Stop();
  }
  const fs::path quiet = state_ / "quiet.conf";
  std::ofstream(quiet) << "log_level = warn\n";
  {
    fs::remove(state_ / "caked.log");
    Daemon d(state_);
    ASSERT_TRUE(d.Start({"--config", quiet.string()})) << d.Log();
    EXPECT_EQ(d.Log().find(" info "), std::string::npos) << d.Log();
    d.Stop();
  }
  const fs::path bad = state_ / "bad.conf";
  std::ofstream(bad) << "# a comment\nlog_level = loud\n";
  Daemon d(state_);
  EXPECT_FALSE(d.Start({"--config", bad.string()}));
  EXPECT_NE(d.Log().find("--log-level: loud not in {trace,debug,info,warn,error,critical}"),
            std::string::npos)
      << d.Log();
  EXPECT_EQ(WEXITSTATUS(d.exit_status()), 2);
  // A key that names no option is an error, not ignored.
  const fs::path unknown = state_ / "unknown.conf";
  std::ofstream(unknown) << "max_mesage_bytes = 10\n";
  Daemon u(state_);
  EXPECT_FALSE(u.Start({"--config", unknown.string()}));
  EXPECT_NE(u.Log().find("max-mesage-bytes"), std::string::npos) << u.Log();
}

// A reply over max_reply_bytes is RESOURCE_EXHAUSTED, not sent; small replies still go out.
TEST_F(DaemonTest, AReplyOverTheSendLimitIsResourceExhausted) {
  Daemon d(state_);
  ASSERT_TRUE(d.Start({"--max-reply-bytes", "4096"})) << d.Log();
  CreateContract(d);
  v1::ListCandidatesReply list;
  ASSERT_TRUE(d.stub()->ListCandidates(d.Ctx().get(), {}, &list).ok());
  ASSERT_EQ(list.candidates_size(), 1);
  const std::string baseline = list.candidates(0).id();
  v1::GetCandidateRequest req;
  req.set_candidate_id(baseline);
  evidence::Candidate c;
  grpc::Status s;
  // Once compiled, the whole candidate (receipt, SASS census, schedule text) passes 4 KiB.
  for (int i = 0; i < 600; ++i) {
    s = d.stub()->GetCandidate(d.Ctx().get(), req, &c);
    if (s.error_code() == grpc::StatusCode::RESOURCE_EXHAUSTED) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  EXPECT_EQ(s.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED) << s.error_message();
  v1::StatusReply st;
  EXPECT_TRUE(d.stub()->Status(d.Ctx().get(), {}, &st).ok());
  EXPECT_EQ(d.Stop(), 0);
}

// Flags win over the environment, which wins over the config file (caked --print-config shows
// the effective values).
TEST_F(DaemonTest, FlagsThenEnvironmentThenConfigFile) {
  const fs::path conf = state_ / "layers.conf";
  fs::create_directories(state_);
  std::ofstream(conf) << "log_level = warn\ncpu_workers = 5\nmax_queue = 9\n";
  base::SubprocessOptions o;
  o.env = {{"CAKED_LOG_LEVEL", "debug"}, {"CAKED_CPU_WORKERS", "6"}};
  auto r = base::RunSubprocess(
      {CAKED_PATH, "--config", conf.string(), "--cpu-workers", "7", "--print-config"}, o);
  ASSERT_TRUE(r.ok()) << r.status();
  const std::string& out = r->stdout_bytes;
  EXPECT_EQ(r->exit_code, 0) << r->stderr_bytes;
  EXPECT_NE(out.find("cpu-workers=7\n"), std::string::npos) << out;        // flag over env
  EXPECT_NE(out.find("log-level=\"debug\"\n"), std::string::npos) << out;  // env over config
  EXPECT_NE(out.find("max-queue=9\n"), std::string::npos) << out;          // config over default
  EXPECT_NE(out.find("max-attempts=3\n"), std::string::npos) << out;       // default
}

}  // namespace
}  // namespace cake
