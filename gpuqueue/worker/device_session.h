// The device side of a worker job: opening the device (the only CUDA context of the process) and
// reading a candidate's kernel image from its receipt, refused unless the cubin still hashes to
// the receipt's cubin_sha256 (a receipt made before receipts carried their launch gets it from
// its lowering).
#pragma once

#include <cuda.h>

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "cake/report.pb.h"
#include "cake/worker.pb.h"
#include "cuda_driver.h"
#include "kernel.h"

namespace cake::gpuqueue {

struct Gpu {
  std::unique_ptr<CudaDriver> driver;
  std::unique_ptr<ScopedContext> ctx;
};
absl::StatusOr<Gpu> OpenGpu();

struct KernelImage {
  std::string candidate;
  std::string cubin;                // one schedule's; empty for a portfolio (see entries)
  report::LoweringReceipt receipt;  // a portfolio's: its fallback's
  // A portfolio's manifest entries in dispatch order (each cubin checked against its hash);
  // empty for one schedule.
  std::vector<KernelEntryImage> entries;
};
absl::StatusOr<KernelImage> ReadKernelImage(const worker::KernelRef& ref);

// A module of the image: its one kernel, or every entry of its portfolio.
absl::StatusOr<std::unique_ptr<Kernel>> LoadImage(const CudaDriver& d, const KernelImage& image);
// ReadKernelImage, then LoadImage.
absl::StatusOr<std::unique_ptr<Kernel>> LoadKernel(const Gpu& g, const worker::KernelRef& ref);

}  // namespace cake::gpuqueue
