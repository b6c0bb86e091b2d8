// Starting a child: what could not be started says why (the step or execve, the uid, the errno),
// and is told apart from a child that ran and failed.
#include "base/subprocess.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>
#include <fstream>

#include "absl/strings/str_cat.h"

namespace cake {
namespace {

namespace fs = std::filesystem;

TEST(Subprocess, AnExecveFailureCarriesItsErrnoAndUid) {
  const fs::path dir = fs::temp_directory_path() / absl::StrCat("subprocess-exec.", getpid());
  fs::create_directories(dir);
  const fs::path junk = dir / "not-a-program";
  std::ofstream(junk) << "\x01\x02\x03 not an executable format";
  ::chmod(junk.c_str(), 0755);
  auto r = base::RunSubprocess({junk.string()});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(r.status().message(),
            absl::StrCat(junk.string(), ": cannot start it (execve as uid ", geteuid(),
                         "): Exec format error (errno ", ENOEXEC, ")"));
  fs::remove_all(dir);
}

TEST(Subprocess, AFailedSetupStepIsNamedAndIsNotAResult) {
  base::SubprocessOptions o;
  o.child_setup.push_back({"the second step", [] { return 0; }});
  o.child_setup.push_back({"join the job", [] { return EACCES; }});
  auto r = base::RunSubprocess({"/bin/true"}, o);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(r.status().message().find("(join the job as uid"), std::string::npos) << r.status();
  EXPECT_NE(r.status().message().find("Permission denied (errno 13)"), std::string::npos);
  // A child that runs and fails is a result, not an error of starting it.
  auto ran = base::RunSubprocess({"/bin/sh", "-c", "exit 127"});
  ASSERT_TRUE(ran.ok()) << ran.status();
  EXPECT_EQ(ran->exit_code, 127);
}

}  // namespace
}  // namespace cake
