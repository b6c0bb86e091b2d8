// cakectl: the command line of caked. Data to stdout, messages to stderr. Output is a table on a
// terminal and JSON otherwise (-o table|json overrides); `watch` prints NDJSON.
// Exit codes: 0 ok, 1 failure, 2 usage, 3 regression found, 4 auth, 5 daemon unavailable.
// Address and token: flags > $CAKE_ADDR / $CAKE_TOKEN_FILE > defaults derived from the state
// directory ($CAKE_STATE_DIR, default /var/lib/caked): the socket is the first that exists of
// /run/caked/caked.sock (the shipped unit's) and STATE_DIR/caked.sock, the token the first
// readable of STATE_DIR/tokens/{operator,ci,agent} (a member of the daemon's group reads ci).
// Tokens are read from files, never from the command line.
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <map>
#include <sstream>
#include <thread>

#include <ctime>

#include "CLI/CLI.hpp"
#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "base/cli_layers.h"
#include "cake/service.grpc.pb.h"
#include "clients/cakectl_commands.h"
#include "clients/cakectl_export.h"
#include "clients/cakectl_output.h"
#include "clients/cakectl_search.h"
#include "clients/report.h"
#include "compiler/portfolio.h"
#include "google/protobuf/struct.pb.h"
#include "google/protobuf/text_format.h"
#include "google/protobuf/util/json_util.h"
#include "grpcpp/grpcpp.h"
#include "workloads/workload.h"

namespace svc = cake::v1;
namespace ev = cake::evidence;

using cake::clients::Json;
using cake::clients::PrintCandidate;
using cake::clients::PrintCandidates;
using cake::clients::PrintInspect;
using cake::clients::PrintStatus;

namespace {

using cake::clients::kAuth;
using cake::clients::kBusy;
using cake::clients::kFail;
using cake::clients::kNotFound;
using cake::clients::kOk;
using cake::clients::kRefused;
using cake::clients::kRegression;
using cake::clients::kUnavailable;
using cake::clients::kUsage;

struct Globals {
  std::string server, token_file, output;
  std::string tls_ca, tls_cert, tls_key;  // TLS to a TCP daemon (PEM files)
};

// Errors as JSON on stderr under `-o json` (not when json is only the default of a pipe).
bool json_errors = false;

std::string ReadFile(const std::string& path, bool* ok) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  *ok = static_cast<bool>(in) || !s.str().empty();
  return s.str();
}

// Applied to every error text printed: no secret reaches a terminal or a CI log.
std::function<std::string(std::string)> redact = [](std::string t) { return t; };

// The ErrorDetail a refusal carries in its status details (empty if none).
svc::ErrorDetail DetailOf(const grpc::Status& s) {
  svc::RpcStatus status;
  svc::ErrorDetail d;
  if (s.error_details().empty() || !status.ParseFromString(s.error_details()) ||
      status.details_size() == 0 || !status.details(0).UnpackTo(&d))
    return svc::ErrorDetail();
  return d;
}

// That detail in words ("" if none).
std::string DetailText(const grpc::Status& s) {
  const svc::ErrorDetail d = DetailOf(s);
  std::vector<std::string> parts;
  if (d.diagnostic_id() != cake::report::DIAG_UNSPECIFIED)
    parts.push_back(absl::StrCat("diagnostic ", cake::report::DiagId_Name(d.diagnostic_id())));
  if (!d.field().empty()) parts.push_back(absl::StrCat("field ", d.field()));
  if (d.limit() > 0) parts.push_back(absl::StrCat("limit ", d.limit()));
  if (!d.earlier_candidate().empty())
    parts.push_back(absl::StrCat("earlier candidate ", d.earlier_candidate()));
  return absl::StrJoin(parts, ", ");
}

// Set by the verbs that send a file's text, so a position the daemon reports in it
// ("schedule.textproto:12:3") names the user's file instead.
std::vector<std::pair<std::string, std::string>>& SentFiles() {
  static auto* files = new std::vector<std::pair<std::string, std::string>>();
  return *files;
}

int ExitCodeFor(grpc::StatusCode code) {
  switch (code) {
    case grpc::StatusCode::OK:
      return kOk;
    case grpc::StatusCode::UNAUTHENTICATED:
    case grpc::StatusCode::PERMISSION_DENIED:
      return kAuth;
    case grpc::StatusCode::UNAVAILABLE:
    case grpc::StatusCode::DEADLINE_EXCEEDED:
      return kUnavailable;
    case grpc::StatusCode::INVALID_ARGUMENT:
    case grpc::StatusCode::FAILED_PRECONDITION:
    case grpc::StatusCode::OUT_OF_RANGE:
    case grpc::StatusCode::ALREADY_EXISTS:
      return kRefused;
    case grpc::StatusCode::NOT_FOUND:
      return kNotFound;
    case grpc::StatusCode::RESOURCE_EXHAUSTED:
      return kBusy;
    default:
      return kFail;
  }
}

