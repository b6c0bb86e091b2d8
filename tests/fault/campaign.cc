#include "campaign.h"

#include <signal.h>
#include <sqlite3.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <fstream>
#include <map>
#include <mutex>
#include <random>
#include <set>
#include <sstream>
#include <thread>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "google/protobuf/text_format.h"
#include "tests/compiler/test_util.h"
#include "tests/server/daemon_fixture.h"
#include "workloads/gemm_bf16/space.h"

namespace cake::fault {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;
using testing::Daemon;

// --- the ledger, read directly (never through the daemon under test) -----------------------

class LedgerReader {
 public:
  explicit LedgerReader(const fs::path& db) {
    if (sqlite3_open_v2(db.c_str(), &db_, SQLITE_OPEN_READONLY, nullptr) != SQLITE_OK) {
      sqlite3_close(db_);
      db_ = nullptr;
    }
    if (db_) sqlite3_busy_timeout(db_, 5000);
  }
  ~LedgerReader() { sqlite3_close(db_); }
  bool ok() const { return db_ != nullptr; }

  std::vector<std::vector<std::string>> Rows(const std::string& sql,
                                             const std::vector<std::string>& args = {}) {
    std::vector<std::vector<std::string>> out;
    if (!db_) return out;
    sqlite3_stmt* s = nullptr;
    if (sqlite3_prepare_v2(db_, sql.c_str(), -1, &s, nullptr) != SQLITE_OK) return out;
    for (size_t i = 0; i < args.size(); ++i)
      sqlite3_bind_text(s, static_cast<int>(i + 1), args[i].c_str(), -1, SQLITE_TRANSIENT);
    while (sqlite3_step(s) == SQLITE_ROW) {
      std::vector<std::string> row;
      for (int c = 0; c < sqlite3_column_count(s); ++c) {
        const unsigned char* t = sqlite3_column_text(s, c);
        row.emplace_back(t ? reinterpret_cast<const char*>(t) : "");
      }
      out.push_back(std::move(row));
    }
    sqlite3_finalize(s);
    return out;
  }
  std::string One(const std::string& sql, const std::vector<std::string>& args = {}) {
    auto rows = Rows(sql, args);
    return rows.empty() || rows[0].empty() ? "" : rows[0][0];
  }
  int64_t Int(const std::string& sql, const std::vector<std::string>& args = {}) {
    const std::string v = One(sql, args);
    return v.empty() ? -1 : std::stoll(v);
  }

