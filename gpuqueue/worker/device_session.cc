#include "device_session.h"
#include "base/digest.h"

#include <filesystem>

#include "absl/strings/str_cat.h"
#include "base/files.h"
#include "compiler/canonical.h"
#include "compiler/lowering.h"

namespace cake::gpuqueue {

namespace fs = std::filesystem;

absl::StatusOr<Gpu> OpenGpu() {
  Gpu g;
  auto d = CudaDriver::Load();
  if (!d.ok()) return d.status();
  g.driver = std::move(*d);
  auto c = ScopedContext::Open(*g.driver, 0);
  if (!c.ok()) return c.status();
  g.ctx = std::move(*c);
  return g;
}

absl::StatusOr<KernelImage> ReadKernelImage(const worker::KernelRef& ref) {
  KernelImage k;
  k.candidate = ref.candidate();
  k.receipt = ref.receipt();
  compiler::EnsureLaunchSpec(&k.receipt);
  k.cubin = base::ReadFileBytes(fs::path(ref.receipt().artifact_dir()) / "kernel.cubin");
  if (k.cubin.empty() || base::Sha256Hex(k.cubin) != ref.receipt().cubin_sha256())
    return absl::DataLossError(
        absl::StrCat("artifact of ", ref.candidate(), " does not match its receipt's cubin hash"));
  return k;
}

absl::StatusOr<std::unique_ptr<Kernel>> LoadKernel(const Gpu& g, const worker::KernelRef& ref) {
  auto image = ReadKernelImage(ref);
  if (!image.ok()) return image.status();
  return Kernel::Load(*g.driver, image->cubin, image->receipt);
}

}  // namespace cake::gpuqueue
