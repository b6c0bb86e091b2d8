// `cakectl export` against a real caked (real workers, nvcc, SQLite): refusals, the manifest
// checked against the ledger, byte-identical re-export, and the consumer example built against
// the folder (its binding refusals, and the Python face's planning).
//
// This machine may have no GPU, so nothing here can be validated into an incumbent the honest
// way. The test sets the compiled baseline as incumbent directly in the ledger (what promotion
// would write) while caked is stopped: the export then has no execution witness on any target,
// which is exactly what the manifest must say, and it leaves only with --allow-unqualified.
// scripts/device/export_round.sh runs the qualified path on a GPU machine.
#include <filesystem>
#include <fstream>
#include <set>

#include <gtest/gtest.h>

#include "base/digest.h"
#include "base/subprocess.h"
#include "cake/export.pb.h"
#include "google/protobuf/util/json_util.h"
#include "ledger/ledger.h"
#include "tests/server/daemon_fixture.h"

namespace cake {
namespace {

namespace fs = std::filesystem;
using testing::Daemon;

class ExportTest : public testing::StateDirTest {
 protected:
  ExportTest() : StateDirTest("export") {}

  base::SubprocessResult Cakectl(Daemon& d, std::vector<std::string> args,
                                 const std::string& role = "operator") {
    base::SubprocessOptions o;
    o.env = {{"CAKE_ADDR", d.Address()}, {"CAKE_TOKEN_FILE", (state_ / "tokens" / role).string()}};
    args.insert(args.begin(), CAKECTL_PATH);
    auto r = base::RunSubprocess(args, o);
    EXPECT_TRUE(r.ok()) << r.status();
    return r.ok() ? *r : base::SubprocessResult{};
  }

  static std::map<std::string, std::string> Files(const fs::path& dir) {
    std::map<std::string, std::string> out;
    for (const auto& e : fs::recursive_directory_iterator(dir))
      if (e.is_regular_file()) out[fs::relative(e.path(), dir).string()] = Daemon::Read(e.path());
    return out;
  }