 private:
  sqlite3* db_ = nullptr;
};

// --- processes -----------------------------------------------------------------------------

std::string ReadSmall(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

struct ProcInfo {
  pid_t pid = 0, ppid = 0;
  char state = '?';
  std::string exe, cwd, cmdline;
};

std::vector<ProcInfo> Processes() {
  std::vector<ProcInfo> out;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator("/proc", ec)) {
    const std::string name = e.path().filename().string();
    if (name.empty() || name[0] < '1' || name[0] > '9') continue;
    ProcInfo p;
    p.pid = std::stoi(name);
    const std::string stat = ReadSmall(e.path() / "stat");
    const size_t close = stat.rfind(')');
    if (close == std::string::npos || close + 4 >= stat.size()) continue;
    p.state = stat[close + 2];
    p.ppid = std::atoi(stat.c_str() + close + 4);
    std::error_code lec;
    p.exe = fs::read_symlink(e.path() / "exe", lec).string();
    p.cwd = fs::read_symlink(e.path() / "cwd", lec).string();
    p.cmdline = ReadSmall(e.path() / "cmdline");
    for (char& c : p.cmdline)
      if (c == '\0') c = ' ';
    out.push_back(std::move(p));
  }
  return out;
}

// Live processes that belong to `state` (their cwd or command line is in it, or they run the
// given executable) and are not descendants of `ancestor` (0: none is excused).
std::vector<ProcInfo> Strays(const fs::path& state, pid_t ancestor, const std::string& exe = "") {
  const std::vector<ProcInfo> all = Processes();
  std::map<pid_t, pid_t> parent;
  for (const ProcInfo& p : all) parent[p.pid] = p.ppid;
  std::vector<ProcInfo> out;
  const std::string dir = state.string();
  for (const ProcInfo& p : all) {
    if (p.state == 'Z' || p.pid == getpid()) continue;
    const bool ours = absl::StartsWith(p.cwd, dir) || absl::StrContains(p.cmdline, dir + "/") ||
                      (!exe.empty() && p.exe == exe);
    if (!ours || absl::StartsWith(p.exe, "/usr/bin/caked") ||
        p.exe.find("/caked") != std::string::npos)
      continue;
    bool excused = false;
    for (pid_t q = p.ppid, hops = 0; q > 1 && hops < 64; q = parent[q], ++hops)
      if (q == ancestor) excused = true;
    if (!excused) out.push_back(p);
  }
  return out;
}

std::string Describe(const std::vector<ProcInfo>& ps) {
  std::string s;
  for (const ProcInfo& p : ps)
    absl::StrAppend(&s, s.empty() ? "" : "; ", p.pid, " ", p.exe, " (ppid ", p.ppid, ")");
  return s;
}

// --- the daemon and its clients -----------------------------------------------------------

contract::Contract BundledContract() {
  contract::Contract c;
  google::protobuf::TextFormat::ParseFromString(
      testing::ReadText(testing::SourceDir() / "contracts/gemm_bf16.textproto"), &c);
  c.set_baseline_schedule(testing::ReadText(testing::SourceDir() / "examples/gemm_bf16.textproto"));
  return c;
}

// A distinct, legal schedule per n (a different module name changes the hash, not the kernel).
std::string Schedule(int n) {
  static const auto space = workloads::gemm_bf16::WarpGemmCandidates();
  ir::Module m = workloads::gemm_bf16::MakeWarpGemm(space[static_cast<size_t>(n) % space.size()]);
  m.set_name(absl::StrCat("fault_", n));
  std::string text;
  google::protobuf::TextFormat::PrintToString(m, &text);
  return text;
}

void WriteConfig(const fs::path& path, const std::vector<std::string>& lines) {
  std::ofstream out(path);
  for (const std::string& l : lines) out << l << "\n";
}

std::vector<std::string> BaseConfig(const CampaignOptions& o) {
  return {absl::StrCat("job_containment = ", o.process_group ? "process_group" : "auto"),
          "cpu_workers = 2", "max_queue = 100000"};
}

bool StartDaemon(Daemon& d, const fs::path& config, const std::vector<std::string>& env,
                 CampaignResult* r, const std::string& when) {
  for (int attempt = 0; attempt < 3; ++attempt) {
    if (d.Start({"--config", config.string()}, env)) return true;
    d.Kill();
  }
  const std::string log = d.Log();
  r->failures.push_back(absl::StrCat(
      when, ": caked did not start: ", log.size() > 600 ? log.substr(log.size() - 600) : log));
  return false;
}

std::string CreateContract(Daemon& d, CampaignResult* r) {
  v1::CreateContractRequest req;
  *req.mutable_contract() = BundledContract();
  v1::CreateContractReply reply;
  grpc::Status s = d.stub()->CreateContract(d.Ctx("operator").get(), req, &reply);
  if (!s.ok()) r->failures.push_back("CreateContract: " + s.error_message());
  return reply.contract_id();
}

grpc::Status Propose(Daemon& d, const std::string& contract, int n, const std::string& key,
                     v1::ProposeReply* reply, int deadline_s = 10) {
  v1::ProposeRequest req;
  req.set_contract_id(contract);
  req.set_schedule_text(Schedule(n));
  req.set_idempotency_key(key);
  // As CI submits regression runs: no hypothesis (agents must state one; that is tested apart).
  auto ctx = d.Ctx("ci");
  ctx->set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(deadline_s));
  return d.stub()->Propose(ctx.get(), req, reply);
}

