// GPU-side pieces shared by the validate/measure jobs and the protocol benchmark: opening the
// device, loading a receipt's cubin (hash-checked), fresh device inputs for a GEMM row, and the
// paired timing loop (incumbent and challenger interleaved, order alternating A B / B A).
#pragma once

#include <cuda.h>

#include <memory>
#include <optional>
#include <vector>

#include "absl/status/statusor.h"
#include "cake/contract.pb.h"
#include "cake/evidence.pb.h"
#include "cake/worker.pb.h"
#include "cuda_driver.h"
#include "gemm_kernel.h"

namespace cake::gpuqueue {

struct Gpu {
  std::unique_ptr<CudaDriver> driver;
  std::unique_ptr<ScopedContext> ctx;
};
absl::StatusOr<Gpu> OpenGpu();

// The cubin named by the receipt, refused unless it still hashes to the receipt's cubin_sha256.
absl::StatusOr<std::unique_ptr<GemmKernel>> LoadKernel(const Gpu& g, const worker::KernelRef& ref);

struct RowBuffers {
  std::vector<uint16_t> a, b;
  std::optional<DeviceBuffer> da, db, dc;
  size_t out_bytes = 0;
};

// Fresh random BF16 inputs for `s` from `seed`, uploaded; an output buffer of the right size.
absl::Status PrepareRow(const Gpu& g, const contract::GemmShape& s, bool bf16_out, uint64_t seed,
                        RowBuffers* rb);

// Warm-up, then `pairs` paired samples; each sample averages enough back-to-back launches to
// last >= ~200 us (at least `min_launches`). Samples in microseconds per launch.
// `challenger_extra_launches` > 0 plants extra work in the challenger (its sample runs that many
// more launches, divided by the same count): used only by the protocol benchmark.
absl::StatusOr<evidence::RowTiming> TimePairs(
    const Gpu& g, const GemmKernel& incumbent, const RowBuffers& inc_buffers,
    const contract::GemmShape& inc_shape, const GemmKernel& challenger,
    const RowBuffers& cha_buffers, const contract::GemmShape& cha_shape, int pairs, int warmup,
    int min_launches, CUevent start, CUevent stop, int challenger_extra_launches = 0);

}  // namespace cake::gpuqueue
