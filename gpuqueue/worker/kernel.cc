#include "kernel.h"

#include <vector>

#include <algorithm>

#include "absl/strings/str_cat.h"

namespace cake::gpuqueue {

absl::StatusOr<DeviceBuffer> DeviceBuffer::Allocate(const CudaDriver& d, size_t bytes) {
  CUdeviceptr p = 0;
  absl::Status s = d.Check(d.MemAlloc(&p, bytes), "cuMemAlloc");
  if (!s.ok()) return s;
  return DeviceBuffer(&d, p, bytes);
}

DeviceBuffer::~DeviceBuffer() {
  if (ptr_ != 0 && !d_->context_lost) d_->MemFree(ptr_);
}

absl::Status DeviceBuffer::Upload(const void* host, size_t bytes) const {
  return d_->Check(d_->MemcpyHtoD(ptr_, host, bytes), "cuMemcpyHtoD");
}

absl::Status DeviceBuffer::Download(void* host, size_t bytes) const {
  return d_->Check(d_->MemcpyDtoH(host, ptr_, bytes), "cuMemcpyDtoH");
}

absl::Status DeviceBuffer::UploadRange(const void* host, size_t offset, size_t bytes) const {
  if (offset + bytes > bytes_) return absl::OutOfRangeError("upload past the buffer's end");
  return d_->Check(d_->MemcpyHtoD(ptr_ + offset, host, bytes), "cuMemcpyHtoD");
}

absl::Status DeviceBuffer::DownloadRange(void* host, size_t offset, size_t bytes) const {
  if (offset + bytes > bytes_) return absl::OutOfRangeError("download past the buffer's end");
  return d_->Check(d_->MemcpyDtoH(host, ptr_ + offset, bytes), "cuMemcpyDtoH");
}

absl::Status DeviceBuffer::Fill32(uint32_t pattern) const {
  return d_->Check(d_->MemsetD32(ptr_, pattern, bytes_ / 4), "cuMemsetD32");
}

absl::StatusOr<std::unique_ptr<Kernel>> Kernel::Load(const CudaDriver& d, const std::string& cubin,
                                                     const report::LoweringReceipt& receipt) {
  if (receipt.launch().args_size() == 0 || receipt.launch().threads_per_cta() <= 0)
    return absl::FailedPreconditionError(
        absl::StrCat("receipt of ", receipt.kernel_symbol(), " carries no launch"));
  std::unique_ptr<Kernel> k(new Kernel(d));
  absl::Status s = d.Check(d.ModuleLoadData(&k->module_, cubin.data()), "cuModuleLoadData");
  if (!s.ok()) return s;
  s = d.Check(d.ModuleGetFunction(&k->fn_, k->module_, receipt.kernel_symbol().c_str()),
              "cuModuleGetFunction");
  if (!s.ok()) return s;
  k->symbol_ = receipt.kernel_symbol();
  k->launch_ = receipt.launch();
  s = d.Check(d.FuncSetAttribute(k->fn_, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                 static_cast<int>(k->launch_.dynamic_shared_bytes())),
              "cuFuncSetAttribute(MAX_DYNAMIC_SHARED_SIZE_BYTES)");
  if (!s.ok()) return s;
  return k;
}

Kernel::~Kernel() {
  if (module_ != nullptr && !d_.context_lost) d_.ModuleUnload(module_);
}

absl::Status Kernel::Launch(CUstream stream, const KernelArgs& args) const {
  // Parameter storage in argument order: 8-byte pointers, 32-bit scalars.
  std::vector<CUdeviceptr> pointers;
  std::vector<int32_t> scalars;
  pointers.reserve(launch_.args_size());
  scalars.reserve(launch_.args_size());
  std::vector<void*> params;
  for (const report::LaunchSpec::Arg& a : launch_.args()) {
    if (a.kind() == report::LaunchSpec::Arg::TENSOR) {
      auto it = args.tensors.find(a.name());
      if (it == args.tensors.end())
        return absl::InvalidArgumentError(absl::StrCat("launch needs tensor '", a.name(), "'"));
      pointers.push_back(it->second);
      params.push_back(&pointers.back());
    } else {
      auto it = args.scalars.find(a.name());
      if (it == args.scalars.end())
        return absl::InvalidArgumentError(absl::StrCat("launch needs scalar '", a.name(), "'"));
      scalars.push_back(static_cast<int32_t>(it->second));
      params.push_back(&scalars.back());
    }
  }
  unsigned grid[3] = {1, 1, 1};
  const report::LaunchSpec::GridDim* dims[3] = {&launch_.grid_x(), &launch_.grid_y(),
                                                &launch_.grid_z()};
  for (int i = 0; i < 3; ++i) {
    if (dims[i]->extent().empty()) continue;
    auto it = args.scalars.find(dims[i]->extent());
    if (it == args.scalars.end())
      return absl::InvalidArgumentError(
          absl::StrCat("grid needs scalar '", dims[i]->extent(), "'"));
    const int64_t div = std::max<int64_t>(dims[i]->divisor(), 1);
    grid[i] = static_cast<unsigned>(std::max<int64_t>((it->second + div - 1) / div, 1));
  }
  return d_.Check(d_.LaunchKernel(fn_, grid[0], grid[1], grid[2],
                                  static_cast<unsigned>(launch_.threads_per_cta()), 1, 1,
                                  static_cast<unsigned>(launch_.dynamic_shared_bytes()), stream,
                                  params.data(), nullptr),
                  "cuLaunchKernel");
}

}  // namespace cake::gpuqueue
