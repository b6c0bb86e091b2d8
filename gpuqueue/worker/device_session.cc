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

namespace {

// The cubin a receipt names, refused unless it still hashes to the receipt's cubin_sha256.
absl::StatusOr<std::string> ReadCubin(const report::LoweringReceipt& receipt,
                                      const std::string& what) {
  std::string cubin = base::ReadFileBytes(fs::path(receipt.artifact_dir()) / "kernel.cubin");
  if (cubin.empty() || base::Sha256Hex(cubin) != receipt.cubin_sha256())
    return absl::DataLossError(
        absl::StrCat("artifact of ", what, " does not match its receipt's cubin hash"));
  return cubin;
}

}  // namespace

absl::StatusOr<KernelImage> ReadKernelImage(const worker::KernelRef& ref) {
  KernelImage k;
  k.candidate = ref.candidate();
  k.receipt = ref.receipt();
  compiler::EnsureLaunchSpec(&k.receipt);
  // A portfolio's own receipt is its fallback's, whose cubin is read (and checked) as the last
  // entry below.
  if (ref.manifest().entries().empty()) {
    auto cubin = ReadCubin(ref.receipt(), ref.candidate());
    if (!cubin.ok()) return cubin.status();
    k.cubin = *std::move(cubin);
  }
  for (const portfolio::DispatcherManifest::Entry& e : ref.manifest().entries()) {
    KernelEntryImage& entry = k.entries.emplace_back();
    entry.name = e.name();
    entry.guard = e.guard();
    entry.receipt = e.receipt();
    compiler::EnsureLaunchSpec(&entry.receipt);
    // The manifest's own record of the cubin must agree with the receipt it carries.
    if (e.cubin_sha256() != e.receipt().cubin_sha256())
      return absl::DataLossError(absl::StrCat("portfolio entry '", e.name(), "' of ",
                                              ref.candidate(),
                                              ": manifest and receipt name different cubins"));
    auto entry_cubin = ReadCubin(
        e.receipt(), absl::StrCat(ref.candidate(), " (portfolio entry '", e.name(), "')"));
    if (!entry_cubin.ok()) return entry_cubin.status();
    entry.cubin = *std::move(entry_cubin);
  }
  return k;
}

absl::StatusOr<std::unique_ptr<Kernel>> LoadImage(const CudaDriver& d, const KernelImage& image) {
  if (image.entries.empty()) return Kernel::Load(d, image.cubin, image.receipt);
  return Kernel::LoadEntries(d, image.entries);
}

absl::StatusOr<std::unique_ptr<Kernel>> LoadKernel(const Gpu& g, const worker::KernelRef& ref) {
  auto image = ReadKernelImage(ref);
  if (!image.ok()) return image.status();
  return LoadImage(*g.driver, *image);
}

}  // namespace cake::gpuqueue
