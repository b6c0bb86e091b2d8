// `cakectl report`: one self-contained HTML page (inline SVG, no scripts, no external files) for a
// contract: the full row table of the incumbent's latest promotion run and of every candidate's
// latest run (per row and configuration: latencies with dispersion, speedup, interval, verdict,
// CUPTI span ratio, pairs, stop reason, clocks), the worst row, the weighted total and geometric
// mean as descriptive numbers, the candidate history with each one's evidence and eligibility,
// and a roofline of the measured rows against the device's measured ceilings (none drawn for a
// device without a profile). Pure: data in, HTML out.
#pragma once

#include <string>
#include <vector>

#include "cake/contract.pb.h"
#include "cake/evidence.pb.h"

namespace cake::clients {

struct ReportInput {
  std::string contract_id;
  contract::Contract contract;
  std::string incumbent;  // "" when none
  std::vector<evidence::Candidate> candidates;
  std::string generated;  // when, for the page's header
};

std::string RenderHtmlReport(const ReportInput& in);

// &, <, >, " and ' escaped for HTML text and attributes.
std::string HtmlEscape(const std::string& s);

}  // namespace cake::clients
