// A real caked process on a temporary state directory, and a client for it. Used by the
// integration tests: real daemon, real workers, real SQLite, real nvcc.
#pragma once

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "cake/service.grpc.pb.h"
#include "google/protobuf/text_format.h"
#include "grpcpp/grpcpp.h"
#include "tests/compiler/test_util.h"

extern char** environ;

namespace cake::testing {

class Daemon {
 public:
  explicit Daemon(std::filesystem::path state, std::string caked = CAKED_PATH, bool no_gpu = true)
      : state_(std::move(state)), caked_(std::move(caked)), no_gpu_(no_gpu) {}
  ~Daemon() { Kill(); }

  const std::filesystem::path& state() const { return state_; }
  std::string Address() const { return "unix:" + (state_ / "caked.sock").string(); }

  // Starts caked with `extra` flags; waits until it listens. False if it exited instead.
  bool Start(const std::vector<std::string>& extra = {}, std::vector<std::string> env = {}) {
    std::vector<std::string> args = {caked_, "--state-dir", state_.string()};
    if (no_gpu_) args.push_back("--no-gpu");
    args.insert(args.end(), extra.begin(), extra.end());
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    for (char** e = environ; *e; ++e) env.push_back(*e);
    std::vector<char*> envp;
    for (auto& e : env) envp.push_back(e.data());
    envp.push_back(nullptr);
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    const std::string log = (state_ / "caked.log").string();
    std::filesystem::create_directories(state_);
    std::error_code ec;
    std::filesystem::remove(state_ / "caked.sock", ec);  // a killed daemon leaves its socket
    posix_spawn_file_actions_addopen(&fa, 2, log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
    const int rc = posix_spawn(&pid_, caked_.c_str(), &fa, nullptr, argv.data(), envp.data());
    posix_spawn_file_actions_destroy(&fa);
    if (rc != 0) return false;
    // A TCP daemon is up once it says so (the address it bound is in that line); the fixture's
    // own channel stays on the unix address it does not serve.
    bool over_tcp = false;
    for (size_t i = 0; i + 1 < extra.size(); ++i)
      if (extra[i] == "--listen" && extra[i + 1].rfind("unix:", 0) != 0) over_tcp = true;
    for (int i = 0; i < 200; ++i) {
      int status = 0;
      if (waitpid(pid_, &status, WNOHANG) == pid_) {
        exit_status_ = status;
        pid_ = 0;
        return false;
      }
      if (over_tcp && Read(state_ / "caked.log").find("caked listening on") != std::string::npos)
        return true;
      // The socket file appears at bind(), before listen(): a connect in between is refused, so
      // the daemon is up once a connection succeeds, not when the file exists.
      if (std::filesystem::exists(state_ / "caked.sock") &&
          std::filesystem::exists(state_ / "tokens" / "agent")) {
        Connect();
        if (channel_->WaitForConnected(std::chrono::system_clock::now() +
                                       std::chrono::milliseconds(200)))
          return true;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    return false;
  }

  pid_t pid() const { return pid_; }
  // SIGTERM and wait; returns the exit status.
  int Stop() {
    if (pid_ == 0) return exit_status_;
    kill(pid_, SIGTERM);
    waitpid(pid_, &exit_status_, 0);
    pid_ = 0;
    return exit_status_;
  }
  void Kill() {
    if (pid_ == 0) return;
    kill(pid_, SIGKILL);
    waitpid(pid_, &exit_status_, 0);
    pid_ = 0;
  }
  int exit_status() const { return exit_status_; }
  std::string Log() const { return Read(state_ / "caked.log"); }

  std::string Token(const std::string& role) const {
    std::string t = Read(state_ / "tokens" / role);
    while (!t.empty() && (t.back() == '\n' || t.back() == ' ')) t.pop_back();
    return t;
  }

  std::unique_ptr<grpc::ClientContext> Ctx(const std::string& role = "operator") const {
    auto c = std::make_unique<grpc::ClientContext>();
    if (!role.empty()) c->AddMetadata("authorization", "Bearer " + Token(role));
    c->set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
    return c;
  }
  v1::CakeService::Stub* stub() { return stub_.get(); }

  // Polls until pred(candidate) holds or the timeout passes.
  bool WaitFor(const std::string& id, const std::function<bool(const evidence::Candidate&)>& pred,
               std::chrono::seconds timeout = std::chrono::seconds(120)) {
    const auto end = std::chrono::steady_clock::now() + timeout;
    while (std::chrono::steady_clock::now() < end) {
      v1::GetCandidateRequest req;
      req.set_candidate_id(id);
      evidence::Candidate c;
      if (stub_->GetCandidate(Ctx().get(), req, &c).ok() && pred(c)) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
    }
    return false;
  }

  static std::string Read(const std::filesystem::path& p) {
    std::ifstream in(p, std::ios::binary);
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
  }

 private:
  void Connect() {
    grpc::ChannelArguments args;
    args.SetMaxSendMessageSize(64 << 20);
    // A restarted daemon listens on the same path: a fresh channel must not share a subchannel
    // still connected to the dead one.
    args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
    channel_ = grpc::CreateCustomChannel(Address(), grpc::InsecureChannelCredentials(), args);
    stub_ = v1::CakeService::NewStub(channel_);
  }
  std::filesystem::path state_;
  std::string caked_;
  bool no_gpu_ = true;
  pid_t pid_ = 0;
  int exit_status_ = 0;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<v1::CakeService::Stub> stub_;
};

// A fresh state directory per test (named from `prefix`), removed afterwards; a killed daemon's
// workers may still be finishing a write into it, so removal is retried for a few seconds.
class StateDirTest : public ::testing::Test {
 protected:
  explicit StateDirTest(std::string prefix) : prefix_(std::move(prefix)) {}
  void SetUp() override { state_ = FreshDir(prefix_); }
  void TearDown() override {
    std::error_code ec;
    for (int i = 0; i < 50; ++i) {
      std::filesystem::remove_all(state_, ec);
      if (!ec) return;
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
  }
  std::filesystem::path state_;

 private:
  std::string prefix_;
};

// The bundled warp-GEMM contract with its baseline schedule, and its creation by the operator.
inline contract::Contract BundledContract() {
  contract::Contract c;
  EXPECT_TRUE(google::protobuf::TextFormat::ParseFromString(
      ReadText(SourceDir() / "contracts/gemm_bf16.textproto"), &c));
  c.set_baseline_schedule(ReadText(SourceDir() / "examples/gemm_bf16.textproto"));
  return c;
}

inline std::string CreateContract(Daemon& d) {
  v1::CreateContractRequest req;
  *req.mutable_contract() = BundledContract();
  v1::CreateContractReply reply;
  grpc::Status s = d.stub()->CreateContract(d.Ctx("operator").get(), req, &reply);
  EXPECT_TRUE(s.ok()) << s.error_message();
  return reply.contract_id();
}

// The ErrorDetail a refusal carries in its status details (google.rpc.Status).
inline v1::ErrorDetail DetailOf(const grpc::Status& s) {
  v1::RpcStatus status;
  v1::ErrorDetail out;
  EXPECT_TRUE(status.ParseFromString(s.error_details())) << s.error_message();
  EXPECT_TRUE(status.details_size() == 1 && status.details(0).UnpackTo(&out));
  return out;
}

// A specific hypothesis, as an agent must state; its parent is the contract's baseline (the
// oldest candidate).
inline evidence::Hypothesis AgentHypothesis(Daemon& d, const std::string& contract) {
  evidence::Hypothesis h;
  v1::ListCandidatesRequest lr;
  lr.set_contract_id(contract);
  v1::ListCandidatesReply page;
  if (d.stub()->ListCandidates(d.Ctx().get(), lr, &page).ok() && page.candidates_size() > 0)
    h.set_parent(page.candidates(page.candidates_size() - 1).id());
  h.add_changed_decisions("tile");
  h.set_expected_effect("a different tile shape changes latency by 5%");
  h.set_falsification("the paired run is not FASTER on any row");
  return h;
}

}  // namespace cake::testing