// Candidates waiting for a job that does not exist (PROPOSED = 1, ANALYZED = 2).
// A candidate waiting with no job to wait for. A BLOCKED job (the machine failed it too often)
// is a wait an operator sees and ends (cakectl retry), not a stuck candidate.
int64_t StuckCandidates(LedgerReader& l) {
  return l.Int(
      "SELECT COUNT(*) FROM candidates c WHERE c.state IN (1, 2) AND NOT EXISTS (SELECT 1 FROM "
      "jobs j WHERE j.candidate_id = c.id AND j.state IN ('QUEUED', 'RUNNING', 'BLOCKED'))");
}

bool WaitIdle(Daemon& d, std::chrono::seconds timeout) {
  const auto end = Clock::now() + timeout;
  while (Clock::now() < end) {
    v1::StatusReply st;
    if (d.stub()->Status(d.Ctx().get(), {}, &st).ok() && st.queued_jobs() == 0 &&
        st.running_jobs() == 0)
      return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  return false;
}

// Drains the queue; a job the machine blocked (a daemon killed during it too often: the
// campaign's own doing) is retried, as an operator would once the fault is gone, until every
// candidate has its true verdict. How many blocked jobs were retried; false if never idle.
bool DrainRetryingBlocked(Daemon& d, std::chrono::seconds timeout, int64_t* retried) {
  for (int round = 0; round < 5; ++round) {
    if (!WaitIdle(d, timeout)) return false;
    v1::StatusReply st;
    if (!d.stub()->Status(d.Ctx().get(), {}, &st).ok()) return false;
    if (st.blocked_jobs().empty()) return true;
    std::set<std::string> candidates;
    for (const v1::JobFailure& b : st.blocked_jobs()) candidates.insert(b.candidate_id());
    for (const std::string& c : candidates) {
      v1::RetryRequest req;
      req.set_candidate_id(c);
      v1::RetryReply reply;
      if (d.stub()->Retry(d.Ctx().get(), req, &reply).ok()) *retried += reply.requeued_jobs();
    }
  }
  return WaitIdle(d, timeout);
}

// Starts the daemon once more on `state` and drains it, retrying what the machine blocked.
void FinalDrain(const fs::path& state, const fs::path& config, const CampaignOptions& o,
                CampaignResult* r) {
  int64_t retried = 0;
  Daemon d(state, o.caked);
  if (StartDaemon(d, config, {}, r, "drain")) {
    if (!DrainRetryingBlocked(d, std::chrono::seconds(1800), &retried))
      r->failures.push_back("drain: never idle");
    d.Stop();
  }
  r->report["blocked_jobs_retried"] = retried;
}

// Every schedule the kills and restarts propose is legal: a rejection can only be the machine's
// doing (`what`), which must never become a verdict.
void CountMachineRejections(LedgerReader& l, const std::string& what, CampaignResult* r) {
  const int64_t rejected = l.Int("SELECT COUNT(*) FROM candidates WHERE state = 8");
  if (rejected != 0)
    r->failures.push_back(absl::StrCat(rejected, " legal candidate(s) REJECTED: ", what,
                                       " became verdicts on schedules"));
  r->report["rejected_by_machine_faults"] = rejected;
}

}  // namespace

