// Text parsing: malformed input gives exact FILE:LINE:COL messages; valid input records spans.
#include <gtest/gtest.h>

#include "compiler/parse.h"
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

}  // namespace
}  // namespace cake
