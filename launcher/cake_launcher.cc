#include "cake_launcher.h"

#include <dlfcn.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <sstream>

namespace cake_launcher {
namespace {

// Entry points are requested at this API version (CUDA 12.0 semantics).
constexpr int kDriverApiVersion = 12000;
// Sub-buffers of one workspace start at multiples of this.
constexpr uint64_t kWorkspaceAlignment = 256;

std::string Str(int64_t v) { return std::to_string(v); }

std::string FactText(const ScalarFact& f) {
  std::string s = f.scalar + " >= " + Str(f.min);
  if (f.max > 0) s += " and <= " + Str(f.max);
  if (f.multiple_of > 1) s += " and a multiple of " + Str(f.multiple_of);
  return s;
}

// The first fact of `guard` that `shape` fails ("" when it admits it).
std::string FailedFact(const std::vector<ScalarFact>& guard, const Shape& shape) {
  for (const ScalarFact& f : guard) {
    auto it = shape.find(f.scalar);
    if (it == shape.end()) return f.scalar + " is not given";
    const int64_t v = it->second;
    if (v < f.min || (f.max > 0 && v > f.max) || (f.multiple_of > 1 && v % f.multiple_of != 0))
      return FactText(f) + " (it is " + Str(v) + ")";
  }
  return "";
}

Status Value(const Shape& shape, const std::string& name, const std::string& what, int64_t* v) {
  auto it = shape.find(name);
  if (it == shape.end()) return Status::Error(what + " needs scalar '" + name + "'");
  *v = it->second;
  return {};
}

}  // namespace

Status LaunchGrid(const EntrySpec& e, const Shape& shape, int64_t resident_ctas, unsigned grid[3]) {
  for (int d = 0; d < 3; ++d) {
    const GridDimSpec& g = e.grid[d];
    if (g.extent.empty()) {
      grid[d] = static_cast<unsigned>(std::max(g.count, 1));
      continue;
    }
    int64_t v = 0;
    if (Status s = Value(shape, g.extent, "grid", &v); !s.ok()) return s;
    const int64_t div = std::max(g.divisor, 1);
    grid[d] = static_cast<unsigned>(std::max<int64_t>((v + div - 1) / div, 1));
  }
  if (e.persistent) {  // the grid counted tiles; the CTAs walk them
    const int64_t tiles = int64_t{grid[0]} * grid[1] * grid[2];
    grid[0] = static_cast<unsigned>(std::max<int64_t>(std::min(tiles, resident_ctas), 1));
    grid[1] = grid[2] = 1;
  }
  return {};
}

Status TensorMapGeometryOf(const ArgSpec& a, const Shape& shape, TensorMapGeometry* g) {
  const std::string what = "tensor map of '" + a.name + "'";
  int64_t rows = 0, cols = 0;
  if (Status s = Value(shape, a.rows, what, &rows); !s.ok()) return s;
  if (Status s = Value(shape, a.cols, what, &cols); !s.ok()) return s;
  switch (a.element_bytes) {
    case 1:
      g->type = CU_TENSOR_MAP_DATA_TYPE_UINT8;
      break;
    case 2:
      g->type = CU_TENSOR_MAP_DATA_TYPE_UINT16;
      break;
    case 4:
      g->type = CU_TENSOR_MAP_DATA_TYPE_UINT32;
      break;
    default:
      return Status::Error(what + ": element_bytes " + Str(a.element_bytes) + " is not 1, 2 or 4");
  }
  switch (a.swizzle_bytes) {
    case 0:
      g->swizzle = CU_TENSOR_MAP_SWIZZLE_NONE;
      break;
    case 32:
      g->swizzle = CU_TENSOR_MAP_SWIZZLE_32B;
      break;
    case 64:
      g->swizzle = CU_TENSOR_MAP_SWIZZLE_64B;
      break;
    case 128:
      g->swizzle = CU_TENSOR_MAP_SWIZZLE_128B;
      break;
    default:
      return Status::Error(what + ": swizzle_bytes " + Str(a.swizzle_bytes) +
                           " is not 0, 32, 64 or 128");
  }
  if (rows < 1 || cols < 1 || a.box_rows < 1 || a.box_cols < 1)
    return Status::Error(what + ": empty extent or box");
  // Innermost dimension first; the one stride is the row pitch in bytes.
  g->dims[0] = static_cast<cuuint64_t>(cols);
  g->dims[1] = static_cast<cuuint64_t>(rows);
  g->pitch[0] = static_cast<cuuint64_t>(cols) * static_cast<cuuint64_t>(a.element_bytes);
  g->box[0] = static_cast<cuuint32_t>(a.box_cols);
  g->box[1] = static_cast<cuuint32_t>(a.box_rows);
  return {};
}

// Per element of rows x cols plus per box tile, rounded up to a multiple of 4 and at least 4.
Status WorkspaceArgBytes(const ArgSpec& a, const Shape& shape, uint64_t* bytes) {
  int64_t rows = 0, cols = 0;
  const std::string what = "workspace '" + a.name + "'";
  if (Status s = Value(shape, a.rows, what, &rows); !s.ok()) return s;
  if (Status s = Value(shape, a.cols, what, &cols); !s.ok()) return s;
  constexpr int64_t kMaxExtent = int64_t{1} << 31, kMaxBytesPer = int64_t{1} << 12;
  if (rows < 0 || cols < 0 || rows >= kMaxExtent || cols >= kMaxExtent || a.box_rows <= 0 ||
      a.box_cols <= 0 || a.bytes_per_element < 0 || a.bytes_per_tile < 0 ||
      a.bytes_per_element > kMaxBytesPer || a.bytes_per_tile > kMaxBytesPer)
    return Status::Error(what + ": extents " + Str(rows) + " x " + Str(cols) +
                         " or its launch fields are out of range");
  // rows * cols < 2^62 and tiles <= rows * cols; the products are checked against 2^62.
  constexpr int64_t kMaxBytes = int64_t{1} << 62;
  const int64_t cells = rows * cols;
  const int64_t tiles =
      ((rows + a.box_rows - 1) / a.box_rows) * ((cols + a.box_cols - 1) / a.box_cols);
  if ((a.bytes_per_element > 0 && cells > kMaxBytes / 2 / a.bytes_per_element) ||
      (a.bytes_per_tile > 0 && tiles > kMaxBytes / 2 / a.bytes_per_tile))
    return Status::Error(what + " would exceed 2^62 bytes");
  const int64_t total = cells * a.bytes_per_element + tiles * a.bytes_per_tile;
  *bytes = static_cast<uint64_t>(std::max<int64_t>((total + 3) / 4 * 4, 4));
  return {};
}

namespace {

// Offsets of an entry's WORKSPACE arguments inside one caller buffer, and its total.
Status WorkspaceLayout(const EntrySpec& e, const Shape& shape, std::vector<uint64_t>* offsets,
                       uint64_t* total) {
  *total = 0;
  offsets->clear();
  for (const ArgSpec& a : e.args) {
    if (a.kind != ArgKind::kWorkspace) continue;
    uint64_t bytes = 0;
    if (Status s = WorkspaceArgBytes(a, shape, &bytes); !s.ok()) return s;
    *total = (*total + kWorkspaceAlignment - 1) / kWorkspaceAlignment * kWorkspaceAlignment;
    offsets->push_back(*total);
    *total += bytes;
  }
  return {};
}

std::string ShapeText(const Shape& shape) {
  std::string s;
  for (const auto& [name, v] : shape) s += (s.empty() ? "" : " ") + name + "=" + Str(v);
  return s;
}

}  // namespace

Status Dispatch(const OperationSpec& op, const Shape& shape, int* entry) {
  for (const std::string& scalar : op.scalars)
    if (shape.find(scalar) == shape.end())
      return Status::Error("the shape gives no value for scalar '" + scalar + "'");
  for (const auto& [name, v] : shape)
    if (std::find(op.scalars.begin(), op.scalars.end(), name) == op.scalars.end())
      return Status::Error("'" + name + "' is not a scalar of " + op.operation);
  if (op.entries.empty()) return Status::Error(op.operation + " has no entries");
  for (size_t i = 0; i < op.entries.size(); ++i)
    if (FailedFact(op.entries[i].guard, shape).empty()) {
      *entry = static_cast<int>(i);
      return {};
    }
  return Status::Error("no entry of " + op.operation + " admits " + ShapeText(shape) +
                       ": the fallback '" + op.entries.back().name + "' needs " +
                       FailedFact(op.entries.back().guard, shape));
}

Status MakePlan(const OperationSpec& op, const Shape& shape, Plan* plan) {
  Plan p;
  if (Status s = Dispatch(op, shape, &p.entry); !s.ok()) return s;
  p.capacity = shape;
  // Workspace sizes grow with the extents, so the capacity's covers every smaller live shape
  // whichever entry it dispatches to.
  for (const EntrySpec& e : op.entries) {
    std::vector<uint64_t> offsets;
    uint64_t total = 0;
    if (Status s = WorkspaceLayout(e, shape, &offsets, &total); !s.ok()) return s;
    p.workspace_bytes = std::max(p.workspace_bytes, total);
  }
  *plan = std::move(p);
  return {};
}

Status CheckBinding(const OperationSpec& op, const Plan& plan, const Shape& live,
                    const std::map<std::string, TensorView>& tensors, CUdeviceptr workspace,
                    uint64_t workspace_bytes) {
  if (plan.entry < 0) return Status::Error("the plan is empty: call MakePlan first");
  int entry = -1;
  if (Status s = Dispatch(op, live, &entry); !s.ok()) return s;
  for (const auto& [name, v] : live) {
    const int64_t cap = plan.capacity.at(name);
    if (v > cap)
      return Status::Error("scalar " + name + " = " + Str(v) + " exceeds the plan's capacity " +
                           Str(cap) + "; plan again for it");
  }
  for (const auto& bound : tensors)  // no structured binding: a C++17 lambda cannot capture one
    if (std::none_of(op.tensors.begin(), op.tensors.end(),
                     [&](const TensorSpec& t) { return t.name == bound.first; }))
      return Status::Error("'" + bound.first + "' is not a tensor of " + op.operation);
  for (const TensorSpec& t : op.tensors) {
    auto it = tensors.find(t.name);
    if (it == tensors.end()) return Status::Error("tensor '" + t.name + "' is not bound");
    const TensorView& v = it->second;
    const std::string what = "tensor '" + t.name + "'";
    if (v.dtype != t.dtype)
      return Status::Error(what + " is " + v.dtype + "; the kernel takes " + t.dtype);
    std::vector<int64_t> want;
    std::string want_text;
    for (const DimSpec& d : t.dims) {
      want.push_back(d.symbol.empty() ? d.size : live.at(d.symbol));
      want_text += (want_text.empty() ? "" : ", ") +
                   (d.symbol.empty() ? Str(d.size) : d.symbol + "=" + Str(want.back()));
    }
    if (v.shape != want) {
      std::string have;
      for (int64_t d : v.shape) have += (have.empty() ? "" : ", ") + Str(d);
      return Status::Error(what + " has shape [" + have + "]; at this shape it must be [" +
                           want_text + "]");
    }
    std::vector<int64_t> contiguous(want.size(), 1);
    for (size_t i = want.size(); i-- > 1;) contiguous[i - 1] = contiguous[i] * want[i];
    if (!v.strides.empty() && v.strides != contiguous) {
      std::string strides;
      for (int64_t s : contiguous) strides += (strides.empty() ? "" : ", ") + Str(s);
      return Status::Error(what + " is not row-major contiguous: its strides must be [" + strides +
                           "] elements");
    }
    if (v.data == 0) return Status::Error(what + " has a null address");
    if (t.alignment_bytes > 1 && v.data % static_cast<uint64_t>(t.alignment_bytes) != 0)
      return Status::Error(what + " at 0x" +
                           [&] {
                             std::ostringstream o;
                             o << std::hex << v.data;
                             return o.str();
                           }() +
                           " is not aligned to " + Str(t.alignment_bytes) + " bytes");
  }
  std::vector<uint64_t> offsets;
  uint64_t need = 0;
  if (Status s = WorkspaceLayout(op.entries[entry], live, &offsets, &need); !s.ok()) return s;
  if (need > 0 && (workspace == 0 || workspace_bytes < need))
    return Status::Error("workspace of " + Str(static_cast<int64_t>(workspace_bytes)) +
                         " bytes is too small: entry '" + op.entries[entry].name + "' needs " +
                         Str(static_cast<int64_t>(need)) + " bytes at this shape (the plan's " +
                         Str(static_cast<int64_t>(plan.workspace_bytes)) + ")");
  if (need > 0 && workspace % kWorkspaceAlignment != 0)
    return Status::Error("workspace is not aligned to 256 bytes");
  return {};
}

// ---- The driver, opened at Prepare. ----

struct Launcher::Driver {
  void* handle = nullptr;
  decltype(&::cuGetErrorName) GetErrorName = nullptr;
  decltype(&::cuDeviceGet) DeviceGet = nullptr;
  decltype(&::cuDeviceGetAttribute) DeviceGetAttribute = nullptr;
  decltype(&::cuDevicePrimaryCtxRetain) PrimaryCtxRetain = nullptr;
  decltype(&::cuDevicePrimaryCtxRelease) PrimaryCtxRelease = nullptr;
  decltype(&::cuCtxSetCurrent) CtxSetCurrent = nullptr;
  decltype(&::cuCtxGetId) CtxGetId = nullptr;
  decltype(&::cuModuleLoadData) ModuleLoadData = nullptr;
  decltype(&::cuModuleUnload) ModuleUnload = nullptr;
  decltype(&::cuModuleGetFunction) ModuleGetFunction = nullptr;
  decltype(&::cuFuncSetAttribute) FuncSetAttribute = nullptr;
  decltype(&::cuOccupancyMaxActiveBlocksPerMultiprocessor) OccupancyMaxActiveBlocks = nullptr;
  decltype(&::cuLaunchKernel) LaunchKernel = nullptr;
  decltype(&::cuTensorMapEncodeTiled) TensorMapEncodeTiled = nullptr;
  decltype(&::cuPointerGetAttribute) PointerGetAttribute = nullptr;
  decltype(&::cuMemGetAddressRange) MemGetAddressRange = nullptr;
  decltype(&::cuMemsetD32Async) MemsetD32Async = nullptr;

