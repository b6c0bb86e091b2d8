// `cakectl search --budget`: the durations it reads, and what it refuses before asking the
// daemon (zero, a sign, a unit it does not know, a number with nothing to scale, an overflow).
#include <gtest/gtest.h>

#include "clients/cakectl_search.h"

namespace cake::clients {
namespace {

TEST(SearchBudget, ReadsSecondsMinutesAndHours) {
  EXPECT_EQ(ParseBudget("90"), 90);
  EXPECT_EQ(ParseBudget("90s"), 90);
  EXPECT_EQ(ParseBudget("20m"), 1200);
  EXPECT_EQ(ParseBudget("1h"), 3600);
  EXPECT_EQ(ParseBudget("1h30m"), 5400);
  EXPECT_EQ(ParseBudget("1h0m5"), 3605);
  EXPECT_EQ(ParseBudget("24h"), 86400);
}

TEST(SearchBudget, RefusesWhatIsNotADuration) {
  for (const char* bad : {"", "0", "0m", "-5m", "5x", "m", "h1", "1.5h", " 5m", "5m ",
                          "99999999999999999999h", "20 m"})
    EXPECT_FALSE(ParseBudget(bad).has_value()) << "'" << bad << "'";
}

}  // namespace
}  // namespace cake::clients