// Whether TLS was asked for (a CA, or a client certificate).
bool UsesTls(const Globals& g) { return !g.tls_ca.empty() || !g.tls_cert.empty(); }
bool tls_in_use = false;

int ExitFor(const grpc::Status& s) {
  const std::string detail = DetailText(s);
  std::string message = redact(s.error_message());
  for (const auto& [sent_as, user_file] : SentFiles())
    if (!user_file.empty())
      message = absl::StrReplaceAll(message, {{sent_as + ":", user_file + ":"}});
  // A failed handshake reads as "failed to connect": say which check to look at.
  if (tls_in_use && s.error_code() == grpc::StatusCode::UNAVAILABLE)
    absl::StrAppend(&message,
                    " (TLS: the daemon's certificate must be signed by --tls-ca and name the "
                    "host you connect to; under mutual TLS give --tls-cert and --tls-key)");
  const std::string code = absl::StatusCodeToString(static_cast<absl::StatusCode>(s.error_code()));
  if (json_errors) {
    google::protobuf::Struct out;
    auto& f = *out.mutable_fields();
    f["code"].set_string_value(code);
    f["message"].set_string_value(message);
    if (const std::string field = DetailOf(s).field(); !field.empty())
      f["field"].set_string_value(field);
    f["exit_code"].set_number_value(ExitCodeFor(s.error_code()));
    std::cerr << Json(out, false) << "\n";
  } else {
    std::cerr << "cakectl: " << message << " (" << code << (detail.empty() ? "" : "; " + detail)
              << ")\n";
  }
  return ExitCodeFor(s.error_code());
}

class Client {
 public:
  explicit Client(const Globals& g) {
    grpc::ChannelArguments args;
    args.SetMaxReceiveMessageSize(64 << 20);
    stub_ = svc::CakeService::NewStub(grpc::CreateCustomChannel(g.server, Credentials(g), args));
    bool ok = false;
    token_ = std::string(absl::StripAsciiWhitespace(ReadFile(g.token_file, &ok)));
    if (!ok || token_.empty()) {
      token_problem_ = "cannot read a token from it";
      return;
    }
    // gRPC aborts on a metadata value with a control byte: the token is checked first, and the
    // complaint names the position, never the token.
    for (size_t i = 0; i < token_.size(); ++i) {
      const unsigned char c = static_cast<unsigned char>(token_[i]);
      if (c < 0x21 || c > 0x7e) {
        token_problem_ = absl::StrCat("byte ", i,
                                      " of the token is not printable ASCII; a "
                                      "token is the 64 hex digits caked wrote");
        token_.clear();
        return;
      }
    }
  }
  // Empty when the token is usable; otherwise what is wrong with the token file.
  const std::string& token_problem() const { return token_problem_; }
  // Removes the token from a message that might echo it (a server's or gRPC's error text).
  std::string Redact(std::string text) const {
    if (token_.empty()) return text;
    for (size_t at = text.find(token_); at != std::string::npos; at = text.find(token_, at))
      text.replace(at, token_.size(), "<token>");
    return text;
  }
  std::unique_ptr<grpc::ClientContext> Ctx(int seconds = 30) const {
    auto c = std::make_unique<grpc::ClientContext>();
    c->AddMetadata("authorization", "Bearer " + token_);
    c->set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(seconds));
    return c;
  }
  svc::CakeService::Stub* operator->() { return stub_.get(); }

 private:
  // TLS when a CA or a client certificate is given (unreadable files leave them empty, and the
  // handshake then names the failure); plaintext otherwise.
  std::shared_ptr<grpc::ChannelCredentials> Credentials(const Globals& g) {
    if (!UsesTls(g)) return grpc::InsecureChannelCredentials();
    grpc::SslCredentialsOptions tls;
    bool ok = false;
    if (!g.tls_ca.empty()) tls.pem_root_certs = ReadFile(g.tls_ca, &ok);
    if (!g.tls_cert.empty()) tls.pem_cert_chain = ReadFile(g.tls_cert, &ok);
    if (!g.tls_key.empty()) tls.pem_private_key = ReadFile(g.tls_key, &ok);
    return grpc::SslCredentials(tls);
  }

  std::unique_ptr<svc::CakeService::Stub> stub_;
  std::string token_;
  std::string token_problem_;
};

