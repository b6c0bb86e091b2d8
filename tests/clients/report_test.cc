// The HTML report from the measurements the H200 demo round recorded (evidence/demo_round): the
// row table, the history and the roofline are there, self-contained, and text is escaped.
#include <gtest/gtest.h>
#include <sqlite3.h>

#include <chrono>
#include <filesystem>
#include <limits>
#include <map>

#include "clients/report.h"
#include "google/protobuf/text_format.h"
#include "tests/compiler/test_util.h"

namespace cake {
namespace {

clients::ReportInput DemoInput() {
  clients::ReportInput in;
  in.contract_id = "ct-demo";
  EXPECT_TRUE(google::protobuf::TextFormat::ParseFromString(
      testing::ReadText(testing::SourceDir() / "contracts/gemm_bf16.textproto"), &in.contract));
  const auto db = std::filesystem::temp_directory_path() / "cake_report_demo.db";
  std::filesystem::copy_file(testing::SourceDir() / "evidence/demo_round/ledger.db", db,
                             std::filesystem::copy_options::overwrite_existing);
  sqlite3* raw = nullptr;
  sqlite3_open_v2(db.c_str(), &raw, SQLITE_OPEN_READONLY, nullptr);
  sqlite3_stmt* s = nullptr;
  sqlite3_prepare_v2(raw, "SELECT candidate_id, body FROM measurements ORDER BY id", -1, &s,
                     nullptr);
  std::map<std::string, evidence::Candidate> by_id;
  std::vector<std::string> order;
  while (sqlite3_step(s) == SQLITE_ROW) {
    const std::string id = reinterpret_cast<const char*>(sqlite3_column_text(s, 0));
    if (!by_id.count(id)) order.push_back(id);
    evidence::Candidate& c = by_id[id];
    c.set_id(id);
    c.set_state(evidence::MEASURED);
    c.add_measurements()->ParseFromArray(sqlite3_column_blob(s, 1), sqlite3_column_bytes(s, 1));
  }
  sqlite3_finalize(s);
  sqlite3_close(raw);
  std::filesystem::remove(db);
  for (const auto& id : order) in.candidates.push_back(by_id[id]);
  in.incumbent = "c2-b92654b5";
  in.generated = "test";
  return in;
}

TEST(Report, RowTablesHistoryAndRooflineFromRecordedMeasurements) {
  const clients::ReportInput in = DemoInput();
  ASSERT_GE(in.candidates.size(), 5u);
  const std::string html = clients::RenderHtmlReport(in);
  EXPECT_EQ(html.rfind("<!DOCTYPE html>", 0), 0u);
  EXPECT_NE(html.find("Row table: the incumbent's latest promotion run"), std::string::npos);
  for (const char* row : {"square_4k", "tall_8k", "tails"})
    EXPECT_NE(html.find(std::string("<td class=l>") + row), std::string::npos) << row;
  EXPECT_NE(html.find("worst row"), std::string::npos);
  EXPECT_NE(html.find("weighted geometric-mean ratio"), std::string::npos);
  EXPECT_NE(html.find("aria-label=\"roofline\""), std::string::npos);
  EXPECT_NE(html.find("aria-label=\"history\""), std::string::npos);
  EXPECT_NE(html.find("Roofs: NVIDIA H200"), std::string::npos);
  // One point per measured candidate and row.
  size_t circles = 0;
  for (size_t at = html.find("<circle"); at != std::string::npos; at = html.find("<circle", at + 1))
    ++circles;
  EXPECT_EQ(circles, in.candidates.size() * 3);
  EXPECT_NE(html.find("no SM120 execution witness"), std::string::npos);
  // Every plot is closed, with its ratio-1 axis (a format/argument mismatch once dropped both).
  auto count = [&](const std::string& what) {
    size_t n = 0;
    for (size_t at = html.find(what); at != std::string::npos; at = html.find(what, at + 1)) ++n;
    return n;
  };
  EXPECT_EQ(count("<svg"), count("</svg>"));
  EXPECT_NE(html.find(">ratio 1 (challenger / incumbent; left is faster)</text></svg>"),
            std::string::npos);
  EXPECT_EQ(html.find("<script"), std::string::npos) << "self-contained, no scripts";
  EXPECT_EQ(html.find("http://") == std::string::npos ||
                html.find("http://") == html.find("http://www.w3.org/2000/svg"),
            true)
      << "no external resources";
}

TEST(Report, UnknownDeviceDrawsNoRoofAndTextIsEscaped) {
  clients::ReportInput in = DemoInput();
  for (auto& c : in.candidates)
    for (auto& m : *c.mutable_measurements()) m.set_device("Some <GPU> & Co");
  in.candidates[0].set_status_note("<script>alert(1)</script>");
  const std::string html = clients::RenderHtmlReport(in);
  EXPECT_NE(html.find("No measured ceilings for Some &lt;GPU&gt; &amp; Co"), std::string::npos);
  EXPECT_EQ(html.find("<polyline"), std::string::npos);
  EXPECT_EQ(html.find("<script>"), std::string::npos);
  EXPECT_NE(html.find("&lt;script&gt;"), std::string::npos);
}

// A worker's reply is untrusted: latencies of 0, 1e-300 or infinity once made the roofline's
// tick loops run forever. Such points are left out and the page still renders, bounded.
TEST(Report, AbsurdLatenciesAreLeftOutOfThePlotNotLoopedOver) {
  clients::ReportInput in = DemoInput();
  ASSERT_FALSE(in.candidates.empty());
  for (double us : {0.0, 1e-300, std::numeric_limits<double>::infinity(),
                    std::numeric_limits<double>::quiet_NaN(), -5.0}) {
    for (auto& c : in.candidates)
      for (auto& m : *c.mutable_measurements())
        for (auto& r : *m.mutable_rows()) r.set_challenger_median_us(us);
    const auto t0 = std::chrono::steady_clock::now();
    const std::string html = clients::RenderHtmlReport(in);
    EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(5)) << us;
    EXPECT_NE(html.find("</html>"), std::string::npos) << us;
    EXPECT_LT(html.size(), size_t{4} << 20) << us;
  }
}

}  // namespace
}  // namespace cake
