// libFuzzer entry point: RPC request messages, as an agent (or operator) could send them, through
// the request limits and the real orchestrator on a real SQLite ledger (no gRPC transport, no
// lanes: jobs are queued, never run). The first byte picks the RPC; the rest is its serialized
// request, or for 'P' the schedule text of a Propose ('s': StartSearch, refused without a device
// after its fields are checked). Nothing may crash or hang; every refusal is
// a status.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>

#include "cake/service.pb.h"
#include "fuzz_fixture.h"
#include "ledger/ledger.h"
#include "server/orchestrator.h"
#include "server/request_limits.h"
#include "server/search_runner.h"
#include "tests/fuzz/quiet_init.h"

namespace {

using cake::server::Role;

struct World {
  std::unique_ptr<cake::ledger::Ledger> ledger;
  std::unique_ptr<cake::server::Orchestrator> orch;
  std::unique_ptr<cake::server::SearchRunner> searches;  // no device: every start is refused
  std::string contract;
};

World& TheWorld() {
  static World* w = [] {
    auto* out = new World();
    const std::string dir =
        std::filesystem::temp_directory_path() / ("cake-rpc-fuzz-" + std::to_string(getpid()));
    std::filesystem::remove_all(dir);
    std::filesystem::create_directories(dir);
    // The world lives as long as the process; its folder (~5 MB of ledger and artifacts) goes
    // with it at a normal exit, as at the end of a replay.
    static std::string world_dir = dir;
    std::atexit([] {
      std::error_code ec;
      std::filesystem::remove_all(world_dir, ec);
    });
    out->ledger = *cake::ledger::Ledger::Open(dir + "/ledger.db");
    cake::server::OrchestratorConfig cfg;
    cfg.store_root = dir + "/artifacts";
    cfg.max_queue = 1 << 30;
    cfg.contract_id_key = "fuzz-key";
    out->orch = std::make_unique<cake::server::Orchestrator>(out->ledger.get(), cfg);
    auto created = out->orch->CreateContract(cake::fuzz::BundledContract());
    if (!created.ok()) {
      // The harness's own setup (the bundled contract), not a finding: say so and stop.
      std::fprintf(stderr, "rpc_request_fuzzer: cannot create the bundled contract: %s\n",
                   std::string(created.status().message()).c_str());
      std::exit(2);
    }
    out->contract = created->contract_id();
    out->searches =
        std::make_unique<cake::server::SearchRunner>(out->orch.get(), out->ledger.get());
    return out;
  }();
  return *w;
}

template <typename M>
bool Decode(const uint8_t* data, size_t size, M* m) {
  if (!m->ParseFromArray(data, static_cast<int>(size))) return false;
  return cake::server::CheckRequestLimits(*m).ok();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  World& w = TheWorld();
  const char which = static_cast<char>(data[0]);
  ++data;
  --size;
  const Role role = (which & 1) ? Role::kAgent : Role::kOperator;
  switch (which) {
    case 'P': {  // Propose with this schedule text
      cake::v1::ProposeRequest req;
      req.set_contract_id(w.contract);
      req.set_schedule_text(std::string(reinterpret_cast<const char*>(data), size));
      if (cake::server::CheckRequestLimits(req).ok()) (void)w.orch->Propose(req, role);
      break;
    }
    case 'p':
    case 'q': {
      cake::v1::ProposeRequest req;
      if (!Decode(data, size, &req)) break;
      if (req.contract_id().empty()) req.set_contract_id(w.contract);
      (void)w.orch->Propose(req, role);
      break;
    }
    case 'c': {
      cake::v1::CreateContractRequest req;
      if (Decode(data, size, &req)) (void)w.orch->CreateContract(req.contract());
      break;
    }
    case 'l':
    case 'm': {
      cake::v1::ListCandidatesRequest req;
      if (Decode(data, size, &req)) (void)w.orch->ListCandidates(req, role);
      break;
    }
    case 'M': {
      cake::v1::MeasureRequest req;
      if (Decode(data, size, &req))
        (void)w.orch->Measure(req.candidate_id(), req.idempotency_key());
      break;
    }
    case 'g':
    case 'h': {
      cake::v1::GetCandidateRequest req;
      if (Decode(data, size, &req)) (void)w.orch->GetCandidate(req.candidate_id(), role);
      cake::v1::GetContractRequest creq;
      if (Decode(data, size, &creq)) (void)w.orch->GetContract(creq.contract_id(), role);
      break;
    }
    case 'e': {
      cake::v1::ListEventsRequest req;
      if (Decode(data, size, &req)) (void)w.orch->Events(req.after_id(), req.limit());
      break;
    }
    case 'r': {
      cake::v1::RegressRequest req;
      if (Decode(data, size, &req)) (void)w.orch->Regress(req.contract_id());
      break;
    }
    case 's': {  // StartSearch (its contract defaulted), then GetSearch of whatever it names
      cake::v1::StartSearchRequest req;
      if (!Decode(data, size, &req)) break;
      if (req.contract_id().empty()) req.set_contract_id(w.contract);
      (void)w.searches->Start(req);
      (void)w.searches->Get(req.contract_id());
      break;
    }
    default:
      break;
  }
  return 0;
}