bool Table(const Globals& g) {
  if (g.output == "json") return false;
  if (g.output == "table") return true;
  return isatty(1);
}

std::filesystem::path StateDir() {
  if (const char* s = getenv("CAKE_STATE_DIR"); s && *s) return s;
  return "/var/lib/caked";
}
std::string DefaultServer() {
  if (const char* a = getenv("CAKE_ADDR"); a && *a) return a;
  const std::filesystem::path own = StateDir() / "caked.sock";
  std::error_code ec;
  // The shipped unit listens in its runtime directory; `caked --state-dir` alone in the state
  // directory. A $CAKE_STATE_DIR names a daemon of its own: its socket comes first.
  std::vector<std::filesystem::path> socks = {"/run/caked/caked.sock", own};
  if (getenv("CAKE_STATE_DIR") != nullptr) std::swap(socks[0], socks[1]);
  for (const auto& s : socks)
    if (std::filesystem::exists(s, ec)) return "unix:" + s.string();
  return "unix:" + socks[0].string();
}
std::string DefaultToken() {
  if (const char* t = getenv("CAKE_TOKEN_FILE"); t && *t) return t;
  // The most capable token this user may read.
  for (const char* role : {"operator", "ci", "agent"}) {
    const std::filesystem::path p = StateDir() / "tokens" / role;
    if (::access(p.c_str(), R_OK) == 0) return p.string();
  }
  return (StateDir() / "tokens" / "operator").string();
}

// Option names of `app` itself ("--server -o ...").
std::string OptionWords(const CLI::App& app) {
  std::string words;
  for (const CLI::Option* o : app.get_options()) {
    for (const std::string& l : o->get_lnames()) absl::StrAppend(&words, " --", l);
    for (const std::string& s : o->get_snames()) absl::StrAppend(&words, " -", s);
  }
  return words;
}

