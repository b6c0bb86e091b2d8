// Inspect's view without a daemon: the summary is always there, sections come only when asked
// and only while the reply stays under its bound, and bottleneck lines state recorded facts.
#include <gtest/gtest.h>

#include <random>

#include "server/inspect_view.h"

namespace cake::server {
namespace {

// A candidate with every kind of detail, sized by fresh random text.
InspectInputs Inputs(std::mt19937& rng) {
  InspectInputs in;
  in.contract_id = "ct-1";
  in.incumbent = "c1-a";
  in.contract.set_name("gemm");
  in.contract.set_operation("gemm_bf16_tn");
  in.contract.set_compile_target("sm_120f");
  in.contract.add_rows()->set_name("square");
  auto* hidden = in.contract.add_rows();
  hidden->set_name("secret_row");
  hidden->set_held_out(true);
  std::uniform_int_distribution<int> letter('a', 'z');
  auto text = [&](size_t n) {
    std::string s(n, ' ');
    for (char& ch : s) ch = static_cast<char>(letter(rng));
    return s;
  };
  evidence::Candidate& c = in.candidate;
  c.set_id("c3-b");
  c.set_state(evidence::MEASURED);
  c.set_schedule_text(text(20000));
  for (int i = 0; i < 30; ++i) {
    report::Diagnostic* d = c.add_diagnostics();
    d->set_id(report::DIAG_TILE_NOT_DIVISIBLE);
    d->set_op_id("mma_step");
    d->set_message(text(200));
  }
  c.mutable_receipt()->set_outcome(report::LoweringReceipt::PASS);
  c.mutable_receipt()->set_target("sm_120f");
  c.mutable_receipt()->mutable_resources()->set_registers(168);
  c.mutable_receipt()->mutable_resources()->set_spill_store_bytes(24);
  for (int i = 0; i < 200; ++i) c.mutable_receipt()->add_sass_census()->set_opcode(text(12));
  evidence::Measurement* m = c.add_measurements();
  m->set_incumbent("c1-a");
  m->set_device("H200");
  m->set_verdict(evidence::TIE);
  m->set_worst_row("square");
  evidence::RowTiming* t = m->add_rows();
  t->set_row("square");
  t->set_primary(true);
  t->set_median_ratio(1.013);
  for (int i = 0; i < 4000; ++i) t->add_challenger_us(100.0 + i);
  c.mutable_eligibility()->add_missing("sanitizer:racecheck");
  for (int i = 0; i < 3; ++i) {
    v1::Event& e = in.events.emplace_back();
    e.set_id(i + 1);
    e.set_kind("proposed");
  }
  return in;
}

TEST(InspectView, SummaryAlwaysSectionsOnlyWhenAsked) {
  std::mt19937 rng(std::random_device{}());
  const InspectInputs in = Inputs(rng);
  const v1::InspectReply r = InspectView(in, {}, kDefaultInspectBytes);
  EXPECT_EQ(r.candidate().id(), "c3-b");
  EXPECT_TRUE(r.candidate().summary());
  EXPECT_TRUE(r.candidate().schedule_text().empty());
  EXPECT_EQ(r.candidate().diagnostics_size(), 0);
  EXPECT_EQ(r.candidate().receipt().sass_census_size(), 0);
  EXPECT_EQ(r.events_size(), 0);
  EXPECT_EQ(r.granted_size(), 0);
  EXPECT_EQ(r.contract_summary().find("secret_row"), std::string::npos) << r.contract_summary();
  EXPECT_NE(r.contract_summary().find("square"), std::string::npos) << r.contract_summary();
  const std::string all = [&] {
    std::string s;
    for (const std::string& b : r.bottlenecks()) s += b + "\n";
    return s;
  }();
  EXPECT_NE(all.find("168 registers/thread"), std::string::npos) << all;
  EXPECT_NE(all.find("spills 24 B stored"), std::string::npos) << all;
  EXPECT_NE(all.find("worst row square: 1.0130x"), std::string::npos) << all;
  EXPECT_NE(all.find("first of 30 diagnostics: DIAG_TILE_NOT_DIVISIBLE at mma_step"),
            std::string::npos)
      << all;
  EXPECT_NE(all.find("missing evidence: sanitizer:racecheck"), std::string::npos) << all;
}

TEST(InspectView, SectionsAreAddedWhileTheReplyFitsAndTheRestAreNamed) {
  std::mt19937 rng(std::random_device{}());
  const InspectInputs in = Inputs(rng);
  const std::vector<v1::EvidenceSection> asked = {v1::DIAGNOSTICS, v1::SCHEDULE_TEXT, v1::EVENTS,
                                                  v1::RAW_SAMPLES, v1::MEASUREMENTS};
  const v1::InspectReply big = InspectView(in, asked, kMaxInspectBytes);
  EXPECT_EQ(big.omitted_size(), 0);
  EXPECT_EQ(big.granted_size(), 4) << "MEASUREMENTS is inside RAW_SAMPLES";
  EXPECT_EQ(big.candidate().diagnostics_size(), 30);
  EXPECT_EQ(big.candidate().schedule_text(), in.candidate.schedule_text());
  EXPECT_EQ(big.events_size(), 3);
  EXPECT_EQ(big.candidate().measurements(0).rows(0).challenger_us_size(), 4000);
  // 16 KiB holds the diagnostics and the events but neither the 20 KB schedule nor the samples.
  const v1::InspectReply small = InspectView(in, asked, 16 << 10);
  EXPECT_LE(small.ByteSizeLong(), size_t{16 << 10});
  ASSERT_EQ(small.omitted_size(), 2);
  EXPECT_EQ(small.omitted(0), v1::SCHEDULE_TEXT);
  EXPECT_EQ(small.omitted(1), v1::RAW_SAMPLES);
  EXPECT_TRUE(small.candidate().schedule_text().empty());
  EXPECT_EQ(small.events_size(), 3);
  // Without raw samples, the runs come with their statistics only.
  const v1::InspectReply runs = InspectView(in, {v1::MEASUREMENTS}, kDefaultInspectBytes);
  ASSERT_EQ(runs.candidate().measurements_size(), 1);
  EXPECT_EQ(runs.candidate().measurements(0).rows(0).challenger_us_size(), 0);
  EXPECT_DOUBLE_EQ(runs.candidate().measurements(0).rows(0).median_ratio(), 1.013);
}

// Notes and messages are cut at a character, never inside one: a reply with a split UTF-8
// character is refused whole by clients (the Python runtime raises on it).
TEST(InspectView, TextIsCutAtCharacterBoundaries) {
  std::mt19937 rng(std::random_device{}());
  InspectInputs in = Inputs(rng);
  const std::string multibyte = "x" + std::string(400, '\0');
  std::string note = "x";
  for (int i = 0; i < 400; ++i) note += "\xc3\xa9";  // e-acute, 2 bytes: byte 300 is inside one
  in.candidate.set_status_note(note);
  in.candidate.set_state(evidence::REJECTED);
  in.candidate.mutable_diagnostics(0)->set_message(note);
  const v1::InspectReply r = InspectView(in, {v1::DIAGNOSTICS}, kDefaultInspectBytes);
  std::string serialized;
  ASSERT_TRUE(r.SerializeToString(&serialized));
  v1::InspectReply back;
  EXPECT_TRUE(back.ParseFromString(serialized)) << "the reply must be valid UTF-8";
  bool clipped = false;
  for (const std::string& line : r.bottlenecks()) {
    clipped |= line.find("...") != std::string::npos;
    for (size_t i = 0; i < line.size(); ++i) {
      const unsigned char c = static_cast<unsigned char>(line[i]);
      if (c == 0xc3) {
        ASSERT_LT(i + 1, line.size()) << "a character is split at the end of: " << line;
        EXPECT_EQ(static_cast<unsigned char>(line[i + 1]), 0xa9);
      }
      if (c == 0xa9) {
        EXPECT_EQ(static_cast<unsigned char>(line[i - 1]), 0xc3) << line;
      }
    }
  }
  EXPECT_TRUE(clipped);
}

}  // namespace
}  // namespace cake::server
