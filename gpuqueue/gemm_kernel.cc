#include "gemm_kernel.h"

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

absl::StatusOr<std::unique_ptr<GemmKernel>> GemmKernel::Load(
    const CudaDriver& d, const std::string& cubin, const report::LoweringReceipt& receipt) {
  std::unique_ptr<GemmKernel> k(new GemmKernel(d));
  absl::Status s = d.Check(d.ModuleLoadData(&k->module_, cubin.data()), "cuModuleLoadData");
  if (!s.ok()) return s;
  s = d.Check(d.ModuleGetFunction(&k->fn_, k->module_, receipt.kernel_symbol().c_str()),
              "cuModuleGetFunction");
  if (!s.ok()) return s;
  k->symbol_ = receipt.kernel_symbol();
  k->threads_ = receipt.threads_per_cta();
  k->tile_m_ = receipt.tile_m();
  k->tile_n_ = receipt.tile_n();
  k->shared_bytes_ = static_cast<unsigned>(receipt.resources().shared_dynamic_bytes());
  if (k->threads_ <= 0 || k->tile_m_ <= 0 || k->tile_n_ <= 0)
    return absl::InvalidArgumentError("receipt lacks launch geometry");
  s = d.Check(d.FuncSetAttribute(k->fn_, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                 static_cast<int>(k->shared_bytes_)),
              "cuFuncSetAttribute(MAX_DYNAMIC_SHARED_SIZE_BYTES)");
  if (!s.ok()) return s;
  return k;
}

GemmKernel::~GemmKernel() {
  if (module_ != nullptr && !d_.context_lost) d_.ModuleUnload(module_);
}

absl::Status GemmKernel::Launch(CUstream stream, CUdeviceptr a, CUdeviceptr b, CUdeviceptr c, int m,
                                int n, int k) const {
  void* args[] = {&a, &b, &c, &m, &n, &k};
  const unsigned gx = static_cast<unsigned>((n + tile_n_ - 1) / tile_n_);
  const unsigned gy = static_cast<unsigned>((m + tile_m_ - 1) / tile_m_);
  return d_.Check(d_.LaunchKernel(fn_, gx, gy, 1, static_cast<unsigned>(threads_), 1, 1,
                                  shared_bytes_, stream, args, nullptr),
                  "cuLaunchKernel");
}

}  // namespace cake::gpuqueue
