#include "kernel.h"

#include <algorithm>
#include <array>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "compiler/portfolio.h"

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

absl::Status Kernel::AddEntry(const std::string& name, const portfolio::ShapeGuard& guard,
                              const std::string& cubin, const report::LoweringReceipt& receipt) {
  if (receipt.launch().args_size() == 0 || receipt.launch().threads_per_cta() <= 0)
    return absl::FailedPreconditionError(
        absl::StrCat("receipt of ", receipt.kernel_symbol(), " carries no launch"));
  Entry& e = entries_.emplace_back();
  e.name = name;
  e.guard = guard;
  absl::Status s = d_.Check(d_.ModuleLoadData(&e.module, cubin.data()), "cuModuleLoadData");
  if (!s.ok()) return s;
  s = d_.Check(d_.ModuleGetFunction(&e.fn, e.module, receipt.kernel_symbol().c_str()),
               "cuModuleGetFunction");
  if (!s.ok()) return s;
  e.symbol = receipt.kernel_symbol();
  e.launch = receipt.launch();
  s = d_.Check(d_.FuncSetAttribute(e.fn, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                   static_cast<int>(e.launch.dynamic_shared_bytes())),
               "cuFuncSetAttribute(MAX_DYNAMIC_SHARED_SIZE_BYTES)");
  if (!s.ok() || !e.launch.persistent()) return s;
  if (e.launch.max_ctas() > 0) {
    e.resident_ctas = e.launch.max_ctas();
    return absl::OkStatus();
  }
  // As many CTAs as the device keeps resident at once: more would queue behind the first
  // wave and walk no tiles of their own.
  CUdevice dev = 0;
  int sms = 0, per_sm = 0;
  s = d_.Check(d_.CtxGetDevice(&dev), "cuCtxGetDevice");
  if (s.ok())
    s = d_.Check(d_.DeviceGetAttribute(&sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, dev),
                 "cuDeviceGetAttribute(MULTIPROCESSOR_COUNT)");
  if (s.ok())
    s = d_.Check(d_.OccupancyMaxActiveBlocksPerMultiprocessor(
                     &per_sm, e.fn, e.launch.threads_per_cta(),
                     static_cast<size_t>(e.launch.dynamic_shared_bytes())),
                 "cuOccupancyMaxActiveBlocksPerMultiprocessor");
  if (!s.ok()) return s;
  if (per_sm < 1)
    return absl::FailedPreconditionError(
        absl::StrCat(e.symbol, ": no CTA of this kernel fits an SM"));
  e.resident_ctas = int64_t{sms} * per_sm;
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<Kernel>> Kernel::Load(const CudaDriver& d, const std::string& cubin,
                                                     const report::LoweringReceipt& receipt) {
  std::unique_ptr<Kernel> k(new Kernel(d));
  if (absl::Status s = k->AddEntry(receipt.kernel_symbol(), {}, cubin, receipt); !s.ok()) return s;
  return k;
}

absl::StatusOr<std::unique_ptr<Kernel>> Kernel::LoadEntries(
    const CudaDriver& d, const std::vector<KernelEntryImage>& entries) {
  if (entries.empty()) return absl::InvalidArgumentError("a portfolio kernel needs an entry");
  std::unique_ptr<Kernel> k(new Kernel(d));
  k->entries_.reserve(entries.size());
  for (const KernelEntryImage& e : entries)
    if (absl::Status s = k->AddEntry(e.name, e.guard, e.cubin, e.receipt); !s.ok())
      return absl::Status(s.code(), absl::StrCat("portfolio entry '", e.name, "': ", s.message()));
  return k;
}

Kernel::~Kernel() {
  if (d_.context_lost) return;
  for (Entry& e : entries_) {
    e.workspace.reset();
    if (e.module != nullptr) d_.ModuleUnload(e.module);
  }
}

bool Kernel::Admits(int entry, const std::map<std::string, int64_t>& scalars) const {
  return entry >= 0 && entry < entry_count() &&
         compiler::GuardAdmits(entries_[entry].guard, scalars);
}

absl::StatusOr<int> Kernel::Dispatch(const std::map<std::string, int64_t>& scalars) const {
  for (int i = 0; i < entry_count(); ++i)
    if (Admits(i, scalars)) return i;
  std::vector<std::string> values;
  for (const auto& [name, v] : scalars) values.push_back(absl::StrCat(name, "=", v));
  return absl::NotFoundError(
      absl::StrCat("no entry of the kernel admits ", absl::StrJoin(values, " ")));
}

bool Kernel::HasSymbol(const std::string& symbol) const {
  for (const Entry& e : entries_)
    if (e.symbol == symbol) return true;
  return false;
}

namespace {

absl::StatusOr<int64_t> Scalar(const KernelArgs& args, const std::string& name,
                               const std::string& what) {
  auto it = args.scalars.find(name);
  if (it == args.scalars.end())
    return absl::InvalidArgumentError(absl::StrCat(what, " needs scalar '", name, "'"));
  return it->second;
}

}  // namespace

absl::StatusOr<TensorMapGeometry> TensorMapGeometryOf(
    const report::LaunchSpec::Arg& a, const std::map<std::string, int64_t>& scalars) {
  const std::string what = absl::StrCat("tensor map of '", a.name(), "'");
  KernelArgs args;
  args.scalars = scalars;
  auto rows = Scalar(args, a.rows(), what);
  if (!rows.ok()) return rows.status();
  auto cols = Scalar(args, a.cols(), what);
  if (!cols.ok()) return cols.status();
  TensorMapGeometry g;
  switch (a.element_bytes()) {
    case 1:
      g.type = CU_TENSOR_MAP_DATA_TYPE_UINT8;
      break;
    case 2:
      g.type = CU_TENSOR_MAP_DATA_TYPE_UINT16;
      break;
    case 4:
      g.type = CU_TENSOR_MAP_DATA_TYPE_UINT32;
      break;
    default:
      return absl::InvalidArgumentError(
          absl::StrCat(what, ": element_bytes ", a.element_bytes(), " is not 1, 2 or 4"));
  }
  switch (a.swizzle_bytes()) {
    case 0:
      g.swizzle = CU_TENSOR_MAP_SWIZZLE_NONE;
      break;
    case 32:
      g.swizzle = CU_TENSOR_MAP_SWIZZLE_32B;
      break;
    case 64:
      g.swizzle = CU_TENSOR_MAP_SWIZZLE_64B;
      break;
    case 128:
      g.swizzle = CU_TENSOR_MAP_SWIZZLE_128B;
      break;
    default:
      return absl::InvalidArgumentError(
          absl::StrCat(what, ": swizzle_bytes ", a.swizzle_bytes(), " is not 0, 32, 64 or 128"));
  }
  if (*rows < 1 || *cols < 1 || a.box_rows() < 1 || a.box_cols() < 1)
    return absl::InvalidArgumentError(absl::StrCat(what, ": empty extent or box"));
  // Innermost dimension first; the one stride is the row pitch in bytes.
  g.dims[0] = static_cast<cuuint64_t>(*cols);
  g.dims[1] = static_cast<cuuint64_t>(*rows);
  g.pitch[0] = static_cast<cuuint64_t>(*cols) * a.element_bytes();
  g.box[0] = static_cast<cuuint32_t>(a.box_cols());
  g.box[1] = static_cast<cuuint32_t>(a.box_rows());
  return g;
}

absl::StatusOr<CUtensorMap> Kernel::EncodeTensorMap(const report::LaunchSpec::Arg& a,
                                                    const KernelArgs& args) const {
  auto ptr = args.tensors.find(a.name());
  if (ptr == args.tensors.end())
    return absl::InvalidArgumentError(
        absl::StrCat("launch needs tensor '", a.name(), "' (tensor map)"));
  const std::string what = absl::StrCat("tensor map of '", a.name(), "'");
  auto g = TensorMapGeometryOf(a, args.scalars);
  if (!g.ok()) return g.status();
  const cuuint32_t element_strides[2] = {1, 1};
  CUtensorMap map;
  absl::Status s =
      d_.Check(d_.TensorMapEncodeTiled(
                   &map, g->type, 2, reinterpret_cast<void*>(ptr->second), g->dims, g->pitch,
                   g->box, element_strides, CU_TENSOR_MAP_INTERLEAVE_NONE, g->swizzle,
                   CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE),
               "cuTensorMapEncodeTiled");
  if (!s.ok())
    return absl::InvalidArgumentError(absl::StrCat(what, " (", g->dims[1], " x ", g->dims[0],
                                                   ", box ", a.box_rows(), " x ", a.box_cols(),
                                                   "): ", s.message()));
  return map;
}

absl::StatusOr<size_t> WorkspaceBytes(const report::LaunchSpec::Arg& a, const KernelArgs& args) {
  const std::string what = absl::StrCat("workspace '", a.name(), "'");
  auto rows = Scalar(args, a.rows(), what);
  if (!rows.ok()) return rows.status();
  auto cols = Scalar(args, a.cols(), what);
  if (!cols.ok()) return cols.status();
  // Extents are the kernel's 32-bit scalars; the byte counts are the lowering's small constants.
  constexpr int64_t kMaxExtent = int64_t{1} << 31, kMaxBytesPer = int64_t{1} << 12;
  if (*rows < 0 || *cols < 0 || *rows >= kMaxExtent || *cols >= kMaxExtent || a.box_rows() <= 0 ||
      a.box_cols() <= 0 || a.bytes_per_element() < 0 || a.bytes_per_tile() < 0 ||
      a.bytes_per_element() > kMaxBytesPer || a.bytes_per_tile() > kMaxBytesPer)
    return absl::InvalidArgumentError(absl::StrCat(what, ": extents ", *rows, " x ", *cols,
                                                   " or its launch fields are out of range"));
  // rows * cols < 2^62 and tiles <= rows * cols; the products below are checked against 2^62.
  constexpr int64_t kMaxBytes = int64_t{1} << 62;
  const int64_t cells = *rows * *cols;
  const int64_t tiles =
      ((*rows + a.box_rows() - 1) / a.box_rows()) * ((*cols + a.box_cols() - 1) / a.box_cols());
  if ((a.bytes_per_element() > 0 && cells > kMaxBytes / 2 / a.bytes_per_element()) ||
      (a.bytes_per_tile() > 0 && tiles > kMaxBytes / 2 / a.bytes_per_tile()))
    return absl::InvalidArgumentError(absl::StrCat(what, " would exceed 2^62 bytes"));
  const int64_t bytes = cells * a.bytes_per_element() + tiles * a.bytes_per_tile();
  // A multiple of 4 for Fill32; at least 4 so an empty problem still binds a valid pointer.
  const int64_t rounded = std::max<int64_t>((bytes + 3) / 4 * 4, 4);
  return static_cast<size_t>(rounded);
}

absl::StatusOr<std::array<unsigned, 3>> LaunchGrid(const report::LaunchSpec& launch,
                                                   const std::map<std::string, int64_t>& scalars,
                                                   int64_t resident_ctas) {
  std::array<unsigned, 3> grid = {1, 1, 1};
  const report::LaunchSpec::GridDim* dims[3] = {&launch.grid_x(), &launch.grid_y(),
                                                &launch.grid_z()};
  for (int i = 0; i < 3; ++i) {
    if (dims[i]->extent().empty()) {
      grid[i] = static_cast<unsigned>(std::max(dims[i]->count(), 1));
      continue;
    }
    auto it = scalars.find(dims[i]->extent());
    if (it == scalars.end())
      return absl::InvalidArgumentError(
          absl::StrCat("grid needs scalar '", dims[i]->extent(), "'"));
    const int64_t div = std::max<int64_t>(dims[i]->divisor(), 1);
    grid[i] = static_cast<unsigned>(std::max<int64_t>((it->second + div - 1) / div, 1));
  }
  if (launch.persistent()) {  // the grid counted tiles; the CTAs walk them
    const int64_t tiles = int64_t{grid[0]} * grid[1] * grid[2];
    grid[0] = static_cast<unsigned>(std::max<int64_t>(std::min(tiles, resident_ctas), 1));
    grid[1] = grid[2] = 1;
  }
  return grid;
}

absl::StatusOr<CUdeviceptr> Kernel::Workspace(const Entry& e, const report::LaunchSpec::Arg& a,
                                              const KernelArgs& args, CUstream stream) const {
  auto bytes = WorkspaceBytes(a, args);
  if (!bytes.ok()) return bytes.status();
  const size_t need = *bytes;
  const std::string what = absl::StrCat("workspace '", a.name(), "'");
  // The kernel leaves the workspace as it found it only for the same extents: its arrival
  // counters sit after the partials, so another shape's counters land on stale partials. A
  // new layout starts from zeros, ordered on `stream` before the launch.
  const std::pair<int64_t, int64_t> extents = {args.scalars.at(a.rows()),
                                               args.scalars.at(a.cols())};
  if (e.workspace.has_value() && e.workspace->bytes() >= need && e.workspace_extents == extents)
    return e.workspace->ptr();
  if (!e.workspace.has_value() || e.workspace->bytes() < need) {
    if (e.workspace.has_value()) {
      if (absl::Status s = d_.Check(d_.StreamSynchronize(stream), "cuStreamSynchronize"); !s.ok())
        return s;
      e.workspace.reset();
    }
    auto buffer = DeviceBuffer::Allocate(d_, need);
    if (!buffer.ok())
      return absl::ResourceExhaustedError(
          absl::StrCat(what, " of ", need, " bytes: ", buffer.status().message()));
    e.workspace.emplace(*std::move(buffer));
  }
  if (absl::Status s =
          d_.Check(d_.MemsetD32Async(e.workspace->ptr(), 0, e.workspace->bytes() / 4, stream),
                   "cuMemsetD32Async(workspace)");
      !s.ok())
    return s;
  e.workspace_extents = extents;
  return e.workspace->ptr();
}

absl::Status Kernel::Launch(CUstream stream, const KernelArgs& args) const {
  auto entry = Dispatch(args.scalars);
  if (!entry.ok()) return absl::InvalidArgumentError(entry.status().message());
  return LaunchEntry(stream, args, *entry);
}

absl::Status Kernel::LaunchEntry(CUstream stream, const KernelArgs& args, int entry) const {
  if (!Admits(entry, args.scalars))
    return absl::FailedPreconditionError(
        absl::StrCat("entry ", entry, " of the kernel was not verified for these scalars"));
  const Entry& e = entries_[entry];
  const report::LaunchSpec& launch = e.launch;
  // Parameter storage in argument order: 8-byte pointers, 32-bit scalars, 128-byte tensor maps
  // (64-byte aligned, as the kernel's parameter is).
  std::vector<CUdeviceptr> pointers;
  std::vector<int32_t> scalars;
  std::vector<CUtensorMap> maps;
  pointers.reserve(launch.args_size());
  scalars.reserve(launch.args_size());
  maps.reserve(launch.args_size());
  std::vector<void*> params;
  for (const report::LaunchSpec::Arg& a : launch.args()) {
    if (a.kind() == report::LaunchSpec::Arg::TENSOR) {
      auto it = args.tensors.find(a.name());
      if (it == args.tensors.end())
        return absl::InvalidArgumentError(absl::StrCat("launch needs tensor '", a.name(), "'"));
      pointers.push_back(it->second);
      params.push_back(&pointers.back());
    } else if (a.kind() == report::LaunchSpec::Arg::WORKSPACE) {
      auto ptr = Workspace(e, a, args, stream);
      if (!ptr.ok()) return ptr.status();
      pointers.push_back(*ptr);
      params.push_back(&pointers.back());
    } else if (a.kind() == report::LaunchSpec::Arg::TENSOR_MAP) {
      auto map = EncodeTensorMap(a, args);
      if (!map.ok()) return map.status();
      maps.push_back(*map);
      params.push_back(&maps.back());
    } else {
      auto v = Scalar(args, a.name(), "launch");
      if (!v.ok()) return v.status();
      scalars.push_back(static_cast<int32_t>(*v));
      params.push_back(&scalars.back());
    }
  }
  auto grid = LaunchGrid(launch, args.scalars, e.resident_ctas);
  if (!grid.ok()) return grid.status();
  return d_.Check(d_.LaunchKernel(e.fn, (*grid)[0], (*grid)[1], (*grid)[2],
                                  static_cast<unsigned>(launch.threads_per_cta()), 1, 1,
                                  static_cast<unsigned>(launch.dynamic_shared_bytes()), stream,
                                  params.data(), nullptr),
                  "cuLaunchKernel");
}

}  // namespace cake::gpuqueue
