#include "candidate_view.h"

namespace cake::server {
namespace {

constexpr int kSummaryMeasurements = 3;

void HideCases(google::protobuf::RepeatedPtrField<evidence::RowCheck>* cases,
               const std::set<std::string>& hidden) {
  for (int i = cases->size() - 1; i >= 0; --i)
    if (hidden.count((*cases)[i].row())) cases->DeleteSubrange(i, 1);
}

}  // namespace

contract::Contract AgentContractView(contract::Contract c) {
  auto* rows = c.mutable_rows();
  for (int i = rows->size() - 1; i >= 0; --i)
    if ((*rows)[i].held_out()) rows->DeleteSubrange(i, 1);
  auto* cases = c.mutable_validation()->mutable_cases();
  for (int i = cases->size() - 1; i >= 0; --i)
    if ((*cases)[i].held_out()) cases->DeleteSubrange(i, 1);
  if (c.validation().ByteSizeLong() == 0) c.clear_validation();
  return c;
}

std::set<std::string> HiddenCaseNames(const contract::Contract& c) {
  std::set<std::string> hidden;
  for (const auto& r : c.rows())
    if (r.held_out()) hidden.insert(r.name());
  for (const auto& vc : c.validation().cases())
    if (vc.held_out()) hidden.insert(vc.name());
  return hidden;
}

void HideHeldOutChecks(const std::set<std::string>& hidden, evidence::Candidate* c) {
  HideCases(c->mutable_validation()->mutable_rows(), hidden);
  for (auto* records : {c->mutable_validation()->mutable_records(), c->mutable_evidence()})
    for (evidence::EvidenceRecord& r : *records) {
      HideCases(r.mutable_cases(), hidden);
      auto* names = r.mutable_coverage()->mutable_cases();
      for (int i = names->size() - 1; i >= 0; --i)
        if (hidden.count((*names)[i])) names->DeleteSubrange(i, 1);
    }
  // Timing rows of held-out rows are never measured; nothing else names them.
}

evidence::Candidate SummaryView(evidence::Candidate c) {
  c.set_summary(true);
  c.clear_schedule_text();
  c.clear_diagnostics();
  c.clear_manifests();
  c.mutable_analysis()->clear_diagnostics();
  c.mutable_analysis()->clear_passes();
  report::LoweringReceipt* r = c.mutable_receipt();
  r->clear_sass_census();
  r->clear_op_source_map();
  r->clear_verification_coverage();
  r->clear_selected_forms();
  r->clear_shared_regions();
  r->clear_flags();
  c.mutable_validation()->clear_rows();
  c.mutable_validation()->clear_records();
  for (evidence::EvidenceRecord& e : *c.mutable_evidence()) {
    e.clear_cases();
    e.mutable_coverage()->clear_cases();
  }
  // The latest runs only: a candidate measured many times must not grow every list.
  auto* runs = c.mutable_measurements();
  if (runs->size() > kSummaryMeasurements)
    runs->DeleteSubrange(0, runs->size() - kSummaryMeasurements);
  for (evidence::Measurement& m : *runs) ClearRawSamples(&m);
  return c;
}

void ClearRawSamples(evidence::Measurement* m) {
  for (evidence::RowTiming& t : *m->mutable_rows()) {
    t.clear_incumbent_us();
    t.clear_challenger_us();
    t.clear_challenger_first();
    t.clear_incumbent_span_us();
    t.clear_challenger_span_us();
    t.clear_incumbent_sm_mhz();
    t.clear_challenger_sm_mhz();
    t.clear_temperature_c();
    t.clear_power_w();
    t.clear_discarded();
  }
}

}  // namespace cake::server
