// Toolchain discovery probes each binary's --version once per identity: fake nvcc, ptxas and
// cuobjdump scripts count their calls; a second discovery starts none, and a binary replaced in
// place is probed again.
#include "compiler/toolchain.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace cake::compiler {
namespace {

namespace fs = std::filesystem;

void WriteScript(const fs::path& path, const std::string& log, const std::string& output) {
  std::ofstream(path) << "#!/bin/sh\necho " << path.filename().string() << " >> " << log
                      << "\necho '" << output << "'\n";
  fs::permissions(path, fs::perms::owner_all);
}

int Calls(const fs::path& log) {
  std::ifstream in(log);
  std::string line;
  int n = 0;
  while (std::getline(in, line)) ++n;
  return n;
}

TEST(Toolchain, ProbesEachBinaryOncePerIdentity) {
  const fs::path dir = fs::path(::testing::TempDir()) / "cake_fake_toolchain";
  fs::remove_all(dir);
  fs::create_directories(dir);
  const fs::path log = dir / "calls.log";
  WriteScript(dir / "nvcc", log.string(), "Cuda compilation tools, release 13.0, V13.0.88");
  WriteScript(dir / "ptxas", log.string(), "ptxas release 13.0");
  WriteScript(dir / "cuobjdump", log.string(), "cuobjdump release 13.0");
  const char* old_nvcc = std::getenv("CAKE_NVCC");
  const char* old_cuobjdump = std::getenv("CAKE_CUOBJDUMP");
  const std::string keep_nvcc = old_nvcc ? old_nvcc : "",
                    keep_cuobjdump = old_cuobjdump ? old_cuobjdump : "";
  setenv("CAKE_NVCC", (dir / "nvcc").c_str(), 1);
  setenv("CAKE_CUOBJDUMP", (dir / "cuobjdump").c_str(), 1);

  auto first = DetectToolchain();
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_EQ(first->nvcc_version, "release 13.0, V13.0.88");
  EXPECT_EQ(first->ptxas_version, "ptxas release 13.0");
  EXPECT_EQ(Calls(log), 3);
  auto second = DetectToolchain();
  ASSERT_TRUE(second.ok());
  EXPECT_EQ(second->nvcc_version, first->nvcc_version);
  EXPECT_EQ(Calls(log), 3);  // no subprocess

  // nvcc replaced in place by another release: probed again, and its version is the new one.
  WriteScript(dir / "nvcc", log.string(), "Cuda compilation tools, release 13.1, V13.1.10 (new)");
  auto third = DetectToolchain();
  ASSERT_TRUE(third.ok());
  EXPECT_EQ(third->nvcc_version, "release 13.1, V13.1.10");
  EXPECT_EQ(Calls(log), 6);

  if (old_nvcc)
    setenv("CAKE_NVCC", keep_nvcc.c_str(), 1);
  else
    unsetenv("CAKE_NVCC");
  if (old_cuobjdump)
    setenv("CAKE_CUOBJDUMP", keep_cuobjdump.c_str(), 1);
  else
    unsetenv("CAKE_CUOBJDUMP");
  fs::remove_all(dir);
}

}  // namespace
}  // namespace cake::compiler
