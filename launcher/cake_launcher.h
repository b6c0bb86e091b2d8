// The prepared launcher of an exported Consumer CAKE result: what a serving stack calls to run a
// promoted schedule (or a portfolio of them) outside the daemon.
//
//   Plan(spec, shape)          pure: the route (dispatch entry) and the workspace bytes for a
//                              capacity shape; nothing touches a device.
//   launcher.Prepare(device)   loads the entries' modules through the Driver API and fixes the
//                              launch constants; every allocation of the launcher happens here.
//   launcher.Bind(...)         checks caller-owned tensors (dtype, shape, strides, alignment, the
//                              allocation holding them) and the workspace, picks the entry the
//                              live shape dispatches to, and encodes the launch parameters into
//                              storage the launcher owns. A TMA descriptor is re-encoded whenever
//                              anything it depends on changed: address, extents, row pitch, or
//                              the allocation behind the address (its driver buffer id), never
//                              pointer identity alone.
//   launcher.Run()             one kernel launch (plus a workspace clear after a re-bind that
//                              needs one) on the bound stream: no allocation, no host
//                              synchronization, no compilation, so it can be captured in a CUDA
//                              graph.
//
// Dispatch is the daemon's rule: the first entry whose guard admits the shape wins, the last
// entry (the fallback, guarded by the kernel's declared facts alone) otherwise, and a shape no
// entry admits is refused naming the fallback's failed fact.
//
// Depends on <cuda.h> and the C++17 standard library; the driver is opened with dlopen at
// Prepare, so planning and binding checks run on a machine without one. Not thread-safe: one
// launcher per stream of work.
#pragma once

