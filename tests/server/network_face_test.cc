// The daemon's network face against real caked and cakectl processes: listen addresses checked
// before anything binds, one owner per TCP port, TLS and mutual TLS with certificates made here by
// openssl, bad certificate files refused at start, refused calls logged and counted, and a
// refused CreateContract that stores nothing.
#include <sqlite3.h>
#include <sys/stat.h>

#include <regex>
#include <thread>

#include <gtest/gtest.h>

#include "absl/strings/str_cat.h"
#include "base/subprocess.h"
#include "daemon_fixture.h"

namespace cake {
namespace {

namespace fs = std::filesystem;
using testing::Daemon;

class NetworkFaceTest : public testing::StateDirTest {
 protected:
  NetworkFaceTest() : StateDirTest("caked_net") {}

  // caked with `flags` on a state directory of its own, expected to refuse to start.
  base::SubprocessResult Refused(const std::vector<std::string>& flags,
                                 const std::string& state_name = "refused") {
    std::vector<std::string> argv = {CAKED_PATH, "--state-dir", (state_ / state_name).string(),
                                     "--no-gpu"};
    argv.insert(argv.end(), flags.begin(), flags.end());
    base::SubprocessOptions o;
    o.timeout = std::chrono::seconds(30);
    auto r = base::RunSubprocess(argv, o);
    EXPECT_TRUE(r.ok()) << r.status();
    return r.ok() ? *r : base::SubprocessResult{};
  }