  base::SubprocessResult Run(const std::vector<std::string>& argv, const fs::path& cwd = {}) {
    base::SubprocessOptions o;
    o.timeout = std::chrono::minutes(5);
    if (!cwd.empty()) o.working_dir = cwd.string();
    auto r = base::RunSubprocess(argv, o);
    EXPECT_TRUE(r.ok()) << r.status();
    return r.ok() ? *r : base::SubprocessResult{};
  }
};

TEST_F(ExportTest, ExportsTheIncumbentAsAFolderAConsumerBuildsAgainst) {
  Daemon d(state_);
  ASSERT_TRUE(d.Start()) << d.Log();
  const std::string contract = testing::CreateContract(d);
  v1::GetContractRequest gr;
  gr.set_contract_id(contract);
  v1::GetContractReply gc;
  ASSERT_TRUE(d.stub()->GetContract(d.Ctx().get(), gr, &gc).ok());
  v1::ListCandidatesRequest lr;
  lr.set_contract_id(contract);
  v1::ListCandidatesReply page;
  ASSERT_TRUE(d.stub()->ListCandidates(d.Ctx().get(), lr, &page).ok());
  ASSERT_EQ(page.candidates_size(), 1);
  const std::string baseline = page.candidates(0).id();
  ASSERT_TRUE(d.WaitFor(baseline, [](const evidence::Candidate& c) {
    return c.state() == evidence::COMPILED || c.state() == evidence::REJECTED;
  })) << d.Log();

  // No incumbent yet: refused, naming the contract; an agent may not export at all.
  const fs::path out = state_ / "out" / "gemm_export";
  auto refused = Cakectl(d, {"export", contract, "--out", out.string()});
  EXPECT_EQ(refused.exit_code, 6) << refused.stderr_bytes;
  EXPECT_NE(refused.stderr_bytes.find("contract " + contract + " has no incumbent"),
            std::string::npos)
      << refused.stderr_bytes;
  EXPECT_EQ(Cakectl(d, {"export", contract, "--out", out.string()}, "agent").exit_code, 4);
  EXPECT_FALSE(fs::exists(out));

  // The baseline made incumbent in the ledger, as promotion would record it.
  ASSERT_EQ(d.Stop(), 0);
  std::map<std::string, std::string> receipt_cubins;  // target -> the ledger's cubin sha256
  {
    auto ledger = ledger::Ledger::Open((state_ / "ledger.db").string());
    ASSERT_TRUE(ledger.ok()) << ledger.status();
    ASSERT_TRUE((*ledger)->contracts().SetIncumbent(contract, baseline, "set by the test").ok());
    for (const std::string t : {"sm_120f", "sm_90"}) {
      auto r = (*ledger)->evidence().GetReceipt(baseline, t);
      ASSERT_TRUE(r.ok()) << r.status();
      receipt_cubins[t] = r->cubin_sha256();
    }
  }
  ASSERT_TRUE(d.Start()) << d.Log();

  // No execution witness anywhere: refused by default and for a named target; an unknown
  // target is a bad argument.
  auto unwitnessed = Cakectl(d, {"export", contract, "--out", out.string()});
  EXPECT_EQ(unwitnessed.exit_code, 6);
  EXPECT_NE(unwitnessed.stderr_bytes.find("has an execution witness; --allow-unqualified"),
            std::string::npos)
      << unwitnessed.stderr_bytes;
  auto named = Cakectl(d, {"export", contract, "--out", out.string(), "--targets", "sm_90"});
  EXPECT_NE(named.stderr_bytes.find("sm_90 has no execution witness"), std::string::npos)
      << named.stderr_bytes;
  auto unknown = Cakectl(d, {"export", contract, "--out", out.string(), "--targets", "sm_77x"});
  EXPECT_NE(unknown.stderr_bytes.find("unknown target 'sm_77x'"), std::string::npos);
  EXPECT_FALSE(fs::exists(out));

  // Exported as unqualified, and said so.
  auto exported = Cakectl(d, {"-o", "table", "export", contract, "--out", out.string(), "--targets",
                              "sm_90,sm_120f", "--allow-unqualified"});
  ASSERT_EQ(exported.exit_code, 0) << exported.stderr_bytes;
  EXPECT_NE(exported.stdout_bytes.find("exported incumbent " + baseline), std::string::npos);
  exporter::Manifest m;
  ASSERT_TRUE(
      google::protobuf::util::JsonStringToMessage(Daemon::Read(out / "manifest.json"), &m).ok());
  EXPECT_EQ(m.contract_id(), contract);
  EXPECT_EQ(m.incumbent(), baseline);
  EXPECT_EQ(m.operation(), "gemm_bf16_tn");
  EXPECT_EQ(m.schedule_hash(), page.candidates(0).schedule_hash());
  EXPECT_TRUE(m.unqualified());
  EXPECT_FALSE(m.has_ledger_timing()) << "nothing was timed";
  ASSERT_EQ(m.targets_size(), 2);
  for (const exporter::ExportedTarget& t : m.targets()) {
    EXPECT_FALSE(t.qualified()) << t.target();
    EXPECT_EQ(t.witnesses().sm90_execution(), "none");
    EXPECT_EQ(t.witnesses().sm12x_execution(), "none");
    EXPECT_NE(t.qualification().find("unqualified"), std::string::npos);
  }
  ASSERT_EQ(m.entries_size(), 1);
  const exporter::ExportedEntry& entry = m.entries(0);
  EXPECT_EQ(entry.guard().scalars_size(), 3) << "the kernel's declared facts";
  EXPECT_GT(entry.launch().args_size(), 0);
  ASSERT_EQ(entry.cubins_size(), 2);
  for (const exporter::ExportedCubin& c : entry.cubins()) {
    // Every hash in the manifest is the ledger's, and the file's.
    EXPECT_EQ(c.sha256(), receipt_cubins[c.target()]) << c.target();
    EXPECT_EQ(base::Sha256Hex(Daemon::Read(out / c.path())), c.sha256());
    EXPECT_EQ(base::Sha256Hex(Daemon::Read(out / c.source_path())), c.source_sha256());
    EXPECT_GT(c.registers(), 0);
  }
  EXPECT_FALSE(Daemon::Read(out / entry.schedule_path()).empty());

  // Byte-identical when exported again, into a fresh folder and over the first one.
  const fs::path again = state_ / "out" / "again";
  ASSERT_EQ(Cakectl(d, {"export", contract, "--out", again.string(), "--targets", "sm_120f,sm_90",
                        "--allow-unqualified"})
                .exit_code,
            0);
  const auto first_files = Files(out);
  EXPECT_EQ(Files(again), first_files);
  ASSERT_EQ(Cakectl(d, {"export", contract, "--out", out.string(), "--targets", "sm_90,sm_120f",
                        "--allow-unqualified"})
                .exit_code,
            0);
  EXPECT_EQ(Files(out), first_files);
  // A folder that is not an export is never written into.
  const fs::path foreign = state_ / "out" / "foreign";
  fs::create_directories(foreign);
  std::ofstream(foreign / "notes.txt") << "mine";
  auto clobber = Cakectl(d, {"export", contract, "--out", foreign.string(), "--allow-unqualified"});
  EXPECT_EQ(clobber.exit_code, 1);
  EXPECT_NE(clobber.stderr_bytes.find("holds no export"), std::string::npos);
  EXPECT_EQ(Files(foreign).size(), 1u);
  ASSERT_EQ(d.Stop(), 0);

  // The consumer example builds against the folder; its view of the operation is the
  // manifest's, and every bad binding is refused by name.
  const fs::path consumer = state_ / "consumer";
  auto configured =
      Run({"cmake", "-S", (testing::SourceDir() / "examples/export_consumer").string(), "-B",
           consumer.string(), "-DCAKE_EXPORT_DIR=" + out.string()});
  ASSERT_EQ(configured.exit_code, 0) << configured.stdout_bytes << configured.stderr_bytes;
  auto built = Run({"cmake", "--build", consumer.string(), "--target", "export_consumer_checks",
                    "export_consumer_run"});
  ASSERT_EQ(built.exit_code, 0) << built.stdout_bytes << built.stderr_bytes;
  auto described = Run({(consumer / "export_consumer_checks").string(), "--describe"});
  ASSERT_EQ(described.exit_code, 0);
  EXPECT_NE(described.stdout_bytes.find("contract " + contract), std::string::npos);
  for (const exporter::ExportedTensor& t : m.tensors())
    EXPECT_NE(described.stdout_bytes.find("tensor " + t.name() + " " + t.dtype()),
              std::string::npos)
        << described.stdout_bytes;
  for (const exporter::ExportedCubin& c : entry.cubins())
    EXPECT_NE(
        described.stdout_bytes.find("cubin " + entry.name() + " " + c.target() + " " + c.path()),
        std::string::npos)
        << described.stdout_bytes;
  auto refusals = Run({(consumer / "export_consumer_checks").string(), "--refusals"});
  EXPECT_EQ(refusals.exit_code, 0) << refusals.stdout_bytes;
  EXPECT_NE(refusals.stdout_bytes.find("refused wrong dtype"), std::string::npos);
  EXPECT_NE(refusals.stdout_bytes.find("refused misaligned address"), std::string::npos);
  EXPECT_NE(refusals.stdout_bytes.find("refused Run before Prepare"), std::string::npos);

  // The Python face, over the folder's own build: plans and refuses without a device.
  const fs::path build = out / "build";
  ASSERT_EQ(Run({"cmake", "-S", out.string(), "-B", build.string()}).exit_code, 0);
  ASSERT_EQ(Run({"cmake", "--build", build.string()}).exit_code, 0);
  auto python = Run({"python3", "-c",
                     "import sys; from cake_export import Export, CakeExportError\n"
                     "e = Export(sys.argv[1]); l = e.plan(M=4096, N=4096, K=4096)\n"
                     "print(e.operation, ','.join(e.scalars), l.entry, l.workspace_bytes)\n"
                     "try:\n  e.plan(M=1, N=1, K=12)\nexcept CakeExportError as x:\n  print(x)\n"
                     "try:\n  l.run()\nexcept CakeExportError as x:\n  print(x)\n",
                     out.string()},
                    out / "launcher");
  ASSERT_EQ(python.exit_code, 0) << python.stderr_bytes;
  EXPECT_NE(python.stdout_bytes.find("gemm_bf16_tn M,N,K " + entry.name() + " 0"),
            std::string::npos)
      << python.stdout_bytes;
  EXPECT_NE(python.stdout_bytes.find("needs K >= 8 and a multiple of 8 (it is 12)"),
            std::string::npos)
      << python.stdout_bytes;
  EXPECT_NE(python.stdout_bytes.find("Run before Prepare"), std::string::npos);
}

TEST_F(ExportTest, APortfolioExportsItsEntriesInDispatchOrderWithTheirGuardsAndWorkspace) {
  Daemon d(state_);
  ASSERT_TRUE(d.Start()) << d.Log();
  const std::string contract = testing::CreateContract(d);
  auto proposed = Cakectl(d, {"-o", "json", "propose", "--portfolio",
                              (testing::SourceDir() / "portfolios/gemm_bf16.textproto").string(),
                              "--contract", contract});
  ASSERT_EQ(proposed.exit_code, 0) << proposed.stderr_bytes;
  const size_t at = proposed.stdout_bytes.find("\"candidate_id\": \"");
  ASSERT_NE(at, std::string::npos) << proposed.stdout_bytes;
  const std::string portfolio =
      proposed.stdout_bytes.substr(at + 17, proposed.stdout_bytes.find('"', at + 17) - at - 17);
  ASSERT_TRUE(d.WaitFor(portfolio, [](const evidence::Candidate& c) {
    return c.state() == evidence::COMPILED || c.state() == evidence::REJECTED;
  })) << d.Log();
  ASSERT_EQ(d.Stop(), 0);
  {
    auto ledger = ledger::Ledger::Open((state_ / "ledger.db").string());
    ASSERT_TRUE(ledger.ok()) << ledger.status();
    ASSERT_TRUE((*ledger)->contracts().SetIncumbent(contract, portfolio, "set by the test").ok());
  }
  ASSERT_TRUE(d.Start()) << d.Log();
  const fs::path out = state_ / "portfolio_export";
  auto exported = Cakectl(
      d, {"export", contract, "--out", out.string(), "--targets", "sm_90", "--allow-unqualified"});
  ASSERT_EQ(exported.exit_code, 0) << exported.stderr_bytes;
  ASSERT_EQ(d.Stop(), 0);
  exporter::Manifest m;
  ASSERT_TRUE(
      google::protobuf::util::JsonStringToMessage(Daemon::Read(out / "manifest.json"), &m).ok());
  EXPECT_EQ(m.incumbent(), portfolio);
  ASSERT_EQ(m.entries_size(), 3);
  EXPECT_EQ(m.entries(0).name(), "full_tiles");
  EXPECT_EQ(m.entries(1).name(), "skinny_split_k");
  EXPECT_EQ(m.entries(2).name(), "general");
  // A member's guard is its own facts added to the kernel's declared ones.
  bool m_max_64 = false;
  for (const portfolio::ScalarGuard& g : m.entries(1).guard().scalars())
    m_max_64 |= g.scalar() == "M" && g.max() == 64;
  EXPECT_TRUE(m_max_64) << m.entries(1).DebugString();
  EXPECT_NE(m.entries(1).workspace_bytes(), "0") << "split-K takes a workspace";
  EXPECT_EQ(m.entries(2).workspace_bytes(), "0");
  for (const exporter::ExportedEntry& e : m.entries()) {
    ASSERT_EQ(e.cubins_size(), 1);
    EXPECT_EQ(base::Sha256Hex(Daemon::Read(out / e.cubins(0).path())), e.cubins(0).sha256());
    EXPECT_FALSE(Daemon::Read(out / e.schedule_path()).empty()) << e.schedule_path();
  }

  const fs::path consumer = state_ / "consumer";
  ASSERT_EQ(Run({"cmake", "-S", (testing::SourceDir() / "examples/export_consumer").string(), "-B",
                 consumer.string(), "-DCAKE_EXPORT_DIR=" + out.string()})
                .exit_code,
            0);
  ASSERT_EQ(
      Run({"cmake", "--build", consumer.string(), "--target", "export_consumer_checks"}).exit_code,
      0);
  auto refusals = Run({(consumer / "export_consumer_checks").string(), "--refusals"});
  EXPECT_EQ(refusals.exit_code, 0) << refusals.stdout_bytes;
  EXPECT_NE(refusals.stdout_bytes.find("refused workspace too small for entry 'skinny_split_k'"),
            std::string::npos)
      << refusals.stdout_bytes;
}

}  // namespace
}  // namespace cake
