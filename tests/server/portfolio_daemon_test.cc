// Portfolios through a real caked (no GPU here): a proposal carries every member inline; the
// daemon verifies and compiles each member under its guard for both targets, stores one
// dispatcher manifest per target, identifies the portfolio by its canonical hash, rejects it
// whole when one member fails under its guard (naming the member), and refuses malformed
// proposals naming the field. cakectl inlines a portfolio file's members. The GPU stages
// (validation per member, timing per row) run in the device runs under evidence/.
#include <gtest/gtest.h>

#include <map>

#include "base/subprocess.h"
#include "compiler/portfolio.h"
#include "daemon_fixture.h"
#include "tests/compiler/test_util.h"

namespace cake {
namespace {

namespace fs = std::filesystem;
using testing::Daemon;

portfolio::Portfolio BundledPortfolio() {
  const fs::path file = testing::SourceDir() / "portfolios/gemm_bf16.textproto";
  auto p = compiler::ParsePortfolioFile(file.string());
  EXPECT_TRUE(p.ok()) << p.status();
  auto inlined = compiler::InlineMemberFiles(*p, file.parent_path());
  EXPECT_TRUE(inlined.ok()) << inlined.status();
  return *inlined;
}

grpc::Status ProposePortfolio(Daemon& d, const std::string& contract, const portfolio::Portfolio& p,
                              v1::ProposeReply* reply) {
  v1::ProposeRequest req;
  req.set_contract_id(contract);
  *req.mutable_portfolio() = p;
  *req.mutable_hypothesis() = testing::AgentHypothesis(d, contract);
  return d.stub()->Propose(d.Ctx("agent").get(), req, reply);
}

evidence::Candidate Get(Daemon& d, const std::string& id) {
  v1::GetCandidateRequest req;
  req.set_candidate_id(id);
  evidence::Candidate c;
  EXPECT_TRUE(d.stub()->GetCandidate(d.Ctx().get(), req, &c).ok());
  return c;
}

class PortfolioDaemonTest : public testing::StateDirTest {
 protected:
  PortfolioDaemonTest() : StateDirTest("caked_portfolio") {}
};

TEST_F(PortfolioDaemonTest, EveryMemberCompilesUnderItsGuardIntoOneManifestPerTarget) {
  Daemon d(state_);
  ASSERT_TRUE(d.Start()) << d.Log();
  const std::string contract = testing::CreateContract(d);
  const portfolio::Portfolio p = BundledPortfolio();
  v1::ProposeReply r;
  grpc::Status s = ProposePortfolio(d, contract, p, &r);
  ASSERT_TRUE(s.ok()) << s.error_message();
  ASSERT_TRUE(d.WaitFor(
      r.candidate_id(),
      [](const evidence::Candidate& c) {
        return c.state() == evidence::COMPILED || c.state() == evidence::REJECTED;
      },
      std::chrono::seconds(600)))
      << d.Log();
  const evidence::Candidate c = Get(d, r.candidate_id());
  EXPECT_EQ(c.state(), evidence::COMPILED) << c.status_note();
  EXPECT_NE(c.status_note().find("no execution device"), std::string::npos) << c.status_note();
  EXPECT_EQ(c.schedule_hash(), *compiler::PortfolioHash(p));
  // The stored text is the portfolio itself, members inline.
  portfolio::Portfolio stored;
  ASSERT_TRUE(google::protobuf::TextFormat::ParseFromString(c.schedule_text(), &stored));
  EXPECT_EQ(*compiler::PortfolioHash(stored), c.schedule_hash());
  // One manifest per target (the contract's compile target and its execution target), each
  // with every member and the fallback last, every entry with a cubin in the store.
  ASSERT_EQ(c.manifests_size(), 2);
  std::set<std::string> targets;
  for (const portfolio::DispatcherManifest& m : c.manifests()) {
    targets.insert(m.target());
    ASSERT_EQ(m.entries_size(), p.members_size() + 1) << m.target();
    for (int i = 0; i < p.members_size(); ++i) EXPECT_EQ(m.entries(i).name(), p.members(i).name());
    EXPECT_EQ(m.entries(p.members_size()).name(), p.fallback().name());
    for (const auto& e : m.entries()) {
      EXPECT_EQ(e.cubin_sha256(), e.receipt().cubin_sha256());
      EXPECT_EQ(e.receipt().outcome(), report::LoweringReceipt::PASS) << e.name();
      EXPECT_TRUE(fs::exists(fs::path(e.receipt().artifact_dir()) / "kernel.cubin")) << e.name();
    }
    // The first member's entry was verified with its guard's facts: M a multiple of 128.
    bool m_fact = false;
    for (const auto& f : m.entries(0).guard().scalars())
      m_fact = m_fact || (f.scalar() == "M" && f.multiple_of() == 128);
    EXPECT_TRUE(m_fact) << m.entries(0).guard().DebugString();
  }
  EXPECT_EQ(targets, (std::set<std::string>{"sm_120f", "sm_90"}));

  // The same portfolio with a guard's facts listed in another order is the same candidate.
  portfolio::Portfolio reordered = p;
  auto* facts = reordered.mutable_members(0)->mutable_guard()->mutable_scalars();
  std::reverse(facts->begin(), facts->end());
  v1::ProposeReply again;
  ASSERT_TRUE(ProposePortfolio(d, contract, reordered, &again).ok());
  EXPECT_EQ(again.candidate_id(), r.candidate_id());
  EXPECT_TRUE(again.duplicate());
  // Lists leave manifests out.
  v1::ListCandidatesRequest lr;
  lr.set_contract_id(contract);
  v1::ListCandidatesReply list;
  ASSERT_TRUE(d.stub()->ListCandidates(d.Ctx().get(), lr, &list).ok());
  for (const auto& listed : list.candidates()) EXPECT_EQ(listed.manifests_size(), 0);
  EXPECT_EQ(d.Stop(), 0);
}

TEST_F(PortfolioDaemonTest, AMemberThatFailsUnderItsGuardRejectsThePortfolioNamingIt) {
  Daemon d(state_);
  ASSERT_TRUE(d.Start()) << d.Log();
  const std::string contract = testing::CreateContract(d);
  // The unmasked full-tile member is legal only for multiples of its tile; guarded by M alone,
  // its N and K tails are unmasked and the verifier rejects it.
  portfolio::Portfolio p = BundledPortfolio();
  p.mutable_members(0)->mutable_guard()->mutable_scalars()->DeleteSubrange(1, 2);
  v1::ProposeReply r;
  ASSERT_TRUE(ProposePortfolio(d, contract, p, &r).ok());
  ASSERT_TRUE(d.WaitFor(
      r.candidate_id(),
      [](const evidence::Candidate& c) { return c.state() == evidence::REJECTED; },
      std::chrono::seconds(600)))
      << d.Log();
  const evidence::Candidate c = Get(d, r.candidate_id());
  EXPECT_NE(c.status_note().find("member 'full_tiles'"), std::string::npos) << c.status_note();
  EXPECT_EQ(c.analysis().verdict(), report::REJECTED);
  EXPECT_EQ(d.Stop(), 0);
}

TEST_F(PortfolioDaemonTest, MalformedPortfoliosAreRefusedNamingTheField) {
  Daemon d(state_);
  ASSERT_TRUE(d.Start()) << d.Log();
  const std::string contract = testing::CreateContract(d);
  const portfolio::Portfolio good = BundledPortfolio();
  struct Case {
    const char* what;
    std::function<void(v1::ProposeRequest&)> edit;
    const char* field;
  };
  const Case cases[] = {
      {"a member names a file for the daemon to read",
       [](v1::ProposeRequest& q) {
         q.mutable_portfolio()->mutable_members(0)->clear_schedule_text();
         q.mutable_portfolio()->mutable_members(0)->set_schedule_file("/etc/shadow");
       },
       "portfolio"},
      {"schedule_text and a portfolio at once",
       [](v1::ProposeRequest& q) { q.set_schedule_text("kernels {}"); }, "portfolio"},
      {"a member's schedule does not parse",
       [](v1::ProposeRequest& q) {
         q.mutable_portfolio()->mutable_members(1)->set_schedule_text("kernels { name: ");
       },
       "portfolio.members[1].schedule_text"},
      {"an empty fallback schedule",
       [](v1::ProposeRequest& q) {
         q.mutable_portfolio()->mutable_fallback()->set_schedule_text("# nothing\n");
       },
       "portfolio.fallback.schedule_text"},
      {"schedules over the size limit together",
       [](v1::ProposeRequest& q) {
         for (int i = 0; i < 15; ++i) {
           portfolio::Member* m = q.mutable_portfolio()->add_members();
           *m = q.portfolio().members(0);
           m->set_name("copy" + std::to_string(i));
           m->set_schedule_text(m->schedule_text() + "\n#" + std::string(40000, 'x') + "\n");
         }
       },
       nullptr},
      {"a member name with a control character",
       [](v1::ProposeRequest& q) { q.mutable_portfolio()->mutable_members(0)->set_name("a\tb"); },
       "portfolio"},
  };
  for (const Case& k : cases) {
    v1::ProposeRequest req;
    req.set_contract_id(contract);
    *req.mutable_portfolio() = good;
    *req.mutable_hypothesis() = testing::AgentHypothesis(d, contract);
    k.edit(req);
    v1::ProposeReply r;
    grpc::Status s = d.stub()->Propose(d.Ctx("agent").get(), req, &r);
    EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT)
        << k.what << ": " << s.error_message();
    if (k.field != nullptr) {
      EXPECT_EQ(testing::DetailOf(s).field(), k.field) << k.what;
    }
  }
  // Nothing of them was stored: only the baseline is a candidate.
  v1::ListCandidatesReply list;
  ASSERT_TRUE(d.stub()->ListCandidates(d.Ctx().get(), {}, &list).ok());
  EXPECT_EQ(list.candidates_size(), 1);
  EXPECT_EQ(d.Stop(), 0);
}

TEST_F(PortfolioDaemonTest, CakectlProposesAPortfolioFileWithItsMembersInline) {
  Daemon d(state_);
  ASSERT_TRUE(d.Start()) << d.Log();
  const std::string contract = testing::CreateContract(d);
  const std::map<std::string, std::string> env = {
      {"CAKE_ADDR", d.Address()}, {"CAKE_TOKEN_FILE", (state_ / "tokens" / "operator").string()}};
  auto cakectl = [&](std::vector<std::string> args, std::string* out) {
    args.insert(args.begin(), CAKECTL_PATH);
    base::SubprocessOptions opts;
    opts.env = env;
    auto run = base::RunSubprocess(args, opts);
    EXPECT_TRUE(run.ok());
    *out = run->stdout_bytes + run->stderr_bytes;
    return run->exit_code;
  };
  const std::string file = (testing::SourceDir() / "portfolios/gemm_bf16.textproto").string();
  std::string out;
  ASSERT_EQ(cakectl({"-o", "json", "propose", file, "--portfolio", "--contract", contract}, &out),
            0)
      << out;
  EXPECT_NE(out.find("\"candidate_id\""), std::string::npos) << out;
  // Without --portfolio the file is read as one schedule, and it is not one (INVALID_ARGUMENT:
  // the daemon refused the request).
  EXPECT_EQ(cakectl({"propose", file, "--contract", contract}, &out), 6) << out;
  EXPECT_NE(out.find("has no field named \"members\""), std::string::npos) << out;
  // A portfolio whose member file is missing is a usage error, before any call.
  const fs::path broken = state_ / "broken.textproto";
  std::ofstream(broken)
      << "name: \"p\"\nmembers { name: \"a\" schedule_file: \"nope.textproto\" }\n"
         "fallback { schedule_file: \"nope.textproto\" }\n";
  EXPECT_EQ(cakectl({"propose", broken.string(), "--portfolio", "--contract", contract}, &out), 2)
      << out;
  EXPECT_NE(out.find("nope.textproto"), std::string::npos) << out;
  EXPECT_EQ(d.Stop(), 0);
}

}  // namespace
}  // namespace cake
