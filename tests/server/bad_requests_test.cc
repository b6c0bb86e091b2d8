// Requests a real caked must refuse, saying what was wrong. A contract's shapes have documented
// bounds, checked with products that cannot wrap: a row or a validation case of 2097152^3
// (m*n*k = 2^63, which signed 64-bit arithmetic wrapped) is INVALID_ARGUMENT naming the field,
// and nothing is stored. Bytes that are not the method's message (not protobuf, or a string field
// that is not UTF-8) are INVALID_ARGUMENT naming the method, not an empty INTERNAL.
#include <gtest/gtest.h>

#include <condition_variable>
#include <mutex>
#include <set>

#include <sqlite3.h>

#include "absl/strings/str_cat.h"
#include "base/subprocess.h"
#include "cake/reflection_v1.grpc.pb.h"
#include "daemon_fixture.h"
#include "google/protobuf/descriptor.pb.h"
#include "grpcpp/generic/generic_stub.h"
#include "workloads/workload.h"

namespace cake {
namespace {

namespace fs = std::filesystem;
using testing::Daemon;

class BadRequestsTest : public testing::StateDirTest {
 protected:
  BadRequestsTest() : StateDirTest("caked_bounds") {}
};

void SetHuge(contract::ProblemShape* p) {
  auto* g = p->mutable_gemm_bf16();
  g->set_m(2097152);
  g->set_n(2097152);
  g->set_k(2097152);
}

TEST_F(BadRequestsTest, AShapeOfTwoToTheSixtyThreeIsRefusedNamingTheField) {
  Daemon d(state_);
  ASSERT_TRUE(d.Start()) << d.Log();
  for (const bool in_case : {false, true}) {
    v1::CreateContractRequest req;
    *req.mutable_contract() = testing::BundledContract();
    if (in_case) {
      *req.mutable_contract()->mutable_validation() =
          workloads::FindWorkload("gemm_bf16_tn")->DefaultPolicy();
      SetHuge(req.mutable_contract()->mutable_validation()->mutable_cases(0)->mutable_problem());
    } else {
      SetHuge(req.mutable_contract()->mutable_rows(0)->mutable_problem());
    }
    v1::CreateContractReply reply;
    const grpc::Status s = d.stub()->CreateContract(d.Ctx("operator").get(), req, &reply);
    ASSERT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << s.error_message();
    EXPECT_EQ(testing::DetailOf(s).field(),
              in_case ? "contract.validation.cases[0].problem" : "contract.rows[0].problem");
    EXPECT_NE(s.error_message().find("m = 2097152 is over 2^20"), std::string::npos)
        << s.error_message();
  }
  v1::StatusReply st;
  ASSERT_TRUE(d.stub()->Status(d.Ctx().get(), {}, &st).ok());
  EXPECT_EQ(st.contracts_size(), 0) << "a refused contract was stored";
}

// Raw bytes to a method, as a client built from nothing but the method's name would send them.
grpc::Status CallRaw(Daemon& d, const std::string& method, const std::string& bytes,
                     std::string* reply_bytes = nullptr) {
  auto channel = grpc::CreateChannel(d.Address(), grpc::InsecureChannelCredentials());
  grpc::GenericStub stub(channel);
  grpc::ClientContext ctx;
  ctx.AddMetadata("authorization", "Bearer " + d.Token("agent"));
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(20));
  grpc::Slice slice(bytes);
  grpc::ByteBuffer request(&slice, 1), reply;
  grpc::Status out;
  std::mutex mu;
  std::condition_variable cv;
  bool done = false;
  stub.UnaryCall(&ctx, method, grpc::StubOptions(), &request, &reply, [&](grpc::Status s) {
    std::lock_guard<std::mutex> lock(mu);
    out = std::move(s);
    done = true;
    cv.notify_one();
  });
  std::unique_lock<std::mutex> lock(mu);
  cv.wait(lock, [&] { return done; });
  if (reply_bytes != nullptr) {
    std::vector<grpc::Slice> slices;
    reply_bytes->clear();
    if (reply.Dump(&slices).ok())
      for (const grpc::Slice& sl : slices)
        reply_bytes->append(reinterpret_cast<const char*>(sl.begin()), sl.size());
  }
  return out;
}

// grpc.health.v1.Health/Check, by hand: HealthCheckRequest{service = 1}, HealthCheckResponse
// {status = 1} with SERVING = 1.
TEST_F(BadRequestsTest, HealthAnswersOverallAndPerService) {
  Daemon d(state_);
  ASSERT_TRUE(d.Start()) << d.Log();
  for (const std::string service : {"", "cake.v1.CakeService"}) {
    const std::string request =
        service.empty() ? "" : absl::StrCat("\x0a", std::string(1, char(service.size())), service);
    std::string reply;
    const grpc::Status s = CallRaw(d, "/grpc.health.v1.Health/Check", request, &reply);
    ASSERT_TRUE(s.ok()) << service << ": " << s.error_message();
    EXPECT_EQ(reply, std::string("\x08\x01", 2)) << "'" << service << "' is not SERVING";
  }
  std::string reply;
  EXPECT_EQ(CallRaw(d, "/grpc.health.v1.Health/Check", "\x0a\x04nope", &reply).error_code(),
            grpc::StatusCode::NOT_FOUND);
}

TEST_F(BadRequestsTest, BytesThatAreNotTheMessageAreInvalidArgumentNamingTheMethod) {
  Daemon d(state_);
  ASSERT_TRUE(d.Start()) << d.Log();
  const std::string method = "/cake.v1.CakeService/Propose";
  // Not protobuf at all: a field with wire type 7, which does not exist.
  const grpc::Status garbage = CallRaw(d, method, std::string("\x0f\xff\xff\xff", 4));
  EXPECT_EQ(garbage.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << garbage.error_message();
  EXPECT_NE(garbage.error_message().find("not a valid /cake.v1.CakeService/Propose message"),
            std::string::npos)
      << garbage.error_message();
  // A ProposeRequest whose contract_id (field 1, a string) is not UTF-8.
  const grpc::Status utf8 = CallRaw(d, method, std::string("\x0a\x02\xc3\x28", 4));
  EXPECT_EQ(utf8.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << utf8.error_message();
  EXPECT_NE(utf8.error_message().find("not valid UTF-8"), std::string::npos);
  // A well-formed request still reaches the handler (and its own answer).
  v1::ProposeRequest ok;
  ok.set_contract_id("ct-none");
  const grpc::Status handled = CallRaw(d, method, ok.SerializeAsString());
  EXPECT_EQ(handled.error_code(), grpc::StatusCode::NOT_FOUND) << handled.error_message();
}

// Reflection v1 (beside the plugin's v1alpha): a client built from reflection alone finds the
// service and every file its messages need.
TEST_F(BadRequestsTest, ReflectionV1ListsTheServicesAndServesTheirFiles) {
  Daemon d(state_);
  ASSERT_TRUE(d.Start()) << d.Log();
  auto stub = grpc::reflection::v1::ServerReflection::NewStub(
      grpc::CreateChannel(d.Address(), grpc::InsecureChannelCredentials()));
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(20));
  auto stream = stub->ServerReflectionInfo(&ctx);
  grpc::reflection::v1::ServerReflectionRequest req;
  grpc::reflection::v1::ServerReflectionResponse resp;
  req.set_list_services("");
  ASSERT_TRUE(stream->Write(req) && stream->Read(&resp));
  std::set<std::string> services;
  for (const auto& s : resp.list_services_response().service()) services.insert(s.name());
  EXPECT_TRUE(services.count("cake.v1.CakeService") && services.count("grpc.health.v1.Health") &&
              services.count("grpc.reflection.v1.ServerReflection"))
      << resp.DebugString();
  req.set_file_containing_symbol("cake.v1.CakeService");
  ASSERT_TRUE(stream->Write(req) && stream->Read(&resp));
  std::set<std::string> files;
  for (const std::string& bytes : resp.file_descriptor_response().file_descriptor_proto()) {
    google::protobuf::FileDescriptorProto f;
    ASSERT_TRUE(f.ParseFromString(bytes));
    files.insert(f.name());
  }
  const std::string names = [&] {
    std::string n;
    for (const std::string& f : files) n += f + " ";
    return n;
  }();
  EXPECT_TRUE(files.count("cake/service.proto") && files.count("cake/report.proto") &&
              files.count("google/protobuf/any.proto"))
      << names;
  req.set_file_containing_symbol("no.such.Symbol");
  ASSERT_TRUE(stream->Write(req) && stream->Read(&resp));
  EXPECT_EQ(resp.error_response().error_code(), static_cast<int>(grpc::StatusCode::NOT_FOUND));
  stream->WritesDone();
  EXPECT_TRUE(stream->Finish().ok());
}

// cakectl says a refusal's status by name and points at the user's own file.
TEST_F(BadRequestsTest, CakectlNamesTheStatusAndTheUsersFile) {
  Daemon d(state_);
  ASSERT_TRUE(d.Start()) << d.Log();
  const std::string contract = testing::CreateContract(d);
  const fs::path file = state_ / "mine.textproto";
  std::ofstream(file) << "name: \"x\"\nkernels { name: \"k\"\n  launch { bogus: 1 }\n}\n";
  base::SubprocessOptions o;
  o.env = {{"CAKE_ADDR", d.Address()},
           {"CAKE_TOKEN_FILE", (state_ / "tokens" / "operator").string()}};
  auto proposed =
      base::RunSubprocess({CAKECTL_PATH, "propose", file.string(), "--contract", contract}, o);
  ASSERT_TRUE(proposed.ok()) << proposed.status();
  EXPECT_EQ(proposed->exit_code, 6);  // refused by the daemon, not a usage error
  EXPECT_NE(proposed->stderr_bytes.find(file.string() + ":3:"), std::string::npos)
      << proposed->stderr_bytes;
  EXPECT_NE(proposed->stderr_bytes.find("(INVALID_ARGUMENT"), std::string::npos)
      << proposed->stderr_bytes;
  auto shown = base::RunSubprocess({CAKECTL_PATH, "show", "c99-none"}, o);
  ASSERT_TRUE(shown.ok());
  EXPECT_NE(shown->stderr_bytes.find("(NOT_FOUND)"), std::string::npos) << shown->stderr_bytes;
}

// A search is refused before anything is recorded: a budget out of its limits names the field,
// and a daemon without an execution device says so (a search times every proposal); a ci token
// may not start one; an unknown search id is NOT_FOUND.
TEST_F(BadRequestsTest, ASearchIsRefusedNamingWhyAndRecordsNothing) {
  Daemon d(state_);
  ASSERT_TRUE(d.Start()) << d.Log();
  const std::string contract = testing::CreateContract(d);
  auto start = [&](int64_t budget, int candidates, const std::string& role) {
    v1::StartSearchRequest req;
    req.set_contract_id(contract);
    req.set_budget_seconds(budget);
    req.set_max_candidates(candidates);
    v1::SearchReport r;
    return d.stub()->StartSearch(d.Ctx(role).get(), req, &r);
  };
  for (auto [budget, candidates, field] :
       {std::tuple{int64_t{0}, 0, "budget_seconds"}, std::tuple{int64_t{-60}, 0, "budget_seconds"},
        std::tuple{int64_t{1} << 40, 0, "budget_seconds"},
        std::tuple{int64_t{60}, 5000, "max_candidates"}}) {
    const grpc::Status s = start(budget, candidates, "agent");
    EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << s.error_message();
    EXPECT_EQ(testing::DetailOf(s).field(), field) << s.error_message();
  }
  const grpc::Status no_device = start(60, 0, "operator");
  EXPECT_EQ(no_device.error_code(), grpc::StatusCode::FAILED_PRECONDITION);
  EXPECT_NE(no_device.error_message().find("no execution device"), std::string::npos)
      << no_device.error_message();
  EXPECT_EQ(start(60, 0, "ci").error_code(), grpc::StatusCode::PERMISSION_DENIED);
  v1::GetSearchRequest get;
  get.set_search_id("s-0000000000000000");
  v1::SearchReport r;
  EXPECT_EQ(d.stub()->GetSearch(d.Ctx("ci").get(), get, &r).error_code(),
            grpc::StatusCode::NOT_FOUND);
  // Nothing proposed: the contract holds its baseline alone, and no search row exists.
  v1::ListCandidatesRequest list;
  list.set_contract_id(contract);
  v1::ListCandidatesReply candidates;
  ASSERT_TRUE(d.stub()->ListCandidates(d.Ctx().get(), list, &candidates).ok());
  EXPECT_EQ(candidates.candidates_size(), 1);
  d.Stop();
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open((state_ / "ledger.db").c_str(), &db), SQLITE_OK);
  sqlite3_stmt* q = nullptr;
  ASSERT_EQ(sqlite3_prepare_v2(db, "SELECT count(*) FROM searches", -1, &q, nullptr), SQLITE_OK);
  ASSERT_EQ(sqlite3_step(q), SQLITE_ROW);
  EXPECT_EQ(sqlite3_column_int(q, 0), 0);
  sqlite3_finalize(q);
  sqlite3_close(db);
}

// A search a previous daemon left running is taken up at start: here, with no execution device,
// it is ended (saying why) rather than left "running" for good.
TEST_F(BadRequestsTest, ARunningSearchIsEndedAtAStartWithoutADevice) {
  Daemon d(state_);
  ASSERT_TRUE(d.Start()) << d.Log();
  const std::string contract = testing::CreateContract(d);
  d.Stop();
  v1::SearchReport left;
  left.set_search_id("s-00000000000000aa");
  left.set_contract_id(contract);
  left.set_state("running");
  left.set_proposed(3);
  left.set_deadline_unix_ms(int64_t{4102444800000});  // 2100: not past
  const std::string body = left.SerializeAsString();
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open((state_ / "ledger.db").c_str(), &db), SQLITE_OK);
  sqlite3_stmt* q = nullptr;
  ASSERT_EQ(
      sqlite3_prepare_v2(db,
                         "INSERT INTO searches(id, contract_id, state, created_ms, "
                         "updated_ms, deadline_ms, body) VALUES (?, ?, 'running', 0, 0, ?, ?)",
                         -1, &q, nullptr),
      SQLITE_OK);
  sqlite3_bind_text(q, 1, left.search_id().c_str(), -1, SQLITE_TRANSIENT);
  sqlite3_bind_text(q, 2, contract.c_str(), -1, SQLITE_TRANSIENT);
  sqlite3_bind_int64(q, 3, left.deadline_unix_ms());
  sqlite3_bind_blob(q, 4, body.data(), int(body.size()), SQLITE_TRANSIENT);
  ASSERT_EQ(sqlite3_step(q), SQLITE_DONE);
  sqlite3_finalize(q);
  sqlite3_close(db);
  ASSERT_TRUE(d.Start()) << d.Log();
  v1::GetSearchRequest get;
  get.set_search_id(left.search_id());
  v1::SearchReport r;
  const grpc::Status s = d.stub()->GetSearch(d.Ctx("agent").get(), get, &r);
  ASSERT_TRUE(s.ok()) << s.error_message();
  EXPECT_EQ(r.state(), "finished");
  EXPECT_EQ(r.end_reason(), "restart without an execution device");
  EXPECT_EQ(r.proposed(), 3) << "what it did is kept";
}

}  // namespace
}  // namespace cake