#include <cuda.h>

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace cake_launcher {

// What a call returns: ok, or a message naming the argument at fault and what it needed.
class Status {
 public:
  Status() = default;
  static Status Error(std::string message) { return Status(std::move(message)); }
  bool ok() const { return !error_; }
  const std::string& message() const { return message_; }

 private:
  explicit Status(std::string message) : error_(true), message_(std::move(message)) {}
  bool error_ = false;
  std::string message_;
};

// ---- The exported operation, as the daemon wrote it (generated/cake_export_spec.cc). ----

// One fact a shape must satisfy: min <= value <= max (max 0 = unbounded above), value %
// multiple_of == 0 when multiple_of > 1.
struct ScalarFact {
  std::string scalar;
  int64_t min = 0;
  int64_t max = 0;
  int64_t multiple_of = 0;
};

// A tensor dimension: the named scalar's value, or a fixed size when `symbol` is empty.
struct DimSpec {
  std::string symbol;
  int64_t size = 0;
};

struct TensorSpec {
  std::string name;
  std::string dtype;  // "bf16", "f16", "f32", "s32", "e4m3", ...
  int element_bytes = 0;
  std::vector<DimSpec> dims;  // row-major, the last contiguous
  int64_t alignment_bytes = 0;
  bool written = false;  // the kernel writes it
};

enum class ArgKind { kTensor, kScalar, kTensorMap, kWorkspace };

// One kernel parameter, in order (the lowering receipt's LaunchSpec.Arg).
struct ArgSpec {
  ArgKind kind = ArgKind::kTensor;
  std::string name;
  // kTensorMap and kWorkspace: the scalars holding the extents (cols contiguous) and the box.
  std::string rows, cols;
  int box_rows = 0, box_cols = 0;
  int element_bytes = 0, swizzle_bytes = 0;           // kTensorMap
  int64_t bytes_per_element = 0, bytes_per_tile = 0;  // kWorkspace
};

// ceil(value(extent) / divisor), or count (0 = 1) when extent is empty.
struct GridDimSpec {
  std::string extent;
  int divisor = 1;
  int count = 0;
};

struct EntrySpec {
  std::string name;
  std::string kernel_symbol;
  std::vector<ScalarFact> guard;  // every fact it was verified under
  std::vector<ArgSpec> args;
  GridDimSpec grid[3];
  int threads_per_cta = 0;
  int64_t dynamic_shared_bytes = 0;
  bool persistent = false;  // grid counts tiles; min(tiles, resident CTAs) CTAs walk them
  int max_ctas = 0;
  std::map<std::string, std::string> cubin_files;  // target -> path relative to the export
};

struct OperationSpec {
  std::string operation;
  std::string contract_id;
  std::vector<std::string> scalars;  // every scalar a shape names
  std::vector<TensorSpec> tensors;
  std::vector<EntrySpec> entries;  // dispatch order; the last is the fallback
};

// The operation exported with this folder (defined by generated/cake_export_spec.cc).
const OperationSpec& ExportedOperation();

// ---- Planning (pure). ----

using Shape = std::map<std::string, int64_t>;

struct Plan {
  Shape capacity;                // the shape planned for; live shapes may be smaller
  int entry = -1;                // the entry the capacity shape dispatches to
  uint64_t workspace_bytes = 0;  // enough for every entry at every shape within capacity
};

// The first entry admitting `shape`; an error naming the missing scalar, or the fallback's fact
// `shape` fails, when none does.
Status Dispatch(const OperationSpec& op, const Shape& shape, int* entry);
// The CTAs of entry `e`'s launch at `shape` (the daemon's worker computes them the same way): each
// dimension ceil(value(extent) / divisor) or its count; a persistent launch starts
// min(tiles, resident_ctas) CTAs along x.
Status LaunchGrid(const EntrySpec& e, const Shape& shape, int64_t resident_ctas, unsigned grid[3]);
// What cuTensorMapEncodeTiled is given for a kTensorMap argument at `shape` (2-D, innermost
// first; the daemon's worker derives it the same way). An error for a missing scalar, an empty
// extent or box, or an element or swizzle size the lowering never states.
struct TensorMapGeometry {
  CUtensorMapDataType type = CU_TENSOR_MAP_DATA_TYPE_UINT8;
  CUtensorMapSwizzle swizzle = CU_TENSOR_MAP_SWIZZLE_NONE;
  cuuint64_t dims[2] = {0, 0};
  cuuint64_t pitch[1] = {0};
  cuuint32_t box[2] = {0, 0};
};
Status TensorMapGeometryOf(const ArgSpec& a, const Shape& shape, TensorMapGeometry* g);
// Bytes of one WORKSPACE argument at `shape` (the daemon's worker sizes it the same way).
Status WorkspaceArgBytes(const ArgSpec& a, const Shape& shape, uint64_t* bytes);
Status MakePlan(const OperationSpec& op, const Shape& shape, Plan* plan);

// ---- Binding. ----

// A caller-owned tensor: a device address, its dtype, extents and strides in elements.
struct TensorView {
  CUdeviceptr data = 0;
  std::string dtype;
  std::vector<int64_t> shape;
  std::vector<int64_t> strides;  // empty = row-major contiguous
};

// The checks Bind makes that need no device: every tensor of the operation present with the
// declared dtype, extents equal to the live shape's, row-major contiguous strides, its alignment;
// the live shape within the plan's capacity and admitted by an entry; the workspace large enough.
Status CheckBinding(const OperationSpec& op, const Plan& plan, const Shape& live,
                    const std::map<std::string, TensorView>& tensors, CUdeviceptr workspace,
                    uint64_t workspace_bytes);

// How bound TMA descriptors are reused. kFull re-encodes whenever the address, extents, pitch
// or the allocation behind the address changed. kAddressOnly reuses a descriptor for the same
// address: the stale-descriptor defect, kept so a test can show what kFull prevents.
enum class DescriptorReuse { kFull, kAddressOnly };

class Launcher {
 public:
  Launcher(const OperationSpec& op, Plan plan, std::string export_dir,
           DescriptorReuse reuse = DescriptorReuse::kFull);
  ~Launcher();
  Launcher(const Launcher&) = delete;
  Launcher& operator=(const Launcher&) = delete;

  // Loads libcuda (or $CAKE_LIBCUDA), retains `device`'s primary context, reads its compute
  // capability, picks the exported target that runs there and loads every entry's cubin of it.
  Status Prepare(int device);
  // Everything of one launch: the live shape (within the plan's capacity), the tensors by
  // name, the workspace (at least the plan's workspace_bytes when it needs one) and the stream.
  // Makes the device's primary context current on the calling thread (Run launches into it).
  Status Bind(const Shape& live, const std::map<std::string, TensorView>& tensors,
              CUdeviceptr workspace, uint64_t workspace_bytes, CUstream stream);
  // Launches what Bind encoded. An error, never a launch, before Prepare and Bind or after the
  // device's context was reset since Prepare.
  Status Run();

  const Plan& plan() const { return plan_; }
  const std::string& target() const { return target_; }  // the loaded target, after Prepare
  int bound_entry() const { return bound_entry_; }
  // TMA descriptors encoded so far (each Bind that changed one adds one).
  int64_t descriptor_encodings() const { return descriptor_encodings_; }

 private:
  struct Driver;
  struct LoadedEntry;
  struct MapCacheEntry;
  const OperationSpec& op_;
  Plan plan_;
  std::string export_dir_;
  DescriptorReuse reuse_;
  std::unique_ptr<Driver> driver_;
  int device_ = -1;
  CUcontext context_ = nullptr;
  unsigned long long context_id_ = 0;
  std::string target_;
  std::vector<std::unique_ptr<LoadedEntry>> loaded_;
  std::vector<std::unique_ptr<MapCacheEntry>> map_cache_;
  // The bound launch: parameter storage and the pointers cuLaunchKernel reads.
  int bound_entry_ = -1;
  CUstream stream_ = nullptr;
  unsigned grid_[3] = {1, 1, 1};
  std::vector<CUdeviceptr> pointer_params_;
  std::vector<int32_t> scalar_params_;
  std::vector<CUtensorMap> map_params_;
  std::vector<void*> params_;
  CUdeviceptr workspace_ = 0;
  uint64_t workspace_clear_bytes_ = 0;  // > 0: Run clears this many bytes first
  unsigned long long workspace_buffer_id_ = 0;
  std::vector<int64_t> workspace_extents_;
  int64_t descriptor_encodings_ = 0;
};

}  // namespace cake_launcher