// A bash completion function built from the verbs and options `app` declares.
std::string BashCompletion(const CLI::App& app) {
  std::string verbs, cases;
  for (const CLI::App* sub : app.get_subcommands({})) {
    absl::StrAppend(&verbs, " ", sub->get_name());
    std::string words = OptionWords(*sub);
    for (const CLI::App* nested : sub->get_subcommands({}))
      absl::StrAppend(&words, " ", nested->get_name());
    absl::StrAppend(&cases, "    ", sub->get_name(), ") words=\"", words, "\" ;;\n");
  }
  return absl::StrCat("# bash completion for cakectl: source <(cakectl completion bash)\n",
                      "_cakectl() {\n", "  local cur=${COMP_WORDS[COMP_CWORD]} verb=\"\" words w\n",
                      "  for w in \"${COMP_WORDS[@]:1:COMP_CWORD-1}\"; do\n",
                      "    case \"$w\" in -*) ;; *) verb=$w; break ;; esac\n", "  done\n",
                      "  case \"$verb\" in\n", cases, "    *) words=\"", verbs, OptionWords(app),
                      "\" ;;\n", "  esac\n", "  COMPREPLY=($(compgen -W \"$words\" -- \"$cur\"))\n",
                      "}\n", "complete -o default -F _cakectl cakectl\n");
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"cakectl: command line of the Consumer CAKE daemon (caked)"};
  app.set_version_flag("--version", "cakectl " CAKE_VERSION);
  app.footer(
      "Exit codes: 0 ok, 1 failure, 2 usage, 3 regression found, 4 auth (token missing, unknown "
      "or the role may not), 5 daemon unavailable.\n"
      "Examples:\n"
      "  cakectl status\n"
      "  cakectl contract create contracts/gemm_bf16.textproto --baseline "
      "examples/gemm_bf16.textproto\n"
      "  cakectl propose my.textproto --contract ct-... --hypothesis h.textproto --key try-1\n"
      "  cakectl inspect --contract ct-... \n"
      "  cakectl inspect c3-... --section diagnostics\n"
      "  cakectl watch --until-idle --timeout 600\n"
      "  cakectl measure c3-... --key m-1\n"
      "  cakectl retry c3-...\n"
      "Exit codes: 0 ok, 1 failed (a job, a gate, or the daemon's internal error), 2 usage, "
      "3 regression, 4 not authenticated or not allowed, 5 daemon unavailable, 6 request "
      "refused (invalid or not possible now), 7 not found, 8 busy (retry later). Under -o json "
      "an error is a JSON object on stderr: code, message, field, exit_code.");
  app.require_subcommand(1);
  app.fallthrough();  // global options may follow the subcommand
  // Flags > $CAKE_ADDR, $CAKE_TOKEN_FILE, $CAKE_OUTPUT > the config file (server, token_file,
  // output; default ~/.config/cake/cakectl.conf when it exists) > defaults from the state dir.
  cake::base::UseLayeredOptions(app);
  const char* home = getenv("HOME");
  const char* xdg = getenv("XDG_CONFIG_HOME");
  const std::string user_config =
      xdg && *xdg ? std::string(xdg) + "/cake/cakectl.conf"
                  : (home && *home ? std::string(home) + "/.config/cake/cakectl.conf" : "");
  app.set_config("--config", user_config,
                 "Config file: server, token_file, output (key = value); $CAKECTL_CONFIG");
  Globals g;
  app.add_option("--server", g.server, "unix:PATH or host:port ($CAKE_ADDR)");
  app.add_option("--tls-ca", g.tls_ca,
                 "PEM CA that signed the daemon's certificate: connect with TLS ($CAKE_TLS_CA)")
      ->check(CLI::ExistingFile);
  app.add_option("--tls-cert", g.tls_cert,
                 "PEM client certificate, for a daemon with mutual TLS ($CAKE_TLS_CERT)")
      ->check(CLI::ExistingFile);
  app.add_option("--tls-key", g.tls_key, "PEM private key of --tls-cert ($CAKE_TLS_KEY)")
      ->check(CLI::ExistingFile);
  app.add_option("--token-file", g.token_file, "File holding the role token ($CAKE_TOKEN_FILE)");
  app.add_option("-o,--output", g.output,
                 "table | json (default: table on a terminal; $CAKE_OUTPUT)")
      ->check(CLI::IsMember({"table", "json"}));

  auto* status = app.add_subcommand("status", "Devices, queue, incumbents, recent failures");
  auto* contract = app.add_subcommand("contract", "Create or show contracts");
  contract->require_subcommand(1);
  std::string contract_file, baseline_file, contract_id, schedule_file, hypothesis_file, key,
      candidate_id;
  auto* ccreate =
      contract->add_subcommand("create", "Create a contract from a text proto (operator)");
  ccreate->add_option("FILE", contract_file, "cake.contract.Contract in text format")->required();
  ccreate->add_option("--baseline", baseline_file,
                      "Baseline schedule file (fills baseline_schedule)");
  auto* cshow = contract->add_subcommand("show", "Show a contract");
  cshow->add_option("ID", contract_id)->required();
  auto* propose = app.add_subcommand("propose", "Propose a schedule for a contract");
  propose->add_option("FILE", schedule_file, "Schedule (cake.ir.Module text)")->required();
  bool propose_portfolio = false;
  propose->add_flag("--portfolio", propose_portfolio,
                    "FILE is a cake.portfolio.Portfolio: its member files (relative to FILE) are "
                    "read and sent inline");
  propose->add_option("--contract", contract_id, "Contract id")->required();
  propose->add_option("--hypothesis", hypothesis_file, "cake.evidence.Hypothesis in text format");
  propose->add_option("--key", key, "Idempotency key");
  std::string branch;
  propose->add_option("--branch", branch, "Line of hypotheses it continues (default main)");
  auto* candidates = app.add_subcommand("candidates", "List candidates");
  candidates->add_option("--contract", contract_id, "Only this contract");
  candidates->add_option("--branch", branch, "Only this branch");
  auto* inspect = app.add_subcommand(
      "inspect",
      "Compact evidence of a candidate or a contract: summary, bottlenecks, branches, recent "
      "failures; --section for details");
  std::vector<std::string> sections;
  int max_bytes = 0;
  inspect->add_option("ID", candidate_id, "Candidate id");
  inspect->add_option("--contract", contract_id, "Contract id (its incumbent or baseline)");
  inspect
      ->add_option("--section", sections,
                   "diagnostics | receipt | row_checks | measurements | raw_samples | "
                   "schedule_text | events (repeatable)")
      ->check(CLI::IsMember({"diagnostics", "receipt", "row_checks", "measurements", "raw_samples",
                             "schedule_text", "events"}));
  inspect->add_option("--max-bytes", max_bytes, "Bound on the reply (default 65536)");
  inspect->footer("Example: cakectl inspect c3-1a2b3c4d --section diagnostics --section receipt");
  auto* show = app.add_subcommand("show", "Show a candidate: receipt, diagnostics, evidence");
  show->add_option("ID", candidate_id)->required();
  auto* measure =
      app.add_subcommand("measure", "Ask for a paired measurement against the incumbent");
  measure->add_option("ID", candidate_id)->required();
  measure->add_option("--key", key, "Idempotency key: a retry with it queues no second run");
  auto* retry = app.add_subcommand(
      "retry",
      "Re-queue a candidate's jobs the machine failed too often (blocked: a full disk, a missing "
      "tool or device); see `cakectl status`");
  retry->add_option("ID", candidate_id)->required();
  auto* watch = app.add_subcommand("watch", "Stream events as NDJSON");
  int64_t after = 0;
  bool until_idle = false;
  int watch_timeout = 0;
  watch->add_option("--after", after, "Start after this event id");
  watch->add_flag("--until-idle", until_idle, "Exit once no job is queued or running");
  watch->add_option("--timeout", watch_timeout, "Give up after this many seconds (0 = never)");
  auto* regress = app.add_subcommand(
      "regress",
      "Re-validate and re-time the incumbent (against the baseline and its own recorded run); "
      "exit 3 on a regression, 1 if a job failed, was inconclusive or timed out");
  regress->add_option("--contract", contract_id, "Contract id")->required();
  int regress_timeout = 1800;
  regress->add_option("--timeout", regress_timeout,
                      "Seconds to wait for the job's end (exit 1 after). Default: 1800");
  auto* report = app.add_subcommand(
      "report", "Write the contract's row tables, candidate history and roofline as HTML");
  std::string report_out;
  report->add_option("CONTRACT", contract_id, "Contract id")->required();
  report->add_option("--out", report_out, "Output file (default: CONTRACT.html; - for stdout)");
  auto* agent = app.add_subcommand(
      "demo-agent",
      "Built-in proposer: proposes points of the workload's schedule space via Propose");
  int count = 4;
  agent->add_option("--contract", contract_id, "Contract id")->required();
  agent->add_option("--count", count, "How many candidates to propose (default 4)");

  auto* search_cmd = app.add_subcommand(
      "search",
      "Run the daemon's search on a contract: it proposes points of the workload's space ranked "
      "by the cost model fitted to this device's measurements, until its budget ends");
  cake::clients::SearchOptions search_options;
  search_cmd->add_option("--contract", search_options.contract_id, "Contract id");
  search_cmd->add_option("--budget", search_options.budget,
                         "Wall time: 90s, 20m, 1h30m (default 20m; at most 24h)");
  search_cmd->add_option("--candidates", search_options.max_candidates,
                         "Proposals at most (default 200, at most 2000)");
  search_cmd->add_option("--batch", search_options.batch,
                         "Proposals in flight at a time (default 8, at most 64)");
  search_cmd->add_option("--follow", search_options.follow,
                         "Follow a running search by id instead of starting one");
  search_cmd->add_flag("--detach", search_options.detach, "Print the search id and return");
  search_cmd->footer("Example: cakectl search --contract k1-0a1b2c3d --budget 20m");

  auto* space_cmd = app.add_subcommand(
      "space", "Write the built-in proposer's schedules of an operation to a folder (offline)");
  std::string space_operation, space_out;
  space_cmd->add_option("OPERATION", space_operation, "Contract operation, e.g. gemm_bf16_tn")
      ->required();
  space_cmd->add_option("--out", space_out, "Folder for NN.textproto files and labels.txt")
      ->required();
  bool space_search = false;
  space_cmd->add_flag("--search", space_search,
                      "Every point the daemon's search enumerates, not the proposer's list");

  auto* export_cmd = app.add_subcommand(
      "export",
      "Write the contract's incumbent as a folder a serving stack builds against: sources, a "
      "cubin per target, manifest.json and the prepared launcher (ci, operator)");
  cake::clients::ExportOptions export_options;
  std::string export_targets;
  export_cmd->add_option("CONTRACT", export_options.contract_id, "Contract id")->required();
  export_cmd
      ->add_option("--out", export_options.out, "Folder to write (replaces an earlier export)")
      ->required();
  export_cmd->add_option("--targets", export_targets,
                         "Comma-separated targets, e.g. sm_120f,sm_90 (default: every target "
                         "with an execution witness)");
  export_cmd->add_flag("--allow-unqualified", export_options.allow_unqualified,
                       "Also export targets with no execution witness (marked in the manifest)");
  export_cmd->footer("Example: cakectl export gemm-1a2b3c --out gemm_export --targets sm_90");

  auto* completion = app.add_subcommand("completion", "Print a shell completion script");
  std::string shell = "bash";
  completion->add_option("SHELL", shell, "bash (the only one)")->check(CLI::IsMember({"bash"}));
  completion->footer("Example: source <(cakectl completion bash)");

  try {
    std::vector<std::string> args =
        cake::base::ArgsWithEnvironment(argc, argv,
                                        {{"--server", "CAKE_ADDR"},
                                         {"--token-file", "CAKE_TOKEN_FILE"},
                                         {"--tls-ca", "CAKE_TLS_CA"},
                                         {"--tls-cert", "CAKE_TLS_CERT"},
                                         {"--tls-key", "CAKE_TLS_KEY"},
                                         {"--output", "CAKE_OUTPUT"},
                                         {"--config", "CAKECTL_CONFIG"}});
    app.parse(args);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? kOk : kUsage;
  }
  if (completion->parsed()) {
    std::cout << BashCompletion(app);
    return kOk;
  }
  if (g.server.empty()) g.server = DefaultServer();
  json_errors = g.output == "json";
  tls_in_use = UsesTls(g);
  if (g.tls_cert.empty() != g.tls_key.empty()) {
    std::cerr << "cakectl: --tls-cert and --tls-key go together (a client certificate and its "
                 "key)\n";
    return kUsage;
  }
  if (g.token_file.empty()) g.token_file = DefaultToken();
  if (space_cmd->parsed())
    return cake::clients::WriteSpace(space_operation, space_out, space_search);

  Client client(g);
  if (!client.token_problem().empty()) {
    std::cerr << "cakectl: token file " << g.token_file << ": " << client.token_problem()
              << " (set --token-file or $CAKE_TOKEN_FILE; members of the daemon's group can read "
              << (StateDir() / "tokens" / "ci").string() << ")\n";
    return kAuth;
  }
  redact = [&client](std::string text) { return client.Redact(std::move(text)); };
  const bool table = Table(g);

  const cake::clients::ContextFactory ctx_for = [&client](int seconds) {
    return client.Ctx(seconds);
  };
  if (report->parsed())
    return cake::clients::WriteReport(client.operator->(), ctx_for, ExitFor, contract_id,
                                      report_out);
  if (status->parsed()) {
    svc::StatusReply r;
    auto ctx = client.Ctx();
    grpc::Status s = client->Status(ctx.get(), {}, &r);
    if (!s.ok()) return ExitFor(s);
    if (table)
      PrintStatus(r);
    else
      std::cout << Json(r);
    return kOk;
  }
  if (ccreate->parsed()) {
    bool ok = false;
    const std::string text = ReadFile(contract_file, &ok);
    if (!ok) {
      std::cerr << "cakectl: cannot read " << contract_file << "\n";
      return kUsage;
    }
    svc::CreateContractRequest req;
    if (!google::protobuf::TextFormat::ParseFromString(text, req.mutable_contract())) {
      std::cerr << "cakectl: " << contract_file << ": not a cake.contract.Contract text proto\n";
      return kUsage;
    }
    if (!baseline_file.empty()) {
      const std::string base = ReadFile(baseline_file, &ok);
      if (!ok) {
        std::cerr << "cakectl: cannot read " << baseline_file << "\n";
        return kUsage;
      }
      SentFiles().emplace_back("baseline_schedule", baseline_file);
      req.mutable_contract()->set_baseline_schedule(base);
    }
    svc::CreateContractReply r;
    auto ctx = client.Ctx();
    grpc::Status s = client->CreateContract(ctx.get(), req, &r);
    if (!s.ok()) return ExitFor(s);
    if (table)
      std::cout << r.contract_id() << (r.existed() ? " (already existed)" : " (created)")
                << "  baseline candidate " << r.baseline_candidate() << "\n";
    else
      std::cout << Json(r);
    return kOk;
  }
  if (cshow->parsed()) {
    svc::GetContractRequest req;
    req.set_contract_id(contract_id);
    svc::GetContractReply r;
    auto ctx = client.Ctx();
    grpc::Status s = client->GetContract(ctx.get(), req, &r);
    if (!s.ok()) return ExitFor(s);
    if (table) {
      std::string text;
      google::protobuf::TextFormat::PrintToString(r.contract(), &text);
      std::cout << "# contract " << r.contract_id() << "  incumbent "
                << (r.incumbent().empty() ? "(none)" : r.incumbent()) << "\n"
                << text;
    } else {
      std::cout << Json(r);
    }
    return kOk;
  }
  if (propose->parsed()) {
    bool ok = false;
    svc::ProposeRequest req;
    req.set_contract_id(contract_id);
    if (propose_portfolio) {
      auto p = cake::compiler::ParsePortfolioFile(schedule_file);
      if (p.ok())
        p = cake::compiler::InlineMemberFiles(*p,
                                              std::filesystem::path(schedule_file).parent_path());
      if (!p.ok()) {
        std::cerr << "cakectl: " << p.status().message() << "\n";
        return kUsage;
      }
      *req.mutable_portfolio() = *std::move(p);
    } else {
      req.set_schedule_text(ReadFile(schedule_file, &ok));
      SentFiles().emplace_back("schedule.textproto", schedule_file);
      if (!ok) {
        std::cerr << "cakectl: cannot read " << schedule_file << "\n";
        return kUsage;
      }
    }
    if (!hypothesis_file.empty() && !google::protobuf::TextFormat::ParseFromString(
                                        ReadFile(hypothesis_file, &ok), req.mutable_hypothesis())) {
      std::cerr << "cakectl: " << hypothesis_file << ": not a cake.evidence.Hypothesis\n";
      return kUsage;
    }
    req.set_idempotency_key(key);
    req.set_branch(branch);
    svc::ProposeReply r;
    auto ctx = client.Ctx();
    grpc::Status s = client->Propose(ctx.get(), req, &r);
    if (!s.ok()) return ExitFor(s);
    if (table)
      std::cout << r.candidate_id() << " on branch " << r.branch()
                << (r.duplicate() ? " (duplicate)" : "")
                << (r.repeat_of().empty() ? "" : " (repeat of a failed hypothesis)") << "\n"
                << (r.note().empty() ? "" : r.note() + "\n");
    else
      std::cout << Json(r);
    return kOk;
  }
  if (candidates->parsed()) {
    svc::ListCandidatesReply r;
    grpc::Status s =
        cake::clients::ListAllCandidates(client.operator->(), ctx_for, contract_id, branch, &r);
    if (!s.ok()) return ExitFor(s);
    if (table)
      PrintCandidates(r);
    else
      std::cout << Json(r);
    return kOk;
  }
  if (inspect->parsed()) {
    if (candidate_id.empty() == contract_id.empty()) {
      std::cerr << "cakectl inspect: name a candidate ID or --contract ID (one of them)\n";
      return kUsage;
    }
    svc::InspectRequest req;
    if (!candidate_id.empty())
      req.set_candidate_id(candidate_id);
    else
      req.set_contract_id(contract_id);
    for (const std::string& name : sections) {
      svc::EvidenceSection sec;
      if (svc::EvidenceSection_Parse(absl::AsciiStrToUpper(name), &sec)) req.add_sections(sec);
    }
    req.set_max_bytes(max_bytes);
    svc::InspectReply r;
    auto ctx = client.Ctx();
    grpc::Status s = client->Inspect(ctx.get(), req, &r);
    if (!s.ok()) return ExitFor(s);
    if (table)
      PrintInspect(r);
    else
      std::cout << Json(r);
    return kOk;
  }
  if (show->parsed()) {
    svc::GetCandidateRequest req;
    req.set_candidate_id(candidate_id);
    ev::Candidate r;
    auto ctx = client.Ctx();
    grpc::Status s = client->GetCandidate(ctx.get(), req, &r);
    if (!s.ok()) return ExitFor(s);
    if (table)
      PrintCandidate(r);
    else
      std::cout << Json(r);
    return kOk;
  }
  if (measure->parsed()) {
    svc::MeasureRequest req;
    req.set_candidate_id(candidate_id);
    req.set_idempotency_key(key);
    svc::MeasureReply r;
    auto ctx = client.Ctx();
    grpc::Status s = client->Measure(ctx.get(), req, &r);
    if (!s.ok()) return ExitFor(s);
    std::cout << (table ? absl::StrCat("measure job ", r.job_id(), " queued\n") : Json(r));
    return kOk;
  }
  if (retry->parsed()) {
    svc::RetryRequest req;
    req.set_candidate_id(candidate_id);
    svc::RetryReply r;
    auto ctx = client.Ctx();
    grpc::Status s = client->Retry(ctx.get(), req, &r);
    if (!s.ok()) return ExitFor(s);
    std::cout << (table ? absl::StrCat(r.requeued_jobs(), " blocked job(s) of ", candidate_id,
                                       " re-queued\n")
                        : Json(r));
    return kOk;
  }
  if (watch->parsed()) {
    // One server stream (Watch): events arrive as they are recorded.
    svc::WatchRequest req;
    req.set_after_id(after);
    req.set_until_idle(until_idle);
    auto ctx = client.Ctx();
    ctx->set_deadline(watch_timeout > 0
                          ? std::chrono::system_clock::now() + std::chrono::seconds(watch_timeout)
                          : std::chrono::system_clock::time_point::max());
    auto reader = client->Watch(ctx.get(), req);
    svc::Event e;
    while (reader->Read(&e)) std::cout << Json(e, false) << "\n" << std::flush;
    grpc::Status s = reader->Finish();
    if (s.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED) {
      std::cerr << "cakectl: watch timed out after " << watch_timeout << " s\n";
      return kFail;
    }
    return s.ok() ? kOk : ExitFor(s);
  }
  if (regress->parsed()) {
    svc::RegressRequest req;
    req.set_contract_id(contract_id);
    svc::RegressReply r;
    auto ctx = client.Ctx();
    grpc::Status s = client->Regress(ctx.get(), req, &r);
    if (!s.ok()) return ExitFor(s);
    std::cerr << "regression run of " << r.incumbent() << ": validation job " << r.job_id()
              << ", re-timing job " << r.timing_job_id() << " (against the baseline "
              << r.baseline() << " and its own recorded run)\n";
    // Each job's end, from the event stream: ok, regression, inconclusive (timing only),
    // job_failed (the job itself failed), or no end within --timeout.
    std::map<int64_t, std::pair<std::string, std::string>> ends = {
        {r.job_id(), {"timeout", ""}}, {r.timing_job_id(), {"timeout", ""}}};
    svc::WatchRequest wr;
    auto wctx = client.Ctx();
    wctx->set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(regress_timeout));
    auto reader = client->Watch(wctx.get(), wr);
    int open = 2;
    svc::Event e;
    while (open > 0 && reader->Read(&e)) {
      auto it = ends.find(e.job_id());
      if (it == ends.end() || it->second.first != "timeout") continue;
      const std::string& k = e.kind();
      const std::string end = k == "regress_ok" || k == "regress_timing_ok"           ? "ok"
                              : k == "regress_failed" || k == "regress_timing_failed" ? "regression"
                              : k == "regress_timing_inconclusive" ? "inconclusive"
                              : k == "job_failed"                  ? "job_failed"
                                                                   : "";
      if (end.empty()) continue;
      it->second = {end, e.message()};
      --open;
    }
    wctx->TryCancel();
    for (auto& [job, end] : ends)
      if (end.first == "timeout")
        end.second = absl::StrCat("job ", job, " did not end within ", regress_timeout, " s");
    const auto& validation = ends[r.job_id()];
    const auto& timing = ends[r.timing_job_id()];
    // A regression anywhere is a finding (3); otherwise anything short of two oks is a failed
    // gate (1): unknown is not a pass.
    const bool regression = validation.first == "regression" || timing.first == "regression";
    const bool ok = validation.first == "ok" && timing.first == "ok";
    if (table) {
      std::cout << (regression ? "REGRESSION"
                    : ok       ? "no regression"
                               : "regression run incomplete")
                << "\n  validation: " << validation.first << ": " << validation.second
                << "\n  timing: " << timing.first << ": " << timing.second << "\n";
    } else {
      google::protobuf::Struct out;
      auto& f = *out.mutable_fields();
      f["incumbent"].set_string_value(r.incumbent());
      f["baseline"].set_string_value(r.baseline());
      f["job_id"].set_number_value(static_cast<double>(r.job_id()));
      f["timing_job_id"].set_number_value(static_cast<double>(r.timing_job_id()));
      // ok | regression | incomplete; each part: ok | regression | inconclusive | job_failed |
      // timeout
      f["result"].set_string_value(regression ? "regression" : ok ? "ok" : "incomplete");
      f["validation"].set_string_value(validation.first);
      f["validation_message"].set_string_value(validation.second);
      f["timing"].set_string_value(timing.first);
      f["timing_message"].set_string_value(timing.second);
      std::cout << Json(out, false) << "\n";
    }
    return regression ? kRegression : ok ? kOk : kFail;
  }

  if (search_cmd->parsed()) {
    if (search_options.contract_id.empty() == search_options.follow.empty()) {
      std::cerr << "cakectl: search needs --contract ID (start one) or --follow SEARCH_ID\n";
      return kUsage;
    }
    search_options.json = !table;
    return cake::clients::RunSearchCommand(
        client.operator->(), [&client] { return client.Ctx(); }, ExitFor, search_options);
  }
  if (export_cmd->parsed()) {
    export_options.json = !table;
    for (absl::string_view t : absl::StrSplit(export_targets, ',', absl::SkipEmpty()))
      export_options.targets.emplace_back(absl::StripAsciiWhitespace(t));
    return cake::clients::RunExportCommand(
        client.operator->(), [&client] { return client.Ctx(); }, ExitFor, export_options);
  }
  if (agent->parsed())
    return cake::clients::RunDemoAgent(client.operator->(), ctx_for, ExitFor, contract_id, count);
  return kUsage;
}
