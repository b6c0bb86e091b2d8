// Shared by the fuzz targets: the bundled contract (with its baseline schedule) read once.
#pragma once

#include <cstdlib>
#include <filesystem>
#include <string>

#include "cake/contract.pb.h"
#include "google/protobuf/text_format.h"
#include "tests/compiler/test_util.h"

namespace cake::fuzz {

inline const contract::Contract& BundledContract() {
  static const contract::Contract* c = [] {
    auto* out = new contract::Contract();
    google::protobuf::TextFormat::ParseFromString(
        testing::ReadText(testing::SourceDir() / "contracts/gemm_bf16.textproto"), out);
    out->set_baseline_schedule(
        testing::ReadText(testing::SourceDir() / "examples/gemm_bf16.textproto"));
    return out;
  }();
  return *c;
}

}  // namespace cake::fuzz
