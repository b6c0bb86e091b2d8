// A compiled candidate kernel as the worker runs it, launched the way its lowering receipt says
// (report.LaunchSpec: the argument list in order and the grid as formulas over scalars), with
// whatever tensors and scalars the workload binds by name. Device buffers are owned by
// DeviceBuffer. Not thread-safe; one per worker.
#pragma once

#include <cuda.h>

#include <array>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>

#include <vector>

#include "absl/status/statusor.h"
#include "cake/portfolio.pb.h"
#include "cake/report.pb.h"
#include "cuda_driver.h"

namespace cake::gpuqueue {

class DeviceBuffer {
 public:
  static absl::StatusOr<DeviceBuffer> Allocate(const CudaDriver& d, size_t bytes);
  DeviceBuffer(DeviceBuffer&& o) noexcept : d_(o.d_), ptr_(o.ptr_), bytes_(o.bytes_) { o.ptr_ = 0; }
  DeviceBuffer& operator=(DeviceBuffer&&) = delete;
  ~DeviceBuffer();
  CUdeviceptr ptr() const { return ptr_; }
  size_t bytes() const { return bytes_; }
  absl::Status Upload(const void* host, size_t bytes) const;
  absl::Status Download(void* host, size_t bytes) const;
  absl::Status Fill32(uint32_t pattern) const;  // bytes_ must be a multiple of 4
  absl::Status UploadRange(const void* host, size_t offset, size_t bytes) const;
  absl::Status DownloadRange(void* host, size_t offset, size_t bytes) const;

 private:
  DeviceBuffer(const CudaDriver* d, CUdeviceptr p, size_t b) : d_(d), ptr_(p), bytes_(b) {}
  const CudaDriver* d_;
  CUdeviceptr ptr_;
  size_t bytes_;
};

// What one launch binds, by the schedule's names.
struct KernelArgs {
  std::map<std::string, CUdeviceptr> tensors;
  std::map<std::string, int64_t> scalars;
};

// The bytes a WORKSPACE argument needs for `args` (report.LaunchSpec.Arg: per element of
// rows x cols plus per box_rows x box_cols tile), rounded up to a multiple of 4 and at least 4;
// InvalidArgument for a missing or out-of-range extent or a size beyond 2^62 bytes.
absl::StatusOr<size_t> WorkspaceBytes(const report::LaunchSpec::Arg& a, const KernelArgs& args);

// The CTAs of a launch for `scalars`: each dimension ceil(value(extent) / divisor) or its count;
// a persistent launch starts min(tiles, resident_ctas) CTAs along x. InvalidArgument naming a
// missing scalar.
absl::StatusOr<std::array<unsigned, 3>> LaunchGrid(const report::LaunchSpec& launch,
                                                   const std::map<std::string, int64_t>& scalars,
                                                   int64_t resident_ctas);

// What cuTensorMapEncodeTiled is given for a TENSOR_MAP argument at `scalars` (2-D, innermost
// first). InvalidArgument naming the tensor for a missing scalar, an empty extent or box, or an
// element or swizzle size the lowering never states.
struct TensorMapGeometry {
  CUtensorMapDataType type = CU_TENSOR_MAP_DATA_TYPE_UINT8;
  CUtensorMapSwizzle swizzle = CU_TENSOR_MAP_SWIZZLE_NONE;
  cuuint64_t dims[2] = {0, 0};
  cuuint64_t pitch[1] = {0};
  cuuint32_t box[2] = {0, 0};
};
absl::StatusOr<TensorMapGeometry> TensorMapGeometryOf(
    const report::LaunchSpec::Arg& a, const std::map<std::string, int64_t>& scalars);

// One compiled schedule of a dispatcher manifest, as the worker loads it.
struct KernelEntryImage {
  std::string name;
  portfolio::ShapeGuard guard;  // the facts it was verified under; empty admits every shape
  std::string cubin;
  report::LoweringReceipt receipt;
};

// A loaded kernel: one module, or a portfolio's entries in dispatch order, each launched for the
// shapes its guard admits (the first that does runs a launch, as a runtime dispatches).
class Kernel {
 public:
  // FailedPrecondition when the receipt carries no launch (compile it again).
  static absl::StatusOr<std::unique_ptr<Kernel>> Load(const CudaDriver& d, const std::string& cubin,
                                                      const report::LoweringReceipt& receipt);
  // A portfolio's entries; the last is its fallback. InvalidArgument when there are none.
  static absl::StatusOr<std::unique_ptr<Kernel>> LoadEntries(
      const CudaDriver& d, const std::vector<KernelEntryImage>& entries);
  ~Kernel();
  // The dispatched entry: InvalidArgument naming a tensor or scalar the launch needs and `args`
  // lacks, or when no entry admits `args`' scalars.
  absl::Status Launch(CUstream stream, const KernelArgs& args) const;
  // Entry `entry` whatever dispatch would pick; FailedPrecondition when its guard does not admit
  // the scalars (it was never verified for them).
  absl::Status LaunchEntry(CUstream stream, const KernelArgs& args, int entry) const;
  // The entry a launch with `scalars` runs; NotFound when none admits them.
  absl::StatusOr<int> Dispatch(const std::map<std::string, int64_t>& scalars) const;
  bool Admits(int entry, const std::map<std::string, int64_t>& scalars) const;
  int entry_count() const { return static_cast<int>(entries_.size()); }
  const std::string& entry_name(int entry) const { return entries_[entry].name; }
  const report::LaunchSpec& entry_launch(int entry) const { return entries_[entry].launch; }
  // True when `symbol` is one of the entries' kernels (a profiler span of this kernel).
  bool HasSymbol(const std::string& symbol) const;

 private:
  struct Entry {
    std::string name;
    portfolio::ShapeGuard guard;
    CUmodule module = nullptr;
    CUfunction fn = nullptr;
    report::LaunchSpec launch;
    std::string symbol;
    // Persistent launches: the CTAs started at most (max_ctas, else SMs x CTAs per SM).
    int64_t resident_ctas = 0;
    // Per entry: a split-K kernel's counters sit after its own partials, where another
    // entry's partials would be.
    mutable std::optional<DeviceBuffer> workspace;
    mutable std::pair<int64_t, int64_t> workspace_extents = {-1, -1};  // of its last zeroing
  };
  explicit Kernel(const CudaDriver& d) : d_(d) {}
  absl::Status AddEntry(const std::string& name, const portfolio::ShapeGuard& guard,
                        const std::string& cubin, const report::LoweringReceipt& receipt);
  // The tensor map a TENSOR_MAP argument describes, over the bound tensor; InvalidArgument
  // naming the tensor when a binding is missing or the driver refuses the geometry.
  absl::StatusOr<CUtensorMap> EncodeTensorMap(const report::LaunchSpec::Arg& a,
                                              const KernelArgs& args) const;
  // The WORKSPACE argument's buffer: allocated at its launch size when none is large enough
  // (after `stream` drains the launches that used the smaller one), and zeroed on `stream`
  // whenever its extents differ from the last launch's; the kernel leaves it zeroed for the
  // same extents, so a run of same-shape launches pays nothing.
  absl::StatusOr<CUdeviceptr> Workspace(const Entry& e, const report::LaunchSpec::Arg& a,
                                        const KernelArgs& args, CUstream stream) const;
  const CudaDriver& d_;
  std::vector<Entry> entries_;
};

}  // namespace cake::gpuqueue
