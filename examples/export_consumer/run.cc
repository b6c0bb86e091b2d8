// An exported operation run on device 0 the way a serving stack would: plan
// for a capacity, prepare once, bind caller-owned buffers, run.
//   export_consumer_run EXPORT_DIR --capacity M=512,N=256,K=2048 --live M=384,N=200,K=1024
//                       [--time M=4096,N=4096,K=4096]
//                       [--descriptor M=512,N=256,K=1024 M=256,N=256,K=2048] [--reset]
// The oracle is the operation's own (workloads/*/export/consumer_oracle.cc, by operation name).
// Checks (a line each, "PASS"/"FAIL"; exit 1 on any FAIL):
//   eager       capacity and live shapes against the float64 oracle (fresh random inputs,
//               outputs poisoned first)
//   graph       a CUDA graph captured from Run() replays bit-identical to eager, for the capacity
//               shape and again after a re-bind to the live shape
//   descriptor  (TMA exports) free a TMA-mapped tensor, allocate the same bytes again (the same
//               address, another shape), bind, run: correct with re-encoding; with the
//               address-only reuse the stale descriptor's output is shown failing (a "DEFECT
//               SHOWN" line, expected)
//   reset       after the primary context is reset, Run refuses instead of launching
// --time prints the median of 30 single launches at that shape, each as the daemon's protocol
// times its eager/warm configuration: the same launch ran just before, then its outputs were
// re-poisoned (so the timed launch finds the caches as the ledger's timing did).
#include <cuda.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <sstream>
#include <string>
#include <vector>

#include "cake_launcher.h"
#include "oracle.h"

namespace cl = cake_launcher;

