// Against a real caked, as an agent: a schedule is data. A file any worker could read holds a
// fresh token. Every injection form in every name field of the bundled schedule (the #include
// of that file among them) is refused at Propose with INVALID_ARGUMENT naming the field, and
// nothing is queued; every free-text field (description, comments, hypothesis, idempotency key)
// carries the #include too, on a schedule that is accepted and compiled. Afterwards the token
// is in no reply, no candidate (receipt, diagnostics, status note), no Inspect section, no event
// and no status line.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <random>

#include "absl/strings/str_cat.h"
#include "daemon_fixture.h"
#include "tests/compiler/name_fields.h"
#include "tests/compiler/test_util.h"
#include "workloads/gemm_bf16/space.h"

namespace cake {
namespace {

namespace fs = std::filesystem;
using testing::Daemon;

class ScheduleInjectionTest : public testing::StateDirTest {
 protected:
  ScheduleInjectionTest() : StateDirTest("caked_injection") {}
};

std::string Text(const google::protobuf::Message& m) {
  std::string s;
  google::protobuf::TextFormat::PrintToString(m, &s);
  return s;
}

int64_t CandidateCount(Daemon& d, const std::string& contract) {
  v1::ListCandidatesRequest req;
  req.set_contract_id(contract);
  req.set_page_size(100);
  v1::ListCandidatesReply page;
  EXPECT_TRUE(d.stub()->ListCandidates(d.Ctx().get(), req, &page).ok());
  return page.candidates_size();
}

TEST_F(ScheduleInjectionTest, NoNameOrTextFieldReachesTheToolchainOrAnyReply) {
  // The planted file: readable by the worker's uid (0644 in a 0755 folder under /tmp).
  const fs::path planted_dir = testing::FreshDir("cake_planted");
  ::chmod(planted_dir.c_str(), 0755);
  std::mt19937_64 rng(std::random_device{}());
  const std::string token = absl::StrCat("CAKEPLANTED", rng(), "X", rng());
  const fs::path planted = planted_dir / "planted.h";
  // Shaped to make nvcc quote it: an undefined identifier on the first line.
  std::ofstream(planted) << token << " = " << token << " + 1;\n";
  ::chmod(planted.c_str(), 0644);

  Daemon d(state_);
  ASSERT_TRUE(d.Start()) << d.Log();
  const std::string contract = testing::CreateContract(d);
  const int64_t before = CandidateCount(d, contract);
  std::string seen;  // every reply, as text
  auto agent_propose = [&](const std::string& schedule, const evidence::Hypothesis& h,
                           const std::string& key, v1::ProposeReply* reply) {
    v1::ProposeRequest req;
    req.set_contract_id(contract);
    req.set_schedule_text(schedule);
    req.set_idempotency_key(key);
    *req.mutable_hypothesis() = h;
    grpc::Status s = d.stub()->Propose(d.Ctx("agent").get(), req, reply);
    absl::StrAppend(&seen, s.error_message(), "\n", s.error_details(), "\n", Text(*reply));
    return s;
  };

  const ir::Module base =
      testing::MustParse(testing::SourceDir() / "examples/gemm_bf16.textproto").module;
  const evidence::Hypothesis h = testing::AgentHypothesis(d, contract);
  int refused = 0;
  for (const testing::NameField& f : testing::NameField::Of(base))
    for (const std::string& form : testing::InjectionForms(planted.string())) {
      v1::ProposeReply r;
      const grpc::Status s = agent_propose(Text(f.With(base, form)), h, "", &r);
      ASSERT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT)
          << f.path() << " = " << form << ": " << s.error_message();
      const v1::ErrorDetail detail = testing::DetailOf(s);
      EXPECT_EQ(detail.field(), "schedule_text." + f.path()) << s.error_message();
      EXPECT_EQ(detail.diagnostic_id(), report::DIAG_INVALID_NAME);
      EXPECT_NE(s.error_message().find(f.path()), std::string::npos) << s.error_message();
      ++refused;
    }
  EXPECT_GT(refused, 500);
  EXPECT_EQ(CandidateCount(d, contract), before) << "a refused proposal was queued";

