// What a regression run decides about an incumbent's speed (the CI gate's timing half): the
// incumbent is timed again, paired against the contract's baseline, and its fresh latencies are
// compared with its own recorded ones. Pure; thread-safe.
//
// A regression is (a) the incumbent no longer faster than the baseline beyond the practical
// floor (SLOWER, TIE, or slower on a required row), when it is not the baseline itself, or
// (b) a primary row's median now slower than the recorded median by more than the floor. An
// ambiguous paired verdict or a run that is invalid decides nothing (inconclusive): unknown is
// not a pass and not a regression.
#pragma once

#include <string>

#include "cake/evidence.pb.h"

namespace cake::server {

struct RegressTiming {
  enum Result { kOk, kRegression, kInconclusive } result = kInconclusive;
  std::string summary;  // each finding, in words
};

// `fresh`: the judged run of `incumbent` (challenger arm) against `baseline` (incumbent arm).
// `recorded`: the latest earlier valid run with `incumbent` as either arm (nullptr: none).
RegressTiming DecideRegressTiming(const evidence::Measurement& fresh,
                                  const evidence::Measurement* recorded,
                                  const std::string& incumbent, const std::string& baseline,
                                  double practical_floor);

}  // namespace cake::server