  int Cakectl(const std::vector<std::string>& args, const std::string& token_file,
              std::string* out) {
    std::vector<std::string> argv = {CAKECTL_PATH};
    argv.insert(argv.end(), args.begin(), args.end());
    base::SubprocessOptions o;
    o.timeout = std::chrono::seconds(60);
    o.env = {{"CAKE_TOKEN_FILE", token_file}, {"CAKE_ADDR", ""}};
    auto r = base::RunSubprocess(argv, o);
    EXPECT_TRUE(r.ok()) << r.status();
    *out = r.ok() ? r->stdout_bytes + r->stderr_bytes : "";
    return r.ok() ? r->exit_code : -1;
  }
};

// The port a daemon started on port 0 says it bound.
int BoundPort(const std::string& log) {
  std::smatch m;
  static const std::regex line(R"(caked listening on 127\.0\.0\.1:([0-9]+) )");
  return std::regex_search(log, m, line) ? std::stoi(m[1].str()) : 0;
}

void Openssl(const std::vector<std::string>& args) {
  std::vector<std::string> argv = {"openssl"};
  argv.insert(argv.end(), args.begin(), args.end());
  auto r = base::RunSubprocess(argv, {});
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_EQ(r->exit_code, 0) << r->stderr_bytes;
}

// Two CAs; a server certificate for localhost and 127.0.0.1, a client certificate of each CA,
// and an expired server certificate.
struct Pki {
  fs::path ca, other_ca, server_cert, server_key, client_cert, client_key, stranger_cert,
      stranger_key, expired_cert, other_key;
};

Pki MakePki(const fs::path& dir) {
  fs::create_directories(dir);
  auto p = [&](const char* name) { return (dir / name).string(); };
  const std::vector<std::string> ec_key = {"-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256",
                                           "-nodes"};
  auto self_signed = [&](const char* key, const char* cert, const char* cn) {
    std::vector<std::string> a = {"req", "-x509"};
    a.insert(a.end(), ec_key.begin(), ec_key.end());
    a.insert(a.end(), {"-keyout", p(key), "-out", p(cert), "-days", "2", "-subj", cn});
    Openssl(a);
  };
  self_signed("ca.key", "ca.pem", "/CN=cake-test-ca");
  self_signed("other-ca.key", "other-ca.pem", "/CN=cake-other-ca");
  std::ofstream(p("server.ext")) << "subjectAltName=DNS:localhost,IP:127.0.0.1\n";
  auto issued = [&](const char* key, const char* cert, const char* cn, const char* ca,
                    const char* ca_key, const char* days) {
    std::vector<std::string> a = {"req"};
    a.insert(a.end(), ec_key.begin(), ec_key.end());
    a.insert(a.end(), {"-keyout", p(key), "-out", p("req.csr"), "-subj", cn});
    Openssl(a);
    Openssl({"x509", "-req", "-in", p("req.csr"), "-CA", p(ca), "-CAkey", p(ca_key),
             "-CAcreateserial", "-out", p(cert), "-days", days, "-extfile", p("server.ext")});
  };
  issued("server.key", "server.pem", "/CN=localhost", "ca.pem", "ca.key", "2");
  issued("client.key", "client.pem", "/CN=cake-agent", "ca.pem", "ca.key", "2");
  issued("stranger.key", "stranger.pem", "/CN=cake-stranger", "other-ca.pem", "other-ca.key", "2");
  issued("expired.key", "expired.pem", "/CN=localhost", "ca.pem", "ca.key", "-1");
  return Pki{dir / "ca.pem",      dir / "other-ca.pem", dir / "server.pem",   dir / "server.key",
             dir / "client.pem",  dir / "client.key",   dir / "stranger.pem", dir / "stranger.key",
             dir / "expired.pem", dir / "other-ca.key"};
}

TEST_F(NetworkFaceTest, ListenAddressesAreCheckedBeforeAnythingBinds) {
  for (const char* bad : {"unix-abstract:cake", "unix:@cake", "unix:", "127.0.0.1:99999",
                          "127.0.0.1:-1", "127.0.0.1", "[::1:5000", "ho st:5000"}) {
    const base::SubprocessResult r = Refused({"--listen", bad});
    EXPECT_EQ(r.exit_code, 1) << bad;
    EXPECT_NE(r.stderr_bytes.find(absl::StrCat("listen address '", bad, "'")), std::string::npos)
        << bad << ": " << r.stderr_bytes;
  }
  // Anyone could replace a socket in a folder every user may write.
  const fs::path open_folder = state_ / "open";
  fs::create_directories(open_folder);
  ::chmod(open_folder.c_str(), 0777);
  const base::SubprocessResult open = Refused({"--listen", "unix:" + (open_folder / "s").string()});
  EXPECT_EQ(open.exit_code, 1);
  EXPECT_NE(open.stderr_bytes.find("is writable by every user"), std::string::npos)
      << open.stderr_bytes;
  const base::SubprocessResult missing =
      Refused({"--listen", "unix:" + (state_ / "no-such-folder" / "s").string()});
  EXPECT_NE(missing.stderr_bytes.find("does not exist"), std::string::npos) << missing.stderr_bytes;
  // Other hosts could reach this address and tokens would cross in clear.
  const base::SubprocessResult clear = Refused({"--listen", "0.0.0.0:0"});
  EXPECT_EQ(clear.exit_code, 1);
  EXPECT_NE(clear.stderr_bytes.find("--insecure-listen"), std::string::npos) << clear.stderr_bytes;
  EXPECT_FALSE(fs::exists(state_ / "refused" / "ledger.db")) << "a refused start opened the ledger";
  // Said explicitly, it starts, with a warning.
  Daemon d(state_ / "insecure");
  ASSERT_TRUE(d.Start({"--listen", "0.0.0.0:0", "--insecure-listen", "true"})) << d.Log();
  EXPECT_NE(d.Log().find("without TLS (--insecure-listen)"), std::string::npos) << d.Log();
}

TEST_F(NetworkFaceTest, ASecondDaemonOnOnePortIsRefusedNamingTheFirst) {
  Daemon first(state_ / "first");
  ASSERT_TRUE(first.Start({"--listen", "127.0.0.1:0"})) << first.Log();
  const int port = BoundPort(first.Log());
  ASSERT_GT(port, 0) << first.Log();
  const std::string address = absl::StrCat("127.0.0.1:", port);
  const base::SubprocessResult second = Refused({"--listen", address}, "second");
  EXPECT_EQ(second.exit_code, 1);
  EXPECT_NE(second.stderr_bytes.find(absl::StrCat("in use by pid ", first.pid(), " (caked)")),
            std::string::npos)
      << second.stderr_bytes;
  // Every call still reaches the first.
  auto stub =
      v1::CakeService::NewStub(grpc::CreateChannel(address, grpc::InsecureChannelCredentials()));
  for (int i = 0; i < 4; ++i) {
    v1::StatusReply st;
    EXPECT_TRUE(stub->Status(first.Ctx().get(), {}, &st).ok());
  }
}

TEST_F(NetworkFaceTest, TlsAndMutualTlsWithCakectl) {
  const Pki pki = MakePki(state_ / "pki");
  if (::testing::Test::HasFatalFailure()) return;
  const std::vector<std::string> server_tls = {"--tls-cert", pki.server_cert.string(), "--tls-key",
                                               pki.server_key.string()};
  std::vector<std::string> flags = {"--listen", "127.0.0.1:0"};
  flags.insert(flags.end(), server_tls.begin(), server_tls.end());
  Daemon tls(state_ / "tls");
  ASSERT_TRUE(tls.Start(flags)) << tls.Log();
  const int port = BoundPort(tls.Log());
  ASSERT_GT(port, 0) << tls.Log();
  EXPECT_NE(tls.Log().find("(TLS;"), std::string::npos) << tls.Log();
  const std::string server = absl::StrCat("localhost:", port);
  const std::string token = (state_ / "tls" / "tokens" / "operator").string();
  std::string out;
  EXPECT_EQ(Cakectl({"--server", server, "--tls-ca", pki.ca.string(), "-o", "json", "status"},
                    token, &out),
            0)
      << out;
  EXPECT_NE(out.find("\"boot_id\""), std::string::npos) << out;
  // Plaintext to a TLS port, and a CA that did not sign the daemon's certificate: no channel.
  EXPECT_EQ(Cakectl({"--server", server, "status"}, token, &out), 5) << out;
  EXPECT_EQ(Cakectl({"--server", server, "--tls-ca", pki.other_ca.string(), "status"}, token, &out),
            5)
      << out;
  EXPECT_NE(out.find("TLS: the daemon's certificate must be signed by --tls-ca"), std::string::npos)
      << out;
  tls.Stop();

  // Mutual TLS: a certificate of the client CA is required on every call.
  flags.insert(flags.end(), {"--tls-client-ca", pki.ca.string()});
  Daemon mtls(state_ / "mtls");
  ASSERT_TRUE(mtls.Start(flags)) << mtls.Log();
  const std::string mserver = absl::StrCat("localhost:", BoundPort(mtls.Log()));
  const std::string mtoken = (state_ / "mtls" / "tokens" / "operator").string();
  EXPECT_NE(mtls.Log().find("(mutual TLS;"), std::string::npos) << mtls.Log();
  EXPECT_EQ(Cakectl({"--server", mserver, "--tls-ca", pki.ca.string(), "status"}, mtoken, &out), 5)
      << out;
  EXPECT_EQ(Cakectl({"--server", mserver, "--tls-ca", pki.ca.string(), "--tls-cert",
                     pki.client_cert.string(), "--tls-key", pki.client_key.string(), "status"},
                    mtoken, &out),
            0)
      << out;
  EXPECT_EQ(Cakectl({"--server", mserver, "--tls-ca", pki.ca.string(), "--tls-cert",
                     pki.stranger_cert.string(), "--tls-key", pki.stranger_key.string(), "-o",
                     "json", "status"},
                    mtoken, &out),
            4)
      << out;
  EXPECT_NE(out.find("\"code\":\"UNAUTHENTICATED\""), std::string::npos) << out;
  EXPECT_NE(out.find("not accepted by tls_client_ca"), std::string::npos) << out;
  const std::string log = mtls.Log();
  EXPECT_NE(log.find("warning refused Status from ipv"), std::string::npos) << log;
  EXPECT_NE(log.find("(client_certificate)"), std::string::npos) << log;
}

TEST_F(NetworkFaceTest, BadCertificateFilesStopTheDaemonNamingTheFile) {
  const Pki pki = MakePki(state_ / "pki");
  if (::testing::Test::HasFatalFailure()) return;
  const std::string listen = "127.0.0.1:0";
  struct Case {
    std::vector<std::string> flags;
    std::string says;
  };
  const std::vector<Case> cases = {
      {{"--tls-cert", pki.server_cert.string(), "--tls-key", pki.other_key.string()},
       "tls_key " + pki.other_key.string() + " does not match the certificate"},
      {{"--tls-cert", pki.expired_cert.string(), "--tls-key",
        (state_ / "pki" / "expired.key").string()},
       "tls_cert " + pki.expired_cert.string() + ": the certificate expired on"},
      {{"--tls-cert", pki.server_cert.string(), "--tls-key",
        (state_ / "pki" / "none.key").string()},
       "tls_key " + (state_ / "pki" / "none.key").string() + ": cannot be read"},
      {{"--tls-cert", pki.server_key.string(), "--tls-key", pki.server_key.string()},
       "no PEM certificate"},
      {{"--tls-cert", pki.server_cert.string()}, "needs both tls_cert and tls_key"},
  };
  for (const Case& c : cases) {
    std::vector<std::string> flags = {"--listen", listen};
    flags.insert(flags.end(), c.flags.begin(), c.flags.end());
    const base::SubprocessResult r = Refused(flags);
    EXPECT_EQ(r.exit_code, 1) << c.says;
    EXPECT_NE(r.stderr_bytes.find(c.says), std::string::npos) << r.stderr_bytes;
  }
  // TLS belongs to TCP; a unix socket is guarded by its mode.
  const base::SubprocessResult unix_tls =
      Refused({"--tls-cert", pki.server_cert.string(), "--tls-key", pki.server_key.string()});
  EXPECT_NE(unix_tls.stderr_bytes.find("apply to a TCP listen address"), std::string::npos)
      << unix_tls.stderr_bytes;
}

TEST_F(NetworkFaceTest, RefusedCallsAreLoggedOncePerPeerAndCounted) {
  Daemon d(state_ / "d");
  const fs::path metrics = state_ / "metrics.prom";
  ASSERT_TRUE(d.Start({"--metrics-file", metrics.string()})) << d.Log();
  const std::string bad_token = "0123456789abcdef0123456789abcdef";
  for (int i = 0; i < 3; ++i) {
    grpc::ClientContext ctx;
    ctx.AddMetadata("authorization", "Bearer " + bad_token);
    v1::StatusReply st;
    EXPECT_EQ(d.stub()->Status(&ctx, {}, &st).error_code(), grpc::StatusCode::UNAUTHENTICATED);
  }
  grpc::ClientContext no_token;
  v1::StatusReply st;
  EXPECT_EQ(d.stub()->Status(&no_token, {}, &st).error_code(), grpc::StatusCode::UNAUTHENTICATED);
  v1::CreateContractRequest create;
  v1::CreateContractReply created;
  EXPECT_EQ(d.stub()->CreateContract(d.Ctx("agent").get(), create, &created).error_code(),
            grpc::StatusCode::PERMISSION_DENIED);
  // The metrics file is rewritten every few seconds.
  std::string text;
  for (int i = 0; i < 150; ++i) {
    text = Daemon::Read(metrics);
    if (text.find("caked_auth_failures_total{reason=\"role_denied\"} 1") != std::string::npos)
      break;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  EXPECT_NE(text.find("caked_auth_failures_total{reason=\"unknown_token\"} 3"), std::string::npos)
      << text;
  EXPECT_NE(text.find("caked_auth_failures_total{reason=\"missing_token\"} 1"), std::string::npos)
      << text;
  EXPECT_NE(text.find("caked_auth_failures_total{reason=\"role_denied\"} 1"), std::string::npos)
      << text;
  const std::string log = d.Log();
  // One line for the peer's burst (the unix peer is one peer), naming method and reason.
  size_t lines = 0;
  for (size_t at = log.find("refused "); at != std::string::npos; at = log.find("refused ", at + 1))
    ++lines;
  EXPECT_EQ(lines, 1u) << log;
  EXPECT_NE(log.find("refused Status from unix:"), std::string::npos) << log;
  EXPECT_NE(log.find("(unknown_token)"), std::string::npos) << log;
  EXPECT_EQ(log.find(bad_token), std::string::npos) << "a token reached the log";
}

int64_t Rows(const fs::path& db_path, const char* table) {
  sqlite3* db = nullptr;
  int64_t n = -1;
  if (sqlite3_open_v2(db_path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr) == SQLITE_OK) {
    sqlite3_stmt* stmt = nullptr;
    if (sqlite3_prepare_v2(db, absl::StrCat("SELECT count(*) FROM ", table).c_str(), -1, &stmt,
                           nullptr) == SQLITE_OK &&
        sqlite3_step(stmt) == SQLITE_ROW)
      n = sqlite3_column_int64(stmt, 0);
    sqlite3_finalize(stmt);
  }
  sqlite3_close(db);
  return n;
}

TEST_F(NetworkFaceTest, ARefusedCreateContractStoresNothing) {
  Daemon d(state_ / "d");
  ASSERT_TRUE(d.Start()) << d.Log();
  const fs::path ledger = state_ / "d" / "ledger.db";
  auto counts = [&] {
    return std::vector<int64_t>{Rows(ledger, "contracts"), Rows(ledger, "candidates"),
                                Rows(ledger, "jobs"), Rows(ledger, "events")};
  };
  const std::vector<int64_t> before = counts();
  contract::Contract c = testing::BundledContract();
  for (const std::string& baseline : {std::string(), std::string("kernels { bogus: 1 }"),
                                      std::string("name: \"x\"\nkernels { name: \"a b\" }\n")}) {
    c.set_baseline_schedule(baseline);
    v1::CreateContractRequest req;
    *req.mutable_contract() = c;
    v1::CreateContractReply reply;
    const grpc::Status s = d.stub()->CreateContract(d.Ctx().get(), req, &reply);
    EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << baseline;
    EXPECT_EQ(testing::DetailOf(s).field().rfind("contract.baseline_schedule", 0), 0u)
        << baseline << ": " << testing::DetailOf(s).field() << ": " << s.error_message();
    EXPECT_EQ(counts(), before) << "a refused contract left rows: " << baseline;
  }
  // The same contract with its baseline is created as new.
  v1::CreateContractRequest req;
  *req.mutable_contract() = testing::BundledContract();
  v1::CreateContractReply reply;
  ASSERT_TRUE(d.stub()->CreateContract(d.Ctx().get(), req, &reply).ok());
  EXPECT_FALSE(reply.existed());
  EXPECT_EQ(Rows(ledger, "contracts"), before[0] + 1);
}

int ModeOf(const fs::path& p, struct stat* st) {
  return ::lstat(p.c_str(), st) == 0 ? static_cast<int>(st->st_mode & 07777) : -1;
}

// A root caked whose workers run as nobody: what they publish becomes the daemon's, readable by
// the workers' group, and no other local user lists the store or the job folders.
TEST_F(NetworkFaceTest, ArtifactsEndOwnedByTheDaemonAndOtherUsersListNothing) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root (workers drop to another uid)";
  Daemon d(state_ / "d");
  ASSERT_TRUE(d.Start()) << d.Log();
  if (d.Log().find("workers run as uid 65534") == std::string::npos)
    GTEST_SKIP() << "workers keep the daemon's uid here: " << d.Log();
  const std::string contract = testing::CreateContract(d);
  // The baseline compiles (no GPU here): its entry is then handed over.
  v1::ListCandidatesRequest list;
  list.set_contract_id(contract);
  v1::ListCandidatesReply candidates;
  ASSERT_TRUE(d.stub()->ListCandidates(d.Ctx().get(), list, &candidates).ok());
  ASSERT_GE(candidates.candidates_size(), 1);
  const std::string id = candidates.candidates(0).id();
  ASSERT_TRUE(d.WaitFor(id, [](const evidence::Candidate& c) {
    return c.state() >= evidence::COMPILED || c.state() == evidence::REJECTED;
  })) << d.Log();
  const fs::path store = state_ / "d" / "artifacts";
  struct stat s {};
  EXPECT_EQ(ModeOf(store, &s), 01770);
  EXPECT_EQ(s.st_uid, 0u);
  EXPECT_EQ(s.st_gid, 65534u);
  EXPECT_EQ(ModeOf(state_ / "d" / "work", &s), 0710);
  int entries = 0;
  for (const fs::directory_entry& shard : fs::directory_iterator(store)) {
    if (shard.path().filename().string().size() != 2) continue;
    for (const fs::directory_entry& entry : fs::directory_iterator(shard.path())) {
      ++entries;
      EXPECT_EQ(ModeOf(entry.path(), &s), 0750) << entry.path();
      EXPECT_EQ(s.st_uid, 0u) << entry.path();
      EXPECT_EQ(s.st_gid, 65534u) << entry.path();
      EXPECT_EQ(ModeOf(entry.path() / "kernel.cubin", &s), 0640) << entry.path();
      EXPECT_EQ(s.st_uid, 0u);
    }
  }
  EXPECT_GE(entries, 2) << "one entry per target (sm_120f and sm_90)";
  // Another local user (uid 4242, no groups) lists neither the store nor the job folders.
  for (const fs::path& p : {store, state_ / "d" / "work"}) {
    auto r = base::RunSubprocess(
        {"/usr/bin/setpriv", "--reuid=4242", "--regid=4242", "--clear-groups", "ls", p.string()},
        {});
    ASSERT_TRUE(r.ok());
    EXPECT_NE(r->exit_code, 0) << p << " is listable by another user: " << r->stdout_bytes;
  }
}

}  // namespace
}  // namespace cake