  // Free text may say anything: it is never source. A schedule (not the baseline) carrying the
  // #include in its description and in comments, proposed with it in every hypothesis field and
  // in its idempotency key, is accepted and compiled.
  const std::string include = absl::StrCat("#include \"", planted.string(), "\"");
  auto params = workloads::gemm_bf16::WarpGemmCandidates().at(1);
  ir::Module m = workloads::gemm_bf16::MakeWarpGemm(params);
  m.set_description(absl::StrCat("\n", include, "\n"));
  const std::string schedule = absl::StrCat("# ", include, "\n", Text(m), "# ", include, "\n");
  evidence::Hypothesis text_h = h;
  text_h.add_changed_decisions(include);
  text_h.set_expected_effect(absl::StrCat("a different tile changes latency by 5% ", include));
  text_h.set_falsification(absl::StrCat("the paired run is not FASTER on any row ", include));
  v1::ProposeReply accepted;
  // An idempotency key is printable ASCII without spaces.
  const std::string key = absl::StrCat("#include\"", planted.string(), "\"");
  grpc::Status s = agent_propose(schedule, text_h, key, &accepted);
  ASSERT_TRUE(s.ok()) << s.error_message();
  ASSERT_TRUE(d.WaitFor(accepted.candidate_id(), [](const evidence::Candidate& c) {
    return c.state() == evidence::COMPILED || c.state() == evidence::REJECTED;
  })) << d.Log();

  // Everything the daemon serves about this contract.
  v1::ListCandidatesRequest lr;
  lr.set_contract_id(contract);
  lr.set_page_size(100);
  v1::ListCandidatesReply page;
  ASSERT_TRUE(d.stub()->ListCandidates(d.Ctx().get(), lr, &page).ok());
  absl::StrAppend(&seen, Text(page));
  for (const auto& c : page.candidates()) {
    for (const char* role : {"operator", "agent"}) {
      v1::GetCandidateRequest gr;
      gr.set_candidate_id(c.id());
      evidence::Candidate full;
      ASSERT_TRUE(d.stub()->GetCandidate(d.Ctx(role).get(), gr, &full).ok());
      absl::StrAppend(&seen, Text(full));
    }
    v1::InspectRequest ir;
    ir.set_candidate_id(c.id());
    for (int sec = v1::DIAGNOSTICS; sec <= v1::EVENTS; ++sec)
      ir.add_sections(static_cast<v1::EvidenceSection>(sec));
    ir.set_max_bytes(1 << 20);
    v1::InspectReply inspected;
    ASSERT_TRUE(d.stub()->Inspect(d.Ctx("agent").get(), ir, &inspected).ok());
    absl::StrAppend(&seen, Text(inspected));
  }
  v1::GetCandidateRequest gr;
  gr.set_candidate_id(accepted.candidate_id());
  evidence::Candidate compiled;
  ASSERT_TRUE(d.stub()->GetCandidate(d.Ctx().get(), gr, &compiled).ok());
  EXPECT_EQ(compiled.state(), evidence::COMPILED) << compiled.status_note();
  v1::ListEventsRequest er;
  er.set_limit(1000);
  v1::ListEventsReply events;
  ASSERT_TRUE(d.stub()->ListEvents(d.Ctx().get(), er, &events).ok());
  absl::StrAppend(&seen, Text(events));
  v1::StatusReply status;
  ASSERT_TRUE(d.stub()->Status(d.Ctx().get(), {}, &status).ok());
  absl::StrAppend(&seen, Text(status));

  EXPECT_NE(seen.find(planted.string()), std::string::npos)
      << "the test did not look where the agent's own text is echoed";
  EXPECT_EQ(seen.find(token), std::string::npos) << "the planted file's content was served";
  EXPECT_EQ(d.Log().find(token), std::string::npos) << "the planted file's content was logged";
  fs::remove_all(planted_dir);
}

}  // namespace
}  // namespace cake