  ~Driver() {
    if (handle != nullptr) dlclose(handle);
  }
  Status Check(CUresult r, const std::string& what) const {
    if (r == CUDA_SUCCESS) return {};
    const char* name = "?";
    if (GetErrorName != nullptr) GetErrorName(r, &name);
    return Status::Error(what + " failed: " + name);
  }
  Status Open() {
    const char* path = std::getenv("CAKE_LIBCUDA");
    handle = dlopen(path != nullptr && *path ? path : "libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (handle == nullptr) return Status::Error(std::string("no CUDA driver: ") + dlerror());
    using GetProc =
        CUresult (*)(const char*, void**, int, cuuint64_t, CUdriverProcAddressQueryResult*);
    auto get = reinterpret_cast<GetProc>(dlsym(handle, "cuGetProcAddress_v2"));
    auto init = reinterpret_cast<decltype(&::cuInit)>(dlsym(handle, "cuInit"));
    if (get == nullptr || init == nullptr)
      return Status::Error("the CUDA driver has no cuGetProcAddress_v2 (it is older than 12.0)");
    Status missing;
    auto resolve = [&](auto** fn, const char* symbol) {
      CUdriverProcAddressQueryResult found;
      void* p = nullptr;
      if (get(symbol, &p, kDriverApiVersion, CU_GET_PROC_ADDRESS_DEFAULT, &found) != CUDA_SUCCESS ||
          p == nullptr) {
        if (missing.ok()) missing = Status::Error(std::string("the CUDA driver lacks ") + symbol);
        return;
      }
      *fn = reinterpret_cast<std::remove_pointer_t<decltype(fn)>>(p);
    };
    resolve(&GetErrorName, "cuGetErrorName");
    resolve(&DeviceGet, "cuDeviceGet");
    resolve(&DeviceGetAttribute, "cuDeviceGetAttribute");
    resolve(&PrimaryCtxRetain, "cuDevicePrimaryCtxRetain");
    resolve(&PrimaryCtxRelease, "cuDevicePrimaryCtxRelease");
    resolve(&CtxSetCurrent, "cuCtxSetCurrent");
    resolve(&CtxGetId, "cuCtxGetId");
    resolve(&ModuleLoadData, "cuModuleLoadData");
    resolve(&ModuleUnload, "cuModuleUnload");
    resolve(&ModuleGetFunction, "cuModuleGetFunction");
    resolve(&FuncSetAttribute, "cuFuncSetAttribute");
    resolve(&OccupancyMaxActiveBlocks, "cuOccupancyMaxActiveBlocksPerMultiprocessor");
    resolve(&LaunchKernel, "cuLaunchKernel");
    resolve(&TensorMapEncodeTiled, "cuTensorMapEncodeTiled");
    resolve(&PointerGetAttribute, "cuPointerGetAttribute");
    resolve(&MemGetAddressRange, "cuMemGetAddressRange");
    resolve(&MemsetD32Async, "cuMemsetD32Async");
    if (!missing.ok()) return missing;
    return Check(init(0), "cuInit");
  }
};

struct Launcher::LoadedEntry {
  CUmodule module = nullptr;
  CUfunction function = nullptr;
  int64_t resident_ctas = 0;  // persistent launches: CTAs the device holds at once
};

// A tensor map as last encoded for one argument, with everything it was encoded from.
struct Launcher::MapCacheEntry {
  int entry = -1;
  size_t arg = 0;
  CUdeviceptr address = 0;
  unsigned long long buffer_id = 0;
  int64_t rows = 0, cols = 0;
  CUtensorMap map;
};

Launcher::Launcher(const OperationSpec& op, Plan plan, std::string export_dir,
                   DescriptorReuse reuse)
    : op_(op), plan_(std::move(plan)), export_dir_(std::move(export_dir)), reuse_(reuse) {}

Launcher::~Launcher() {
  if (!driver_ || context_ == nullptr) return;
  unsigned long long id = 0;
  // After a context reset the modules are gone with it; unloading them would be an error.
  if (driver_->CtxSetCurrent(context_) == CUDA_SUCCESS &&
      driver_->CtxGetId(context_, &id) == CUDA_SUCCESS && id == context_id_)
    for (auto& e : loaded_)
      if (e->module != nullptr) driver_->ModuleUnload(e->module);
  CUdevice dev = 0;
  if (driver_->DeviceGet(&dev, device_) == CUDA_SUCCESS) driver_->PrimaryCtxRelease(dev);
}

Status Launcher::Prepare(int device) {
  if (driver_)
    return Status::Error("the launcher is already prepared (on device " + Str(device_) + ")");
  if (plan_.entry < 0) return Status::Error("the plan is empty: call MakePlan first");
  auto driver = std::make_unique<Driver>();
  if (Status s = driver->Open(); !s.ok()) return s;
  CUdevice dev = 0;
  if (Status s = driver->Check(driver->DeviceGet(&dev, device), "cuDeviceGet(" + Str(device) + ")");
      !s.ok())
    return s;
  int major = 0, minor = 0, sms = 0;
  driver->DeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev);
  driver->DeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev);
  driver->DeviceGetAttribute(&sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, dev);
  // sm_XY and sm_XYa run on exactly X.Y; a family target sm_XYf on X.Y and later minors of X.
  std::string target;
  const std::string exact = "sm_" + Str(major) + Str(minor);
  for (const auto& [t, file] : op_.entries.front().cubin_files) {
    if (t == exact || t == exact + "a") target = t;
    if (target.empty() && t.size() > 4 && t.back() == 'f' && t.compare(0, 3, "sm_") == 0) {
      const int v = std::atoi(t.substr(3, t.size() - 4).c_str());
      if (v / 10 == major && v % 10 <= minor) target = t;
    }
  }
  if (target.empty()) {
    std::string have;
    for (const auto& [t, file] : op_.entries.front().cubin_files)
      have += (have.empty() ? "" : ", ") + t;
    return Status::Error("no exported target runs on device " + Str(device) + " (compute " +
                         Str(major) + "." + Str(minor) + "); exported: " + have);
  }
  CUcontext ctx = nullptr;
  if (Status s = driver->Check(driver->PrimaryCtxRetain(&ctx, dev), "cuDevicePrimaryCtxRetain");
      !s.ok())
    return s;
  driver_ = std::move(driver);
  device_ = device;
  context_ = ctx;
  if (Status s = driver_->Check(driver_->CtxSetCurrent(ctx), "cuCtxSetCurrent"); !s.ok()) return s;
  if (Status s = driver_->Check(driver_->CtxGetId(ctx, &context_id_), "cuCtxGetId"); !s.ok())
    return s;
  target_ = target;
  for (const EntrySpec& e : op_.entries) {
    auto file = e.cubin_files.find(target);
    if (file == e.cubin_files.end())
      return Status::Error("entry '" + e.name + "' has no cubin for " + target);
    std::ifstream in(export_dir_ + "/" + file->second, std::ios::binary);
    if (!in) return Status::Error("cannot read " + export_dir_ + "/" + file->second);
    const std::string image((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    auto loaded = std::make_unique<LoadedEntry>();
    const std::string what = "entry '" + e.name + "': ";
    if (Status s = driver_->Check(driver_->ModuleLoadData(&loaded->module, image.data()),
                                  what + "cuModuleLoadData(" + file->second + ")");
        !s.ok())
      return s;
    loaded_.push_back(std::move(loaded));
    LoadedEntry& l = *loaded_.back();
    if (Status s = driver_->Check(
            driver_->ModuleGetFunction(&l.function, l.module, e.kernel_symbol.c_str()),
            what + "cuModuleGetFunction(" + e.kernel_symbol + ")");
        !s.ok())
      return s;
    if (Status s = driver_->Check(
            driver_->FuncSetAttribute(l.function, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                      static_cast<int>(e.dynamic_shared_bytes)),
            what + "cuFuncSetAttribute(MAX_DYNAMIC_SHARED_SIZE_BYTES)");
        !s.ok())
      return s;
    if (e.persistent) {
      int per_sm = 0;
      if (Status s = driver_->Check(
              driver_->OccupancyMaxActiveBlocks(&per_sm, l.function, e.threads_per_cta,
                                                static_cast<size_t>(e.dynamic_shared_bytes)),
              what + "cuOccupancyMaxActiveBlocksPerMultiprocessor");
          !s.ok())
        return s;
      if (per_sm < 1) return Status::Error(what + "no CTA of this kernel fits an SM");
      l.resident_ctas = e.max_ctas > 0 ? e.max_ctas : int64_t{sms} * per_sm;
    }
  }
  // Descriptor and parameter storage is reserved here so that Bind and Run never allocate.
  size_t args = 0, maps = 0;
  for (const EntrySpec& e : op_.entries) {
    args = std::max(args, e.args.size());
    for (const ArgSpec& a : e.args) maps += a.kind == ArgKind::kTensorMap ? 1 : 0;
  }
  for (size_t i = 0; i < maps; ++i) map_cache_.push_back(std::make_unique<MapCacheEntry>());
  pointer_params_.reserve(args);
  scalar_params_.reserve(args);
  map_params_.reserve(args);
  params_.reserve(args);
  return {};
}

Status Launcher::Bind(const Shape& live, const std::map<std::string, TensorView>& tensors,
                      CUdeviceptr workspace, uint64_t workspace_bytes, CUstream stream) {
  if (!driver_) return Status::Error("Bind before Prepare");
  bound_entry_ = -1;  // a refused Bind leaves nothing Run could launch
  if (Status s = CheckBinding(op_, plan_, live, tensors, workspace, workspace_bytes); !s.ok())
    return s;
  if (Status s = driver_->Check(driver_->CtxSetCurrent(context_), "cuCtxSetCurrent"); !s.ok())
    return s;
  int entry = -1;
  Dispatch(op_, live, &entry);
  const EntrySpec& e = op_.entries[entry];
  // Each tensor must lie inside one live allocation of this context.
  for (const TensorSpec& t : op_.tensors) {
    const TensorView& v = tensors.at(t.name);
    int64_t bytes = t.element_bytes;
    for (int64_t d : v.shape) bytes *= d;
    CUdeviceptr base = 0;
    size_t size = 0;
    if (driver_->MemGetAddressRange(&base, &size, v.data) != CUDA_SUCCESS)
      return Status::Error("tensor '" + t.name + "' is not device memory of this context");
    if (v.data + static_cast<uint64_t>(bytes) > base + size)
      return Status::Error("tensor '" + t.name + "' needs " + Str(bytes) +
                           " bytes from its address; its allocation holds " +
                           Str(static_cast<int64_t>(base + size - v.data)));
  }
  std::vector<uint64_t> offsets;
  uint64_t ws_total = 0;
  WorkspaceLayout(e, live, &offsets, &ws_total);
  pointer_params_.clear();
  scalar_params_.clear();
  map_params_.clear();
  params_.clear();
  size_t workspace_arg = 0, map_slot = 0;
  std::vector<int64_t> ws_extents;
  for (size_t i = 0; i < e.args.size(); ++i) {
    const ArgSpec& a = e.args[i];
    if (a.kind == ArgKind::kTensor) {
      pointer_params_.push_back(tensors.at(a.name).data);
      params_.push_back(&pointer_params_.back());
    } else if (a.kind == ArgKind::kScalar) {
      int64_t v = 0;
      if (Status s = Value(live, a.name, "launch", &v); !s.ok()) return s;
      scalar_params_.push_back(static_cast<int32_t>(v));
      params_.push_back(&scalar_params_.back());
    } else if (a.kind == ArgKind::kWorkspace) {
      pointer_params_.push_back(workspace + offsets[workspace_arg++]);
      params_.push_back(&pointer_params_.back());
      ws_extents.push_back(live.at(a.rows));
      ws_extents.push_back(live.at(a.cols));
    } else {
      const TensorView& v = tensors.at(a.name);
      int64_t rows = 0, cols = 0;
      const std::string what = "tensor map of '" + a.name + "'";
      if (Status s = Value(live, a.rows, what, &rows); !s.ok()) return s;
      if (Status s = Value(live, a.cols, what, &cols); !s.ok()) return s;
      unsigned long long buffer_id = 0;
      if (Status s = driver_->Check(
              driver_->PointerGetAttribute(&buffer_id, CU_POINTER_ATTRIBUTE_BUFFER_ID, v.data),
              what + ": cuPointerGetAttribute(BUFFER_ID)");
          !s.ok())
        return s;
      MapCacheEntry& c = *map_cache_[map_slot++];
      const bool same_address = c.entry == entry && c.arg == i && c.address == v.data;
      const bool reuse =
          same_address && (reuse_ == DescriptorReuse::kAddressOnly ||
                           (c.buffer_id == buffer_id && c.rows == rows && c.cols == cols));
      if (!reuse) {
        TensorMapGeometry g;
        if (Status st = TensorMapGeometryOf(a, live, &g); !st.ok()) {
          c.entry = -1;
          return st;
        }
        const cuuint32_t element_strides[2] = {1, 1};
        if (Status st = driver_->Check(
                driver_->TensorMapEncodeTiled(
                    &c.map, g.type, 2, reinterpret_cast<void*>(v.data), g.dims, g.pitch, g.box,
                    element_strides, CU_TENSOR_MAP_INTERLEAVE_NONE, g.swizzle,
                    CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE),
                what + " (" + Str(rows) + " x " + Str(cols) + "): cuTensorMapEncodeTiled");
            !st.ok()) {
          c.entry = -1;
          return st;
        }
        c.entry = entry;
        c.arg = i;
        c.address = v.data;
        c.buffer_id = buffer_id;
        c.rows = rows;
        c.cols = cols;
        ++descriptor_encodings_;
      }
      map_params_.push_back(c.map);
      params_.push_back(&map_params_.back());
    }
  }
  // The kernel leaves its workspace zeroed for the same extents; a new buffer or new extents
  // start from zeros, cleared by the next Run on the stream before its launch.
  workspace_clear_bytes_ = 0;
  if (ws_total > 0) {
    unsigned long long id = 0;
    if (Status s = driver_->Check(
            driver_->PointerGetAttribute(&id, CU_POINTER_ATTRIBUTE_BUFFER_ID, workspace),
            "workspace: cuPointerGetAttribute(BUFFER_ID)");
        !s.ok())
      return s;
    if (workspace != workspace_ || id != workspace_buffer_id_ || ws_extents != workspace_extents_)
      workspace_clear_bytes_ = (ws_total + 3) / 4 * 4;
    workspace_ = workspace;
    workspace_buffer_id_ = id;
    workspace_extents_ = ws_extents;
  }
  if (Status st = LaunchGrid(e, live, loaded_[entry]->resident_ctas, grid_); !st.ok()) return st;
  stream_ = stream;
  bound_entry_ = entry;
  return {};
}

Status Launcher::Run() {
  if (!driver_) return Status::Error("Run before Prepare");
  if (bound_entry_ < 0) return Status::Error("Run before a successful Bind");
  unsigned long long id = 0;
  if (const CUresult r = driver_->CtxGetId(context_, &id); r != CUDA_SUCCESS || id != context_id_)
    return Status::Error("device " + Str(device_) +
                         "'s context was reset since Prepare: its modules are gone; make a new "
                         "launcher and Prepare it");
  // Messages are built only on failure: a launch allocates nothing, host memory included.
  if (workspace_clear_bytes_ > 0) {
    const CUresult r = driver_->MemsetD32Async(workspace_, 0, workspace_clear_bytes_ / 4, stream_);
    if (r != CUDA_SUCCESS) return driver_->Check(r, "cuMemsetD32Async(workspace)");
    workspace_clear_bytes_ = 0;
  }
  const EntrySpec& e = op_.entries[bound_entry_];
  const CUresult r = driver_->LaunchKernel(loaded_[bound_entry_]->function, grid_[0], grid_[1],
                                           grid_[2], static_cast<unsigned>(e.threads_per_cta), 1, 1,
                                           static_cast<unsigned>(e.dynamic_shared_bytes), stream_,
                                           params_.data(), nullptr);
  if (r != CUDA_SUCCESS) return driver_->Check(r, "cuLaunchKernel(" + e.kernel_symbol + ")");
  return {};
}

}  // namespace cake_launcher
