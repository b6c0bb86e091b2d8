// The SASS census and the form matcher that receipts count selected instructions with: lines as
// cuobjdump -sass prints them (predicated, with control comments), and forms that differ only in
// a modifier that changes what the instruction computes.
#include <gtest/gtest.h>

#include "compiler/toolchain.h"

namespace cake::compiler {
namespace {

constexpr char kSass[] = R"(
        /*0080*/                   LDGSTS.E.BYPASS.LTC128B.128 [R3], desc[UR6][R4.64] ;
        /*0090*/               @P0 LDGSTS.E.BYPASS.LTC128B.128 [R3+0x800], desc[UR6][R6.64] ;
        /*00a0*/                   HMMA.16816.F32.BF16 R8, R12, R16, R8 ;
        /*00b0*/                   HMMA.16816.F32 R20, R12, R16, R20 ;
        /*00c0*/                   QMMA.SF.16832.F32.E4M3.E4M3.E8 R24, R28, R30, R24, R2, R3, URZ ;
        /*00d0*/                   QMMA.16832.F32.E4M3.E4M3 R32, R28, R30, R32 ;
        /*00e0*/                   QMMA.16832.F32.E4M3.E4M3 R36, R28, R30, R36 ;
        /*00f0*/                   EXIT ;
                                                                 /* 0x000fea0003800000 */
)";

TEST(SassCensus, CountsOpcodesWithModifiersAndIgnoresPredicatesAndControlWords) {
  const auto census = SassCensus(kSass);
  EXPECT_EQ(census.at("LDGSTS.E.BYPASS.LTC128B.128"), 2);
  EXPECT_EQ(census.at("QMMA.16832.F32.E4M3.E4M3"), 2);
  EXPECT_EQ(census.at("EXIT"), 1);
  EXPECT_EQ(census.size(), 6u);
}

TEST(CountSassForm, HintModifiersMayBeAddedInOrder) {
  const auto census = SassCensus(kSass);
  EXPECT_EQ(CountSassForm(census, "LDGSTS.E.BYPASS.128"), 2);
  EXPECT_EQ(CountSassForm(census, "LDGSTS.E.128"), 2);
  EXPECT_EQ(CountSassForm(census, "LDGSTS.E.BYPASS.64"), 0);     // another width
  EXPECT_EQ(CountSassForm(census, "LDGSTS.128.BYPASS"), 0);      // out of order
  EXPECT_EQ(CountSassForm(census, "LDGSTS.E.BYPASS.128.X"), 0);  // a modifier it lacks
}

TEST(CountSassForm, AModifierThatChangesTheComputationMakesAnotherInstruction) {
  const auto census = SassCensus(kSass);
  // The FP16 form does not count the BF16 HMMA, and the reverse.
  EXPECT_EQ(CountSassForm(census, "HMMA.16816.F32"), 1);
  EXPECT_EQ(CountSassForm(census, "HMMA.16816.F32.BF16"), 1);
  // The unscaled FP8 form does not count the block-scaled one, nor the reverse.
  EXPECT_EQ(CountSassForm(census, "QMMA.16832.F32.E4M3.E4M3"), 2);
  EXPECT_EQ(CountSassForm(census, "QMMA.SF.16832.F32.E4M3.E4M3.E8"), 1);
  EXPECT_EQ(CountSassForm(census, "QMMA.16832.F32.E5M2.E5M2"), 0);
  EXPECT_EQ(CountSassForm(census, ""), 0);
}

}  // namespace
}  // namespace cake::compiler