namespace {

int failures = 0;

void Report(const std::string& check, bool ok, const std::string& detail) {
  std::printf("%s %s: %s\n", ok ? "PASS" : "FAIL", check.c_str(), detail.c_str());
  std::fflush(stdout);
  if (!ok) ++failures;
}

#define CU(call)                                                                \
  do {                                                                          \
    CUresult r_ = (call);                                                       \
    if (r_ != CUDA_SUCCESS) {                                                   \
      const char* name_ = "?";                                                  \
      cuGetErrorName(r_, &name_);                                               \
      std::fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #call, name_); \
      std::exit(1);                                                             \
    }                                                                           \
  } while (0)

cl::Shape ParseShape(const std::string& text) {
  cl::Shape s;
  std::stringstream in(text);
  std::string item;
  while (std::getline(in, item, ',')) {
    const size_t eq = item.find('=');
    s[item.substr(0, eq)] = std::stoll(item.substr(eq + 1));
  }
  return s;
}

std::string Text(const cl::Shape& s) {
  std::string out;
  for (const auto& [k, v] : s) out += (out.empty() ? "" : ",") + k + "=" + std::to_string(v);
  return out;
}

// The tensors of one shape: device buffers and their host copies.
struct Tensors {
  std::map<std::string, CUdeviceptr> device;
  std::map<std::string, std::vector<unsigned char>> host;
  std::map<std::string, cl::TensorView> views;
};

size_t BytesOf(const cl::TensorSpec& t, const cl::Shape& s) {
  size_t n = static_cast<size_t>(t.element_bytes);
  for (const cl::DimSpec& d : t.dims)
    n *= static_cast<size_t>(d.symbol.empty() ? d.size : s.at(d.symbol));
  return n;
}

Tensors Make(const cl::OperationSpec& op, const cl::Shape& s, std::mt19937_64& rng) {
  Tensors t;
  for (const cl::TensorSpec& spec : op.tensors) {
    const size_t bytes = BytesOf(spec, s);
    CUdeviceptr p = 0;
    CU(cuMemAlloc(&p, bytes));
    std::vector<unsigned char> host(bytes, 0xFF);  // outputs poisoned: NaN / index -1
    if (!spec.written) {
      std::vector<uint16_t> v = consumer::RandomBf16(bytes / 2, rng);
      std::memcpy(host.data(), v.data(), bytes);
    }
    CU(cuMemcpyHtoD(p, host.data(), bytes));
    t.device[spec.name] = p;
    t.host[spec.name] = std::move(host);
    cl::TensorView view;
    view.data = p;
    view.dtype = spec.dtype;
    for (const cl::DimSpec& d : spec.dims)
      view.shape.push_back(d.symbol.empty() ? d.size : s.at(d.symbol));
    t.views[spec.name] = view;
  }
  return t;
}

void Free(Tensors& t) {
  for (auto& [name, p] : t.device) cuMemFree(p);
  t.device.clear();
}

void Poison(const cl::OperationSpec& op, Tensors& t) {
  for (const cl::TensorSpec& spec : op.tensors)
    if (spec.written) CU(cuMemsetD8(t.device[spec.name], 0xFF, t.host[spec.name].size()));
}

// On `stream`, ordered after the launch before it.
void PoisonAsync(const cl::OperationSpec& op, Tensors& t, CUstream stream) {
  for (const cl::TensorSpec& spec : op.tensors)
    if (spec.written)
      CU(cuMemsetD8Async(t.device[spec.name], 0xFF, t.host[spec.name].size(), stream));
}

std::map<std::string, std::vector<unsigned char>> Outputs(const cl::OperationSpec& op, Tensors& t) {
  std::map<std::string, std::vector<unsigned char>> out;
  for (const cl::TensorSpec& spec : op.tensors)
    if (spec.written) {
      out[spec.name].resize(t.host[spec.name].size());
      CU(cuMemcpyDtoH(out[spec.name].data(), t.device[spec.name], out[spec.name].size()));
    }
  return out;
}

consumer::CheckResult Check(const cl::OperationSpec& op, const cl::Shape& s, Tensors& t) {
  const consumer::Oracle* oracle = consumer::FindOracle(op.operation);
  if (oracle == nullptr) {
    consumer::CheckResult r;
    r.first_failure = "no oracle for " + op.operation + " (workloads/*/export/consumer_oracle.cc)";
    return r;
  }
  consumer::Tensors inputs;
  for (const cl::TensorSpec& spec : op.tensors)
    if (!spec.written) inputs[spec.name] = t.host[spec.name];
  return (*oracle)(s, inputs, Outputs(op, t));
}

std::string Detail(const consumer::CheckResult& r) {
  char buf[256];
  std::snprintf(buf, sizeof buf, "%lld checked, %lld out of bound, worst %.3f of bound",
                static_cast<long long>(r.checked), static_cast<long long>(r.failed), r.worst);
  return std::string(buf) + (r.failed ? "; first: " + r.first_failure : "");
}

struct Workspace {
  CUdeviceptr ptr = 0;
  uint64_t bytes = 0;
};

Workspace MakeWorkspace(uint64_t bytes) {
  Workspace w;
  w.bytes = bytes;
  if (bytes > 0) CU(cuMemAlloc(&w.ptr, bytes));
  return w;
}

cl::Status BindAndRun(cl::Launcher& l, const cl::Shape& s, Tensors& t, const Workspace& w,
                      CUstream stream) {
  cl::Status st = l.Bind(s, t.views, w.ptr, w.bytes, stream);
  if (st.ok()) st = l.Run();
  return st;
}

void Eager(const cl::OperationSpec& op, cl::Launcher& l, const cl::Shape& s, Tensors& t,
           const Workspace& w, CUstream stream, const std::string& name) {
  Poison(op, t);
  const cl::Status st = BindAndRun(l, s, t, w, stream);
  if (!st.ok()) return Report(name, false, st.message());
  CU(cuStreamSynchronize(stream));
  const consumer::CheckResult r = Check(op, s, t);
  Report(name, r.passed,
         Text(s) + " entry '" + op.entries[l.bound_entry()].name + "': " + Detail(r));
}

void Graph(const cl::OperationSpec& op, cl::Launcher& l, const cl::Shape& s, Tensors& t,
           const Workspace& w, CUstream stream, const std::string& name) {
  Poison(op, t);
  cl::Status st = BindAndRun(l, s, t, w, stream);
  if (!st.ok()) return Report(name, false, st.message());
  CU(cuStreamSynchronize(stream));
  const auto eager = Outputs(op, t);
  Poison(op, t);
  CU(cuCtxSynchronize());
  // Global capture mode: an allocation or a synchronizing call inside Run would end it in error.
  CU(cuStreamBeginCapture(stream, CU_STREAM_CAPTURE_MODE_GLOBAL));
  st = l.Run();
  CUgraph graph = nullptr;
  const CUresult end = cuStreamEndCapture(stream, &graph);
  if (!st.ok() || end != CUDA_SUCCESS)
    return Report(name, false, st.ok() ? "capture failed" : st.message());
  CUgraphExec exec = nullptr;
  CU(cuGraphInstantiate(&exec, graph, 0));
  CU(cuGraphLaunch(exec, stream));
  CU(cuGraphLaunch(exec, stream));  // a replay of a replay: the same output again
  CU(cuStreamSynchronize(stream));
  const auto replayed = Outputs(op, t);
  CU(cuGraphExecDestroy(exec));
  CU(cuGraphDestroy(graph));
  Report(name, replayed == eager,
         Text(s) + (replayed == eager ? ": graph replay bit-identical to eager"
                                      : ": graph replay differs from eager"));
}

// The first TENSOR_MAP argument's tensor and extents, if the export has one.
const cl::ArgSpec* FirstTensorMap(const cl::OperationSpec& op, int entry) {
  for (const cl::ArgSpec& a : op.entries[entry].args)
    if (a.kind == cl::ArgKind::kTensorMap) return &a;
  return nullptr;
}

void DescriptorTest(const cl::OperationSpec& op, const std::string& dir, cl::DescriptorReuse reuse,
                    const cl::Shape& first, const cl::Shape& second, CUstream stream,
                    std::mt19937_64& rng) {
  const bool full = reuse == cl::DescriptorReuse::kFull;
  const std::string name = full ? "descriptor re-encoded" : "descriptor reused by address only";
  // Two shapes in which the first TMA-mapped tensor has the same bytes: given as --descriptor
  // FIRST SECOND (e.g. M=512,N=256,K=1024 and M=256,N=256,K=2048 for a TN GEMM's A).
  cl::Shape capacity = first;
  for (const auto& [k, v] : second) capacity[k] = std::max(capacity[k], v);
  cl::Plan plan;
  cl::Status st = cl::MakePlan(op, capacity, &plan);
  if (!st.ok()) return Report(name, false, st.message());
  cl::Launcher l(op, plan, dir, reuse);
  if (st = l.Prepare(0); !st.ok()) return Report(name, false, st.message());
  const cl::ArgSpec* map = FirstTensorMap(op, plan.entry);
  if (map == nullptr) return Report(name, false, "the export has no TMA argument");
  Workspace w = MakeWorkspace(plan.workspace_bytes);
  Tensors a = Make(op, first, rng);
  Eager(op, l, first, a, w, stream, name + " (first shape)");
  const CUdeviceptr old_address = a.device[map->name];
  const int64_t encodings = l.descriptor_encodings();
  Free(a);
  Tensors b = Make(op, second, rng);
  const bool same_address = b.device[map->name] == old_address;
  if (a.host.at(map->name).size() != b.host.at(map->name).size())
    return Report(name, false, "the two shapes give '" + map->name + "' different sizes");
  Poison(op, b);
  st = BindAndRun(l, second, b, w, stream);
  if (!st.ok()) return Report(name, false, st.message());
  CU(cuStreamSynchronize(stream));
  const consumer::CheckResult r = Check(op, second, b);
  const std::string what = std::string("'") + map->name + "' reallocated " +
                           (same_address ? "at the same address" : "at ANOTHER address") +
                           " with another shape; encodings " + std::to_string(encodings) + " -> " +
                           std::to_string(l.descriptor_encodings()) + "; " + Detail(r);
  if (full) {
    Report(name, r.passed && same_address, what);
  } else {
    // The defect mode must fail on this sequence; if it did not, the test shows nothing.
    std::printf("%s %s: %s\n", r.passed ? "FAIL (no defect shown)" : "DEFECT SHOWN", name.c_str(),
                what.c_str());
    if (r.passed || !same_address) ++failures;
  }
  Free(b);
  if (w.ptr) cuMemFree(w.ptr);
}

void Time(const cl::OperationSpec& op, const std::string& dir, const cl::Shape& s, CUstream stream,
          std::mt19937_64& rng) {
  cl::Plan plan;
  cl::Status st = cl::MakePlan(op, s, &plan);
  cl::Launcher l(op, plan, dir);
  if (st.ok()) st = l.Prepare(0);
  Workspace w = MakeWorkspace(plan.workspace_bytes);
  Tensors t = Make(op, s, rng);
  if (st.ok()) st = l.Bind(s, t.views, w.ptr, w.bytes, stream);
  if (!st.ok()) return Report("time", false, st.message());
  CUevent start, stop;
  CU(cuEventCreate(&start, 0));
  CU(cuEventCreate(&stop, 0));
  std::vector<float> ms;
  for (int i = 0; i < 33; ++i) {
    st = l.Run();  // warm launch
    PoisonAsync(op, t, stream);
    CU(cuEventRecord(start, stream));
    if (st.ok()) st = l.Run();
    CU(cuEventRecord(stop, stream));
    CU(cuEventSynchronize(stop));
    float v = 0;
    CU(cuEventElapsedTime(&v, start, stop));
    if (i >= 3) ms.push_back(v);  // the first launches load the module's code
  }
  if (!st.ok()) return Report("time", false, st.message());
  std::sort(ms.begin(), ms.end());
  std::printf("TIME %s entry '%s': median %.2f us (p10 %.2f, p90 %.2f) over %zu warm launches\n",
              Text(s).c_str(), op.entries[l.bound_entry()].name.c_str(), ms[ms.size() / 2] * 1000,
              ms[ms.size() / 10] * 1000, ms[ms.size() * 9 / 10] * 1000, ms.size());
  Free(t);
  if (w.ptr) cuMemFree(w.ptr);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2 || std::string(argv[1]).rfind("--", 0) == 0) {
    std::fprintf(stderr,
                 "usage: %s EXPORT_DIR --capacity K=V,... --live K=V,... [--time K=V,...] "
                 "[--descriptor FIRST SECOND] [--reset]\n",
                 argv[0]);
    return 2;
  }
  const std::string dir = argv[1];
  cl::Shape capacity, live, timed, descriptor_first, descriptor_second;
  bool descriptor = false, reset = false;
  for (int i = 2; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--capacity" && i + 1 < argc)
      capacity = ParseShape(argv[++i]);
    else if (a == "--live" && i + 1 < argc)
      live = ParseShape(argv[++i]);
    else if (a == "--time" && i + 1 < argc)
      timed = ParseShape(argv[++i]);
    else if (a == "--descriptor" && i + 2 < argc) {
      descriptor = true;
      descriptor_first = ParseShape(argv[++i]);
      descriptor_second = ParseShape(argv[++i]);
    } else if (a == "--reset")
      reset = true;
    else
      return std::fprintf(stderr, "unknown argument %s\n", a.c_str()), 2;
  }
  const cl::OperationSpec& op = cl::ExportedOperation();
  std::random_device seed_source;
  const uint64_t seed = (uint64_t{seed_source()} << 32) ^ seed_source();
  std::printf("operation %s, contract %s, seed %llu\n", op.operation.c_str(),
              op.contract_id.c_str(), static_cast<unsigned long long>(seed));
  std::mt19937_64 rng(seed);
  CU(cuInit(0));
  CUdevice dev;
  CU(cuDeviceGet(&dev, 0));
  CUcontext ctx;
  CU(cuDevicePrimaryCtxRetain(&ctx, dev));
  CU(cuCtxSetCurrent(ctx));
  CUstream stream;
  CU(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING));

  if (!capacity.empty()) {
    cl::Plan plan;
    cl::Status st = cl::MakePlan(op, capacity, &plan);
    if (!st.ok()) return Report("plan", false, st.message()), 1;
    cl::Launcher l(op, plan, dir);
    if (st = l.Prepare(0); !st.ok()) return Report("prepare", false, st.message()), 1;
    std::printf("prepared target %s; plan entry '%s', workspace %llu bytes\n", l.target().c_str(),
                op.entries[plan.entry].name.c_str(),
                static_cast<unsigned long long>(plan.workspace_bytes));
    Workspace w = MakeWorkspace(plan.workspace_bytes);
    Tensors cap = Make(op, capacity, rng);
    Eager(op, l, capacity, cap, w, stream, "eager capacity");
    Graph(op, l, capacity, cap, w, stream, "graph capacity");
    if (!live.empty()) {
      Tensors small = Make(op, live, rng);
      Eager(op, l, live, small, w, stream, "eager live shape");
      Graph(op, l, live, small, w, stream, "graph live shape");
      Free(small);
    }
    Free(cap);
    if (w.ptr) cuMemFree(w.ptr);
  }
  if (descriptor) {
    DescriptorTest(op, dir, cl::DescriptorReuse::kFull, descriptor_first, descriptor_second, stream,
                   rng);
    DescriptorTest(op, dir, cl::DescriptorReuse::kAddressOnly, descriptor_first, descriptor_second,
                   stream, rng);
  }
  if (!timed.empty()) Time(op, dir, timed, stream, rng);
  if (reset) {
    cl::Plan plan;
    cl::MakePlan(op, capacity.empty() ? timed : capacity, &plan);
    cl::Launcher l(op, plan, dir);
    cl::Status st = l.Prepare(0);
    Tensors t = Make(op, plan.capacity, rng);
    Workspace w = MakeWorkspace(plan.workspace_bytes);
    if (st.ok()) st = l.Bind(plan.capacity, t.views, w.ptr, w.bytes, stream);
    if (!st.ok()) {
      Report("reset", false, st.message());
    } else {
      CU(cuStreamDestroy(stream));
      CU(cuDevicePrimaryCtxReset(dev));  // every module and buffer of the context is gone
      cuCtxSetCurrent(ctx);              // may fail: the launcher must refuse either way
      st = l.Run();
      Report("reset", !st.ok() && st.message().find("reset") != std::string::npos,
             st.ok() ? "Run launched into a reset context" : "Run refused: " + st.message());
    }
    return failures == 0 ? 0 : 1;
  }
  CU(cuStreamDestroy(stream));
  std::printf("%d check(s) failed\n", failures);
  return failures == 0 ? 0 : 1;
}
