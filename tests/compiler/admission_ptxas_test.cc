// The admission table against ptxas itself: for every instruction descriptor x target, a probe
// exercising exactly that form is assembled, and ptxas's verdict must equal the table's. Where a
// descriptor's minimum PTX version is later than the target's, the version just before it must
// be refused by ptxas too. Where the table names the SASS opcode a form must produce, the
// assembled probe's disassembly holds it.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "absl/strings/str_cat.h"
#include "base/subprocess.h"
#include "compiler/admission.h"
#include "compiler/toolchain.h"
#include "test_util.h"

namespace cake {
namespace {

namespace fs = std::filesystem;

std::string Probe(const compiler::InstrDescriptor& d, const compiler::TargetInfo& t,
                  const compiler::PtxVersion& v) {
  return absl::StrCat(
      ".version ", v.ToString(), "\n.target ", std::string(t.name), "\n.address_size 64\n",
      // Launch bounds: without them ptxas drops setmaxnreg (register count at entry
      // unknown).
      ".visible .entry probe(.param .u64 arg0) .maxntid 128, 1, 1 .minnctapersm 1\n{\n",
      "  .reg .b32 r<16>;\n  .reg .f32 f<16>;\n  .reg .b64 rd<4>;\n",
      "  .reg .pred q<2>;\n  .shared .align 128 .b8 smem[4096];\n", "  mov.u32 r0, smem;\n  ",
      std::string(d.probe),
      // A sink for the results, so that ptxas keeps the form in the SASS.
      "\n  st.shared.v4.f32 [r0], {f0,f1,f2,f3};\n", "  st.shared.v4.b32 [r0+16], {r1,r2,r3,r4};\n",
      "  st.shared.v4.b32 [r0+32], {r5,r6,r7,r8};\n",
      "  st.shared.v4.b32 [r0+48], {r9,r10,r11,r12};\n  ret;\n}\n");
}

bool PtxasAccepts(const std::string& ptxas, const std::string& ptx, const fs::path& dir,
                  const std::string& arch, std::string* log) {
  const fs::path src = dir / "probe.ptx";
  std::ofstream(src) << ptx;
  auto r = base::RunSubprocess(
      {ptxas, "-arch=" + arch, src.string(), "-o", (dir / "probe.cubin").string()});
  if (!r.ok()) {
    *log = std::string(r.status().message());
    return false;
  }
  *log = r->stderr_bytes;
  return r->ok();
}

TEST(AdmissionVsPtxas, TableVerdictEqualsPtxasForEveryDescriptorAndTarget) {
  auto tc = compiler::DetectToolchain();
  ASSERT_TRUE(tc.ok()) << tc.status();
  ASSERT_TRUE(tc->ptx.has_value()) << "unknown PTX version for " << tc->nvcc_version;
  const std::string ptxas = (fs::path(tc->nvcc).parent_path() / "ptxas").string();
  const fs::path dir = testing::FreshDir("cake_probe");
  int probes = 0, sass_checked = 0;
  for (const compiler::InstrDescriptor& d : compiler::InstructionTable()) {
    for (const compiler::TargetInfo& t : compiler::AllTargets()) {
      SCOPED_TRACE(absl::StrCat(std::string(d.key), " on ", std::string(t.name)));
      std::string log;
      const bool accepted =
          PtxasAccepts(ptxas, Probe(d, t, *tc->ptx), dir, std::string(t.name), &log);
      ++probes;
      EXPECT_EQ(accepted, d.AdmittedOn(t.arch)) << "ptxas says:\n" << log;
      if (!d.AdmittedOn(t.arch)) continue;
      if (accepted && !d.SassFor(t.arch).empty()) {
        auto sass = base::RunSubprocess({tc->cuobjdump, "-sass", (dir / "probe.cubin").string()});
        ASSERT_TRUE(sass.ok() && sass->ok()) << "cuobjdump -sass failed";
        // The table's opcode as a prefix of a whole qualifier list (UTMALDG of UTMALDG.2D).
        const std::string want = absl::StrCat(" ", std::string(d.SassFor(t.arch)));
        bool found = false;
        for (size_t at = sass->stdout_bytes.find(want); at != std::string::npos && !found;
             at = sass->stdout_bytes.find(want, at + 1)) {
          const char next = sass->stdout_bytes[at + want.size()];
          found = next == ' ' || next == '.';
        }
        EXPECT_TRUE(found) << "no " << d.SassFor(t.arch) << " in:\n" << sass->stdout_bytes;
        ++sass_checked;
      }
      // At the table's minimum version (or the target's, if later) ptxas accepts the form.
      const compiler::PtxVersion floor = std::max(d.min_ptx, t.min_ptx);
      EXPECT_TRUE(PtxasAccepts(ptxas, Probe(d, t, floor), dir, std::string(t.name), &log))
          << "refused at PTX " << floor.ToString() << ":\n"
          << log;
      if (d.min_ptx > t.min_ptx) {
        compiler::PtxVersion before = t.min_ptx;
        for (const auto& v : compiler::KnownPtxVersions())
          if (v < d.min_ptx) before = v;
        EXPECT_FALSE(PtxasAccepts(ptxas, Probe(d, t, before), dir, std::string(t.name), &log))
            << d.key << " accepted at PTX " << before.ToString() << ", before its minimum";
      }
    }
  }
  EXPECT_EQ(probes,
            static_cast<int>(compiler::InstructionTable().size() * compiler::AllTargets().size()));
  EXPECT_GT(sass_checked, 40);
  fs::remove_all(dir);
}

TEST(AdmissionTable, DatacenterFormsAreAdmittedNowhere) {
  for (const compiler::InstrDescriptor& d : compiler::InstructionTable())
    if (d.datacenter_only) {
      for (const compiler::TargetInfo& t : compiler::AllTargets())
        EXPECT_FALSE(d.AdmittedOn(t.arch));
    }
}

TEST(AdmissionTable, KeysAreUnique) {
  std::set<std::string> keys;
  for (const compiler::InstrDescriptor& d : compiler::InstructionTable())
    EXPECT_TRUE(keys.insert(std::string(d.key)).second) << d.key;
}

}  // namespace
}  // namespace cake
