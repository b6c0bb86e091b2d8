// The exported operation without a GPU:
//   export_consumer_checks --describe    the operation as the launcher knows it, one fact a line
//   export_consumer_checks --refusals    a valid binding passes CheckBinding, and each kind of
//                                        bad binding (and Bind/Run before Prepare) is refused
//                                        with a message naming what it needed; exit 1 otherwise
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <functional>
#include <string>

#include "cake_launcher.h"

namespace cl = cake_launcher;

namespace {

void Describe(const cl::OperationSpec& op) {
  std::printf("operation %s\ncontract %s\n", op.operation.c_str(), op.contract_id.c_str());
  for (const std::string& s : op.scalars) std::printf("scalar %s\n", s.c_str());
  for (const cl::TensorSpec& t : op.tensors) {
    std::string dims;
    for (const cl::DimSpec& d : t.dims)
      dims += (dims.empty() ? "" : ",") + (d.symbol.empty() ? std::to_string(d.size) : d.symbol);
    std::printf("tensor %s %s [%s] align %lld%s\n", t.name.c_str(), t.dtype.c_str(), dims.c_str(),
                static_cast<long long>(t.alignment_bytes), t.written ? " written" : "");
  }
  for (const cl::EntrySpec& e : op.entries) {
    std::printf("entry %s %s threads %d smem %lld\n", e.name.c_str(), e.kernel_symbol.c_str(),
                e.threads_per_cta, static_cast<long long>(e.dynamic_shared_bytes));
    for (const auto& [target, file] : e.cubin_files)
      std::printf("cubin %s %s %s\n", e.name.c_str(), target.c_str(), file.c_str());
  }
}

// A shape every entry's facts admit: each scalar a multiple of its largest divisibility fact,
// at least its largest minimum and at least 64.
cl::Shape AdmittedShape(const cl::OperationSpec& op) {
  cl::Shape shape;
  for (const std::string& s : op.scalars) {
    int64_t multiple = 1, min = 64;
    for (const cl::EntrySpec& e : op.entries)
      for (const cl::ScalarFact& f : e.guard)
        if (f.scalar == s) {
          if (f.multiple_of > multiple) multiple = f.multiple_of;
          if (f.min > min) min = f.min;
        }
    shape[s] = (min + multiple - 1) / multiple * multiple;
  }
  return shape;
}

std::map<std::string, cl::TensorView> Views(const cl::OperationSpec& op, const cl::Shape& shape) {
  std::map<std::string, cl::TensorView> views;
  CUdeviceptr address = CUdeviceptr{1} << 32;  // never dereferenced: the checks are host-side
  for (const cl::TensorSpec& t : op.tensors) {
    cl::TensorView v;
    v.data = address;
    address += CUdeviceptr{1} << 30;
    v.dtype = t.dtype;
    for (const cl::DimSpec& d : t.dims)
      v.shape.push_back(d.symbol.empty() ? d.size : shape.at(d.symbol));
    views[t.name] = v;
  }
  return views;
}

int Refusals(const cl::OperationSpec& op) {
  const cl::Shape shape = AdmittedShape(op);
  cl::Plan plan;
  if (cl::Status s = cl::MakePlan(op, shape, &plan); !s.ok()) {
    std::printf("FAIL plan: %s\n", s.message().c_str());
    return 1;
  }
  const CUdeviceptr workspace = plan.workspace_bytes > 0 ? CUdeviceptr{1} << 40 : 0;
  int failures = 0;
  auto expect = [&](const char* what, const cl::Status& s, const char* needle) {
    const bool refused = !s.ok() && s.message().find(needle) != std::string::npos;
    std::printf("%s %s: %s\n", refused ? "refused" : "FAIL", what,
                s.ok() ? "accepted" : s.message().c_str());
    if (!refused) ++failures;
  };
  const auto good = Views(op, shape);
  const cl::Status valid = cl::CheckBinding(op, plan, shape, good, workspace, plan.workspace_bytes);
  std::printf("%s valid binding%s%s\n", valid.ok() ? "accepted" : "FAIL", valid.ok() ? "" : ": ",
              valid.message().c_str());
  if (!valid.ok()) ++failures;
  const cl::TensorSpec& first = op.tensors.front();
  {
    auto v = good;
    v[first.name].dtype = first.dtype == "f32" ? "bf16" : "f32";
    expect("wrong dtype", cl::CheckBinding(op, plan, shape, v, workspace, plan.workspace_bytes),
           "the kernel takes");
  }
  for (const cl::TensorSpec& t : op.tensors) {
    if (t.dims.size() < 2) continue;
    auto v = good;
    v[t.name].strides.assign(t.dims.size(), 1);  // a transposed or strided view
    expect("non-contiguous strides",
           cl::CheckBinding(op, plan, shape, v, workspace, plan.workspace_bytes),
           "row-major contiguous");
    break;
  }
  for (const cl::TensorSpec& t : op.tensors) {
    if (t.alignment_bytes < 2) continue;
    auto v = good;
    v[t.name].data += static_cast<CUdeviceptr>(t.alignment_bytes / 2);
    expect("misaligned address",
           cl::CheckBinding(op, plan, shape, v, workspace, plan.workspace_bytes),
           "is not aligned to");
    break;
  }
  {
    auto v = good;
    v[first.name].shape.back() += 1;
    expect("wrong extent", cl::CheckBinding(op, plan, shape, v, workspace, plan.workspace_bytes),
           "must be [");
  }
  {
    auto v = good;
    v.erase(first.name);
    expect("missing tensor", cl::CheckBinding(op, plan, shape, v, workspace, plan.workspace_bytes),
           "is not bound");
  }
  {
    cl::Shape bigger = shape;
    bigger.begin()->second *= 2;
    expect("shape over capacity",
           cl::CheckBinding(op, plan, bigger, Views(op, bigger), workspace, plan.workspace_bytes),
           "exceeds the plan's capacity");
  }
  {
    cl::Shape missing = shape;
    missing.erase(missing.begin());
    cl::Plan p;
    expect("shape missing a scalar", cl::MakePlan(op, missing, &p), "gives no value for scalar");
  }
  for (const cl::ScalarFact& f : op.entries.back().guard) {
    if (f.multiple_of < 2) continue;
    cl::Shape off = shape;
    off[f.scalar] += 1;
    cl::Plan p;
    expect("shape no guard admits", cl::MakePlan(op, off, &p), "the fallback");
    break;
  }
  // The smallest shape each entry with a workspace is the first to admit, bound with 4 bytes
  // too few.
  bool any_workspace = false;
  for (size_t i = 0; i < op.entries.size(); ++i) {
    const cl::EntrySpec& e = op.entries[i];
    if (std::none_of(e.args.begin(), e.args.end(),
                     [](const cl::ArgSpec& a) { return a.kind == cl::ArgKind::kWorkspace; }))
      continue;
    cl::Shape small;
    for (const cl::ScalarFact& f : e.guard) {
      const int64_t m = f.multiple_of > 1 ? f.multiple_of : 1;
      small[f.scalar] = (std::max<int64_t>(f.min, 1) + m - 1) / m * m;
    }
    int entry = -1;
    if (!cl::Dispatch(op, small, &entry).ok() || entry != static_cast<int>(i)) continue;
    any_workspace = true;
    expect(("workspace too small for entry '" + e.name + "'").c_str(),
           cl::CheckBinding(op, plan, small, Views(op, small), workspace, 4), "needs");
  }
  if (!any_workspace)
    std::printf("skipped workspace too small: this export's kernels take no workspace\n");
  cl::Launcher launcher(op, plan, ".");
  expect("Bind before Prepare",
         launcher.Bind(shape, good, workspace, plan.workspace_bytes, nullptr), "before Prepare");
  expect("Run before Prepare", launcher.Run(), "before Prepare");
  std::printf("%d check(s) failed\n", failures);
  return failures == 0 ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  const cl::OperationSpec& op = cl::ExportedOperation();
  if (argc == 2 && std::strcmp(argv[1], "--describe") == 0) {
    Describe(op);
    return 0;
  }
  if (argc == 2 && std::strcmp(argv[1], "--refusals") == 0) return Refusals(op);
  std::fprintf(stderr, "usage: %s --describe | --refusals\n", argv[0]);
  return 2;
}