CampaignResult RunKillCampaign(const CampaignOptions& o) {
  CampaignResult r;
  const fs::path state = o.work / "kills";
  fs::remove_all(state);
  fs::create_directories(state);
  const fs::path config = o.work / "kills.conf";
  WriteConfig(config, BaseConfig(o));
  std::mt19937 rng(o.seed);
  std::string contract;
  std::map<std::string, std::string> acked;  // idempotency key -> candidate id
  int64_t integrity_ok = 0, orphans = 0, stuck = 0, lost = 0, proposals = 0, refused = 0;
  int next_schedule = 0;
  double max_start_ms = 0;
  for (int i = 0; i < o.kills; ++i) {
    Daemon d(state, o.caked);
    const auto t0 = Clock::now();
    if (!StartDaemon(d, config, {}, &r, absl::StrCat("kill ", i))) break;
    max_start_ms = std::max(max_start_ms,
                            std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
    // What the dead boot left must be gone once the new one serves.
    const auto left = Strays(state, getpid());
    if (!left.empty()) {
      ++orphans;
      r.failures.push_back(absl::StrCat("after restart ", i, ": ", left.size(),
                                        " process(es) of a dead boot: ", Describe(left)));
    }
    if (contract.empty()) contract = CreateContract(d, &r);
    std::atomic<bool> stop{false};
    std::mutex mu;
    // A new schedule (a compile job) on every third boot, so jobs run during many kills while
    // the backlog stays bounded, and otherwise repeats of earlier ones under fresh keys (the
    // idempotency and duplicate paths, no new job).
    bool new_schedule_due = i % 3 == 0;
    std::thread client([&] {
      for (int j = 0; !stop.load(); ++j) {
        int n;
        {
          std::lock_guard<std::mutex> lock(mu);
          if (new_schedule_due || next_schedule == 0) {
            n = next_schedule++;
            new_schedule_due = false;
          } else {
            n = std::uniform_int_distribution<int>(0, next_schedule - 1)(rng);
          }
        }
        const std::string key = absl::StrCat("k", i, "-", j);
        v1::ProposeReply reply;
        grpc::Status s = Propose(d, contract, n, key, &reply, 5);
        std::lock_guard<std::mutex> lock(mu);
        ++proposals;
        if (s.ok()) {
          acked[key] = reply.candidate_id();
        } else {
          ++refused;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
      }
    });
    int pause_ms;
    {
      std::lock_guard<std::mutex> lock(mu);
      pause_ms = std::uniform_int_distribution<int>(20, 1500)(rng);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(pause_ms));
    d.Kill();
    stop = true;
    client.join();
    LedgerReader l(state / "ledger.db");
    if (!l.ok() || l.One("PRAGMA integrity_check") != "ok") {
      r.failures.push_back(absl::StrCat("after kill ", i, ": integrity_check failed"));
    } else {
      ++integrity_ok;
    }
    std::lock_guard<std::mutex> lock(mu);
    // Every acknowledged candidate is there; a key is kept with the proposal that created it
    // (a repeat of an existing schedule is answered with that candidate).
    // One read of the table per kill (the checks stay linear in the acknowledged rows).
    std::set<std::string> ids;
    std::map<std::string, std::string> id_of_key;
    for (const auto& row : l.Rows("SELECT id, COALESCE(idempotency_key, '') FROM candidates")) {
      ids.insert(row[0]);
      if (!row[1].empty()) id_of_key[row[1]] = row[0];
    }
    for (const auto& [key, id] : acked)
      if (!ids.count(id) || (id_of_key.count(key) && id_of_key[key] != id)) {
        ++lost;
        r.failures.push_back(absl::StrCat("after kill ", i, ": acknowledged ", id, " (key ", key,
                                          ") is not in the ledger"));
      }
    const int64_t s = StuckCandidates(l);
    if (s != 0) {
      stuck += s;
      r.failures.push_back(
          absl::StrCat("after kill ", i, ": ", s, " candidate(s) PROPOSED/ANALYZED without a job"));
    }
    if (o.verbose && i % 50 == 0)
      std::fprintf(stderr, "kills: %d/%d, %zu acknowledged\n", i, o.kills, acked.size());
    if (r.failures.size() > 20) break;
  }
  // Finally drain: every candidate settles, nothing waits forever. Every schedule proposed is
  // legal: a rejection can only be the machine's doing (the kills) and counts as a failure.
  FinalDrain(state, config, o, &r);
  {
    LedgerReader l(state / "ledger.db");
    const int64_t unsettled = l.Int("SELECT COUNT(*) FROM candidates WHERE state IN (1, 2)");
    if (unsettled != 0)
      r.failures.push_back(absl::StrCat("after the drain ", unsettled, " candidate(s) unsettled"));
    CountMachineRejections(l, "the kills", &r);
    r.report["candidates_by_state"] = nlohmann::json::object();
    for (const auto& row : l.Rows("SELECT state, COUNT(*) FROM candidates GROUP BY state"))
      r.report["candidates_by_state"][row[0]] = std::stoll(row[1]);
    r.report["jobs_by_state"] = nlohmann::json::object();
    for (const auto& row : l.Rows("SELECT state, COUNT(*) FROM jobs GROUP BY state"))
      r.report["jobs_by_state"][row[0]] = std::stoll(row[1]);
  }
  r.report["sigkills"] = o.kills;
  r.report["proposals_sent"] = proposals;
  r.report["proposals_acknowledged"] = acked.size();
  r.report["proposals_refused_or_cut"] = refused;
  r.report["acknowledged_lost"] = lost;
  r.report["integrity_check_ok"] = integrity_ok;
  r.report["restarts_with_orphans"] = orphans;
  r.report["stuck_candidates_seen"] = stuck;
  r.report["max_start_ms"] = max_start_ms;
  return r;
}

CampaignResult RunRestartCampaign(const CampaignOptions& o) {
  CampaignResult r;
  const fs::path state = o.work / "restarts";
  fs::remove_all(state);
  fs::create_directories(state);
  const fs::path config = o.work / "restarts.conf";
  WriteConfig(config, BaseConfig(o));
  std::string contract;
  std::vector<std::string> acked;
  int next = 0, mid_job = 0, graceful = 0, killed = 0;
  double max_stop_ms = 0;
  for (int i = 0; i < o.restarts; ++i) {
    Daemon d(state, o.caked);
    if (!StartDaemon(d, config, {}, &r, absl::StrCat("restart ", i))) break;
    if (contract.empty()) contract = CreateContract(d, &r);
    // Keep a few jobs waiting so that one is always running when the daemon goes down.
    v1::StatusReply st;
    d.stub()->Status(d.Ctx().get(), {}, &st);
    for (int64_t q = st.queued_jobs(); q < 3; ++q) {
      v1::ProposeReply reply;
      if (Propose(d, contract, 100000 + next, absl::StrCat("r", next), &reply).ok())
        acked.push_back(reply.candidate_id());
      ++next;
    }
    const auto end = Clock::now() + std::chrono::seconds(30);
    bool running = false;
    while (!running && Clock::now() < end) {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
      running = d.stub()->Status(d.Ctx().get(), {}, &st).ok() && st.running_jobs() > 0;
    }
    if (running) ++mid_job;
    std::this_thread::sleep_for(std::chrono::milliseconds(100 * (i % 7)));
    if (i % 2 == 0) {
      const auto t0 = Clock::now();
      d.Stop();
      const double ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
      max_stop_ms = std::max(max_stop_ms, ms);
      ++graceful;
    } else {
      d.Kill();
      ++killed;
    }
    if (r.failures.size() > 20) break;
  }
  FinalDrain(state, config, o, &r);
  LedgerReader l(state / "ledger.db");
  if (l.One("PRAGMA integrity_check") != "ok") r.failures.push_back("integrity_check failed");
  CountMachineRejections(l, "the restarts", &r);
  const int64_t unfinished =
      l.Int("SELECT COUNT(*) FROM jobs WHERE state NOT IN ('DONE', 'FAILED')");
  const int64_t twice = l.Int(
      "SELECT COUNT(*) FROM (SELECT job_id FROM job_attempts WHERE outcome IN ('DONE', 'FAILED') "
      "GROUP BY job_id HAVING COUNT(*) > 1)");
  const int64_t duplicated_jobs = l.Int(
      "SELECT COUNT(*) FROM (SELECT candidate_id FROM jobs WHERE kind = 'compile' GROUP BY "
      "candidate_id HAVING COUNT(*) > 1)");
  int64_t missing = 0;
  for (const std::string& id : acked)
    if (l.Int("SELECT COUNT(*) FROM jobs WHERE candidate_id = ? AND kind = 'compile'", {id}) != 1)
      ++missing;
  const int64_t unsettled = l.Int("SELECT COUNT(*) FROM candidates WHERE state IN (1, 2)");
  if (unfinished) r.failures.push_back(absl::StrCat(unfinished, " job(s) never ended (lost)"));
  if (twice) r.failures.push_back(absl::StrCat(twice, " job(s) recorded as ended twice"));
  if (duplicated_jobs)
    r.failures.push_back(absl::StrCat(duplicated_jobs, " candidate(s) with two compile jobs"));
  if (missing) r.failures.push_back(absl::StrCat(missing, " acknowledged candidate(s) lost"));
  if (unsettled) r.failures.push_back(absl::StrCat(unsettled, " candidate(s) unsettled"));
  r.report["restarts"] = o.restarts;
  r.report["restarts_with_a_job_running"] = mid_job;
  r.report["graceful_stops"] = graceful;
  r.report["sigkills"] = killed;
  r.report["max_graceful_stop_ms"] = max_stop_ms;
  r.report["candidates"] = acked.size();
  r.report["jobs"] = l.Int("SELECT COUNT(*) FROM jobs");
  r.report["jobs_never_ended"] = unfinished;
  r.report["jobs_ended_twice"] = twice;
  r.report["attempts_shutdown"] =
      l.Int("SELECT COUNT(*) FROM job_attempts WHERE outcome = 'SHUTDOWN'");
  r.report["attempts_interrupted"] =
      l.Int("SELECT COUNT(*) FROM job_attempts WHERE outcome = 'INTERRUPTED'");
  r.report["jobs_blocked_after_crashes_then_retried"] = l.Int(
      "SELECT COUNT(*) FROM job_attempts WHERE outcome = 'INTERRUPTED' AND job_id IN "
      "(SELECT id FROM jobs WHERE state = 'DONE')");
  return r;
}

CampaignResult RunHostileSuite(const CampaignOptions& o) {
  CampaignResult r;
  const fs::path state = o.work / "hostile";
  const fs::path faults = o.work / "hostile-faults";
  fs::remove_all(state);
  fs::remove_all(faults);
  fs::create_directories(state);
  fs::create_directories(faults);
  // Both workers from copies the worker uid can reach and the process census can name (the
  // build folder may lie in a private 0700 checkout): the hostile worker execs the real one
  // itself, as that uid.
  const fs::path bin = o.work / "hostile-bin";
  fs::create_directories(bin);
  for (const fs::path& p : {o.work, bin}) ::chmod(p.c_str(), 0755);
  auto copy = [&](const std::string& from) {
    const fs::path to = bin / fs::path(from).filename();
    std::error_code ec;
    fs::copy_file(from, to, fs::copy_options::overwrite_existing, ec);
    ::chmod(to.c_str(), 0755);
    return to.string();
  };
  const std::string real_worker = copy(o.worker);
  const std::string hostile_worker = copy(o.hostile_worker);
  std::ofstream(faults / "real_worker") << real_worker;
  std::ofstream(faults / "behavior") << "ok";
  const int timeout_ms = 8000;  // a real compile here takes about 3 s
  const fs::path config = o.work / "hostile.conf";
  std::vector<std::string> lines = BaseConfig(o);
  lines.push_back(absl::StrCat("compile_timeout_ms = ", timeout_ms));
  lines.push_back(absl::StrCat("worker_path = ", hostile_worker));
  lines.push_back("compile_address_space_bytes = 1073741824");
  lines.push_back("job_pids_max = 64");
  lines.push_back("cpu_workers = 1");
  WriteConfig(config, lines);
  Daemon d(state, o.caked);
  if (!StartDaemon(d, config, {"CAKE_WORKER_FAULT_DIR=" + faults.string()}, &r, "hostile"))
    return r;
  const std::string contract = CreateContract(d, &r);
  std::vector<std::string> tokens;
  for (const char* role : {"operator", "agent", "ci"}) tokens.push_back(d.Token(role));
  const std::vector<std::string> behaviors = {"spin",  "forkbomb", "setsid",
                                              "flood", "alloc",    "readtoken"};
  nlohmann::json per = nlohmann::json::object();
  int n = 200000, contained = 0, runs = 0, clean_after = 0;
  double worst_over_ms = -1e9;
  auto settle = [&](const std::string& id) {
    d.WaitFor(
        id,
        [](const evidence::Candidate& c) {
          return c.state() == evidence::COMPILED || c.state() == evidence::REJECTED;
        },
        std::chrono::seconds(60));
    v1::GetCandidateRequest req;
    req.set_candidate_id(id);
    evidence::Candidate c;
    d.stub()->GetCandidate(d.Ctx().get(), req, &c);
    return c;
  };
  for (int round = 0; round < o.hostile_rounds; ++round)
    for (const std::string& b : behaviors) {
      std::ofstream(faults / "behavior", std::ios::trunc) << b;
      v1::ProposeReply reply;
      if (!Propose(d, contract, n++, "", &reply).ok()) {
        r.failures.push_back(b + ": propose failed");
        continue;
      }
      ++runs;
      const evidence::Candidate c = settle(reply.candidate_id());
      LedgerReader l(state / "ledger.db");
      const auto job = l.Rows(
          "SELECT started_ms, finished_ms, error FROM jobs WHERE candidate_id = ? AND kind = "
          "'compile'",
          {reply.candidate_id()});
      if (!per.contains(b)) per[b] = {{"runs", 0}, {"max_ms", 0.0}, {"pids_left", 0}};
      nlohmann::json& entry = per[b];
      if (job.empty() || job[0][1] == "0") {
        r.failures.push_back(b + ": the job did not end");
        continue;
      }
      const double ran_ms = std::stod(job[0][1]) - std::stod(job[0][0]);
      const double over = ran_ms - timeout_ms;
      worst_over_ms = std::max(worst_over_ms, over);
      const std::string error = job[0][2];
      const auto left = Strays(state, 0, hostile_worker);
      entry["runs"] = entry.value("runs", 0) + 1;
      entry["max_ms"] = std::max(entry.value("max_ms", 0.0), ran_ms);
      entry["pids_left"] = entry.value("pids_left", 0) + static_cast<int>(left.size());
      entry["last_error"] = error.substr(0, 300);
      bool ok = c.state() == evidence::REJECTED && over <= 2000 && left.empty();
      if (!left.empty()) r.failures.push_back(b + ": processes left: " + Describe(left));
      if (over > 2000)
        r.failures.push_back(absl::StrCat(b, ": ended ", over, " ms after the timeout"));
      for (const std::string& t : tokens)
        if (!t.empty() && error.find(t) != std::string::npos) {
          ok = false;
          r.failures.push_back(b + ": a token reached the job's error");
        }
      if (b == "readtoken") {
        for (const char* must :
             {"operator: Permission denied", "agent: Permission denied",
              "contract-id: Permission denied", "ledger.db: Permission denied",
              "signal daemon: Operation not permitted", "tcp connect: Permission denied"})
          if (error.find(must) == std::string::npos) {
            ok = false;
            r.failures.push_back(absl::StrCat("readtoken: expected '", must, "' in: ", error));
          }
      }
      if (ok) ++contained;
      // The next job is clean: the real worker, in the same daemon, compiles.
      std::ofstream(faults / "behavior", std::ios::trunc) << "ok";
      v1::ProposeReply next;
      if (Propose(d, contract, n++, "", &next).ok() &&
          settle(next.candidate_id()).state() == evidence::COMPILED) {
        ++clean_after;
      } else {
        r.failures.push_back(b + ": the next job after it did not compile");
      }
    }
  d.Stop();
  r.report["timeout_ms"] = timeout_ms;
  r.report["runs"] = runs;
  r.report["contained"] = contained;
  r.report["next_job_clean"] = clean_after;
  r.report["worst_ms_past_timeout"] = worst_over_ms;
  r.report["by_behavior"] = per;
  return r;
}

}  // namespace cake::fault
