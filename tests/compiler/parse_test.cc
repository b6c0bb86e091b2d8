// Text parsing: malformed input gives exact FILE:LINE:COL messages; valid input records spans.
#include <gtest/gtest.h>

#include "absl/strings/str_cat.h"
#include "compiler/parse.h"
#include "compiler/schedule_limits.h"
#include "test_util.h"

namespace cake {
namespace {

TEST(Parse, MalformedTextNamesFileLineAndColumn) {
  auto r = compiler::ParseModuleText("name: \"x\"\ntarget { arch: SM_120F\n  ptx_version 8.8 }\n",
                                     "bad.textproto");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(std::string(r.status().message()),
            "bad.textproto:3:15: Expected \":\", found \"8.8\".");
}

TEST(Parse, UnknownFieldIsAnError) {
  auto r = compiler::ParseModuleText("name: \"x\"\nbogus_field: 3\n", "f.textproto");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(
      std::string(r.status().message()),
      "f.textproto:2:12: Message type \"cake.ir.Module\" has no field named \"bogus_field\".");
}

TEST(Parse, UnknownEnumValueIsAnError) {
  auto r = compiler::ParseModuleText("target { arch: SM_100A }\n", "e.textproto");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("e.textproto:1:24:"), std::string::npos)
      << r.status().message();
  EXPECT_NE(r.status().message().find("SM_100A"), std::string::npos);
}

TEST(Parse, InvalidUtf8StringIsAnError) {
  auto r =
      compiler::ParseModuleText("name: \"ok\"\nkernels { name: \"\\377\\376\" }\n", "u.textproto");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(std::string(r.status().message()),
            "u.textproto:2:11: field \"name\" is not valid UTF-8");
}

TEST(Parse, MissingFileIsNotFound) {
  auto r = compiler::ParseModuleFile("/nonexistent/schedule.textproto");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), absl::StatusCode::kNotFound);
}

TEST(Parse, SpansPointAtOperations) {
  auto parsed = testing::MustParse(testing::SourceDir() / "examples/gemm_bf16.textproto");
  // The example's first kernel opens on line 7 and its first op on line 50.
  const auto kernel = parsed.source_map.Lookup("kernels[0]");
  EXPECT_EQ(kernel.line(), 7);
  EXPECT_EQ(kernel.column(), 1);
  const auto op = parsed.source_map.Lookup("kernels[0].ops[0]");
  EXPECT_EQ(op.line(), 50);
  // A path below a recorded one falls back to the nearest ancestor.
  const auto deep = parsed.source_map.Lookup("kernels[0].ops[0].no_such_field");
  EXPECT_EQ(deep.line(), 50);
}

// A module whose first kernel holds `depth` nested role regions, one per line.
std::string NestedSchedule(int depth) {
  std::string s =
      "name: \"deep\"\nkernels { name: \"k\"\nops { id: \"o0\" role_region { role: \"r\" }\n";
  for (int i = 1; i < depth; ++i) s += " body { role_region { role: \"r\" }\n";
  s += std::string(depth - 1, '}') + "}\n}\n";
  return s;
}

TEST(Parse, DeepNestingIsRefusedWithPositionNotACrash) {
  // 5000 levels overflowed the stack (a segfault in caked's gRPC thread before the limit).
  auto r = compiler::ParseModuleText(NestedSchedule(5000), "deep.textproto");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  // kernels > ops > 62 bodies reach the limit; the body on line 65 is one too many.
  EXPECT_EQ(std::string(r.status().message()),
            "deep.textproto:65:21: Message is too deep, the parser exceeded the configured "
            "recursion limit of 64.");
}

TEST(Parse, NestingJustInsideTheTextLimitParses) {
  // 62 nested operations + kernel + module = 64 messages.
  EXPECT_TRUE(compiler::ParseModuleText(NestedSchedule(62), "ok.textproto").ok());
  EXPECT_FALSE(compiler::ParseModuleText(NestedSchedule(63), "no.textproto").ok());
}

TEST(Parse, OversizedTextIsRefusedNamingTheLimit) {
  std::string text = "name: \"big\"\ndescription: \"";
  text += std::string(compiler::kMaxScheduleTextBytes, 'x');
  text += "\"\n";
  auto r = compiler::ParseModuleText(text, "big.textproto");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(std::string(r.status().message()), absl::StrCat("big.textproto:1:1: schedule text is ",
                                                            text.size(), " bytes (limit 262144)"));
}

TEST(Parse, TooManyOperationsIsRefusedAtTheFirstOneOver) {
  std::string text = "name: \"wide\"\nkernels { name: \"k\"\n";
  for (int i = 0; i <= compiler::kMaxOperations; ++i)
    text += absl::StrCat("ops { id: \"o", i, "\" }\n");
  text += "}\n";
  auto r = compiler::ParseModuleText(text, "wide.textproto");
  ASSERT_FALSE(r.ok());
  // The 4097th operation is on line 4099 (two header lines).
  EXPECT_EQ(std::string(r.status().message()),
            "wide.textproto:4099:1: more than 4096 operations in one schedule (limit 4096)");
}

TEST(Parse, StrictUtf8RefusesOverlongSurrogateAndOutOfRange) {
  // Each passed the old hand-written check, which looked only at lead and continuation bits.
  for (const char* bad : {"\\300\\200", "\\340\\200\\200", "\\355\\240\\200",
                          "\\364\\220\\200\\200", "\\365\\200\\200\\200"}) {
    auto r = compiler::ParseModuleText(absl::StrCat("name: \"", bad, "\"\n"), "u.textproto");
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_EQ(std::string(r.status().message()),
              "u.textproto:1:1: field \"name\" is not valid UTF-8")
        << bad;
  }
  // The largest code point and a 4-byte emoji are fine.
  EXPECT_TRUE(compiler::ParseModuleText("name: \"\\364\\217\\277\\277 \\360\\237\\230\\200\"\n",
                                        "u.textproto")
                  .ok());
}

}  // namespace
}  // namespace cake
