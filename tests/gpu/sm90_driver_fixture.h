// A GPU test suite that drives kernels itself through the Driver API on device 0 (no worker): the
// driver and context are opened once per suite, every test skips with the reason when there is
// no driver, no device or the device is not sm_90, and the suite's evidence rows are written to
// $CAKE_EVIDENCE_DIR/<file> at the end with the device, its compute capability, the driver
// version and the witness the suite gives. Header-only; test code.
#pragma once

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "gpuqueue/worker/cuda_driver.h"

namespace cake::testing {

// `Base` is ::testing::Test or a ::testing::TestWithParam<T>.
template <typename Base>
class Sm90DriverFixture : public Base {
 protected:
  // From the suite's SetUpTestSuite; `suite` names it in the skip reason.
  static void OpenSm90(const std::string& suite) {
    auto d = gpuqueue::CudaDriver::Load();
    if (!d.ok()) {
      skip_reason_ = std::string(d.status().message());
      return;
    }
    driver_ = std::move(*d).release();
    auto c = gpuqueue::ScopedContext::Open(*driver_, 0);
    if (!c.ok()) {
      skip_reason_ = std::string(c.status().message());
      return;
    }
    ctx_ = std::move(*c).release();
    if (ctx_->compute_major() != 9 || ctx_->compute_minor() != 0)
      skip_reason_ = suite + " needs an sm_90 device; found " + ctx_->name();
  }
  // From the suite's TearDownTestSuite: writes the evidence (when asked) and closes the context.
  static void CloseWritingEvidence(const std::string& file, const std::string& witness) {
    if (const char* dir = std::getenv("CAKE_EVIDENCE_DIR"); dir != nullptr && ctx_ != nullptr) {
      nlohmann::json doc;
      doc["device"] = ctx_->name();
      doc["compute_capability"] =
          std::to_string(ctx_->compute_major()) + "." + std::to_string(ctx_->compute_minor());
      doc["driver_version"] = driver_->driver_version;
      doc["witness"] = witness;
      doc["runs"] = evidence_;
      std::ofstream(std::filesystem::path(dir) / file) << doc.dump(2) << "\n";
    }
    delete ctx_;
    ctx_ = nullptr;
  }
  void SetUp() override {
    if (!skip_reason_.empty()) GTEST_SKIP() << skip_reason_;
  }

  static inline gpuqueue::CudaDriver* driver_ = nullptr;
  static inline gpuqueue::ScopedContext* ctx_ = nullptr;
  static inline std::string skip_reason_;
  static inline nlohmann::json evidence_ = nlohmann::json::array();
};

}  // namespace cake::testing
