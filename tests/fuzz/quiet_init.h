// libFuzzer's optional initializer for every fuzz target: the protobuf runtime logs each
// malformed input it parses, which buries the fuzzer's own reports. Include from exactly one
// file of a target (the replay driver calls it too).
#pragma once

#include "google/protobuf/stubs/logging.h"

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  google::protobuf::SetLogHandler(nullptr);
  return 0;
}
