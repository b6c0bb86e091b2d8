// libFuzzer entry point: what a worker (compromised, or just broken) can send back. The bytes are
// a frame as the daemon reads it from the worker's stdout; a reply that unframes is then taken
// the way the daemon takes it: measurements re-judged from their raw samples (NaN, infinities,
// empty and ragged arrays included), eligibility derived from validation records, the candidate
// summarized for lists and rendered into the HTML report. Nothing may crash.
#include <cstddef>
#include <cstdint>
#include <string>

#include "cake/worker.pb.h"
#include "clients/report.h"
#include "fuzz_fixture.h"
#include "gpuqueue/framing.h"
#include "protocol/paired_verdict.h"
#include "server/candidate_view.h"
#include "server/eligibility.h"
#include "tests/fuzz/quiet_init.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string bytes(reinterpret_cast<const char*>(data), size);
  cake::worker::Reply reply;
  // Framed as on the wire, or (for the fuzzer's benefit) a bare message.
  if (!cake::gpuqueue::Unframe(bytes, &reply).ok() && !reply.ParseFromString(bytes)) return 0;
  const cake::contract::Contract& contract = cake::fuzz::BundledContract();
  cake::evidence::Candidate cand;
  cand.set_id("c1-fuzz");
  if (reply.has_measurement()) {
    cake::evidence::Measurement m = reply.measurement();
    cake::protocol::JudgeMeasurement(&m, contract);
    *cand.add_measurements() = m;
  }
  if (reply.has_validation()) {
    *cand.mutable_validation() = reply.validation();
    for (const auto& r : reply.validation().records()) *cand.add_evidence() = r;
    *cand.mutable_eligibility() =
        cake::server::DeriveEligibility(contract, {cand.evidence().begin(), cand.evidence().end()});
  }
  if (reply.has_compile())
    for (const auto& r : reply.compile().results()) {
      *cand.mutable_analysis() = r.analysis();
      if (r.has_receipt()) *cand.mutable_receipt() = r.receipt();
    }
  cake::server::HideHeldOutChecks(cake::server::HiddenCaseNames(contract), &cand);
  (void)cake::server::SummaryView(cand);
  cake::clients::ReportInput in;
  in.contract_id = "ct-fuzz";
  in.contract = contract;
  in.incumbent = "c1-fuzz";
  in.candidates.push_back(cand);
  (void)cake::clients::RenderHtmlReport(in);
  return 0;
}
