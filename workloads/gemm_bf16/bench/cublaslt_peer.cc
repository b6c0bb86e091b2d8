#include "cublaslt_peer.h"

#include <cublasLt.h>
#include <dlfcn.h>

#include <cstdlib>
#include <map>
#include <tuple>

#include "absl/strings/str_cat.h"

namespace cake::workloads::gemm_bf16 {

struct CublasLtPeer::Api {
  void* handle = nullptr;
  std::string library;
  decltype(&::cublasLtCreate) Create = nullptr;
  decltype(&::cublasLtDestroy) Destroy = nullptr;
  decltype(&::cublasLtGetVersion) GetVersion = nullptr;
  decltype(&::cublasLtMatmulDescCreate) DescCreate = nullptr;
  decltype(&::cublasLtMatmulDescDestroy) DescDestroy = nullptr;
  decltype(&::cublasLtMatmulDescSetAttribute) DescSetAttribute = nullptr;
  decltype(&::cublasLtMatrixLayoutCreate) LayoutCreate = nullptr;
  decltype(&::cublasLtMatrixLayoutDestroy) LayoutDestroy = nullptr;
  decltype(&::cublasLtMatmulPreferenceCreate) PreferenceCreate = nullptr;
  decltype(&::cublasLtMatmulPreferenceDestroy) PreferenceDestroy = nullptr;
  decltype(&::cublasLtMatmulPreferenceSetAttribute) PreferenceSetAttribute = nullptr;
  decltype(&::cublasLtMatmulAlgoGetHeuristic) AlgoGetHeuristic = nullptr;
  decltype(&::cublasLtMatmul) Matmul = nullptr;
  const gpuqueue::CudaDriver* driver = nullptr;

  cublasLtHandle_t lt = nullptr;
  CUdeviceptr workspace = 0;
  size_t workspace_bytes = 0;

  // Per shape: the descriptors and the chosen algorithm, kept for the process's life.
  struct Plan {
    cublasLtMatmulDesc_t desc = nullptr;
    cublasLtMatrixLayout_t a = nullptr, b = nullptr, c = nullptr;
    cublasLtMatmulAlgo_t algo{};
  };
  std::map<std::tuple<int, int, int>, Plan> plans;
};

namespace {

absl::Status LtError(cublasStatus_t s, const char* what) {
  return absl::InternalError(absl::StrCat(what, " failed: cublasStatus ", static_cast<int>(s)));
}

template <typename F>
bool Resolve(void* h, const char* name, F* out) {
  *out = reinterpret_cast<F>(dlsym(h, name));
  return *out != nullptr;
}

}  // namespace

absl::StatusOr<std::unique_ptr<CublasLtPeer>> CublasLtPeer::Load(const gpuqueue::CudaDriver& driver,
                                                                 size_t workspace_bytes) {
  auto api = std::make_unique<Api>();
  api->driver = &driver;
  std::string tried;
  const char* env = std::getenv("CAKE_LIBCUBLASLT");
  for (const char* name : {env, "libcublasLt.so.13", "libcublasLt.so.12", "libcublasLt.so"}) {
    if (name == nullptr || *name == '\0') continue;
    api->handle = dlopen(name, RTLD_NOW | RTLD_LOCAL);
    if (api->handle != nullptr) {
      api->library = name;
      break;
    }
    absl::StrAppend(&tried, tried.empty() ? "" : "; ", dlerror());
  }
  if (api->handle == nullptr)
    return absl::UnavailableError(
        absl::StrCat("cuBLASLt not found (set CAKE_LIBCUBLASLT): ", tried));
  void* h = api->handle;
  bool ok = Resolve(h, "cublasLtCreate", &api->Create) &&
            Resolve(h, "cublasLtDestroy", &api->Destroy) &&
            Resolve(h, "cublasLtGetVersion", &api->GetVersion) &&
            Resolve(h, "cublasLtMatmulDescCreate", &api->DescCreate) &&
            Resolve(h, "cublasLtMatmulDescDestroy", &api->DescDestroy) &&
            Resolve(h, "cublasLtMatmulDescSetAttribute", &api->DescSetAttribute) &&
            Resolve(h, "cublasLtMatrixLayoutCreate", &api->LayoutCreate) &&
            Resolve(h, "cublasLtMatrixLayoutDestroy", &api->LayoutDestroy) &&
            Resolve(h, "cublasLtMatmulPreferenceCreate", &api->PreferenceCreate) &&
            Resolve(h, "cublasLtMatmulPreferenceDestroy", &api->PreferenceDestroy) &&
            Resolve(h, "cublasLtMatmulPreferenceSetAttribute", &api->PreferenceSetAttribute) &&
            Resolve(h, "cublasLtMatmulAlgoGetHeuristic", &api->AlgoGetHeuristic) &&
            Resolve(h, "cublasLtMatmul", &api->Matmul);
  if (!ok) return absl::UnavailableError(absl::StrCat(api->library, ": missing symbol"));
  if (cublasStatus_t s = api->Create(&api->lt); s != CUBLAS_STATUS_SUCCESS)
    return LtError(s, "cublasLtCreate");
  if (workspace_bytes > 0) {
    absl::Status allocated =
        driver.Check(driver.MemAlloc(&api->workspace, workspace_bytes), "cuMemAlloc (workspace)");
    if (!allocated.ok()) return allocated;
    api->workspace_bytes = workspace_bytes;
  }
  std::unique_ptr<CublasLtPeer> peer(new CublasLtPeer());
  peer->api_ = std::move(api);
  return peer;
}

CublasLtPeer::~CublasLtPeer() {
  if (!api_) return;
  for (auto& [shape, p] : api_->plans) {
    api_->LayoutDestroy(p.a);
    api_->LayoutDestroy(p.b);
    api_->LayoutDestroy(p.c);
    api_->DescDestroy(p.desc);
  }
  if (api_->workspace != 0) api_->driver->MemFree(api_->workspace);
  if (api_->lt != nullptr) api_->Destroy(api_->lt);
  // The library stays loaded: its static destructors may still run at exit.
}

std::string CublasLtPeer::Describe() const {
  return absl::StrCat("cuBLASLt ", api_->GetVersion(), " (", api_->library, ")");
}

absl::Status CublasLtPeer::Gemm(CUstream stream, CUdeviceptr a, CUdeviceptr b, CUdeviceptr c, int m,
                                int n, int k) {
  Api& x = *api_;
  auto it = x.plans.find({m, n, k});
  if (it == x.plans.end()) {
    // Column-major view of row-major C[M,N] = A[M,K] B[N,K]^T: C^T (N x M) = op_T(B') * A', where
    // B' is B's storage read as a K x N column-major matrix and A' is A's as K x M.
    Api::Plan p;
    cublasStatus_t s = x.DescCreate(&p.desc, CUBLAS_COMPUTE_32F, CUDA_R_32F);
    if (s != CUBLAS_STATUS_SUCCESS) return LtError(s, "cublasLtMatmulDescCreate");
    const cublasOperation_t t = CUBLAS_OP_T, nt = CUBLAS_OP_N;
    x.DescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_TRANSA, &t, sizeof(t));
    x.DescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_TRANSB, &nt, sizeof(nt));
    if ((s = x.LayoutCreate(&p.a, CUDA_R_16BF, k, n, k)) != CUBLAS_STATUS_SUCCESS ||
        (s = x.LayoutCreate(&p.b, CUDA_R_16BF, k, m, k)) != CUBLAS_STATUS_SUCCESS ||
        (s = x.LayoutCreate(&p.c, CUDA_R_16BF, n, m, n)) != CUBLAS_STATUS_SUCCESS)
      return LtError(s, "cublasLtMatrixLayoutCreate");
    cublasLtMatmulPreference_t pref = nullptr;
    if ((s = x.PreferenceCreate(&pref)) != CUBLAS_STATUS_SUCCESS)
      return LtError(s, "cublasLtMatmulPreferenceCreate");
    x.PreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &x.workspace_bytes,
                             sizeof(x.workspace_bytes));
    cublasLtMatmulHeuristicResult_t result{};
    int found = 0;
    s = x.AlgoGetHeuristic(x.lt, p.desc, p.a, p.b, p.c, p.c, pref, 1, &result, &found);
    x.PreferenceDestroy(pref);
    if (s != CUBLAS_STATUS_SUCCESS || found == 0)
      return LtError(s == CUBLAS_STATUS_SUCCESS ? CUBLAS_STATUS_NOT_SUPPORTED : s,
                     "cublasLtMatmulAlgoGetHeuristic");
    p.algo = result.algo;
    it = x.plans.emplace(std::make_tuple(m, n, k), p).first;
  }
  const Api::Plan& p = it->second;
  const float alpha = 1.0f, beta = 0.0f;
  cublasStatus_t s =
      x.Matmul(x.lt, p.desc, &alpha, reinterpret_cast<const void*>(b), p.a,
               reinterpret_cast<const void*>(a), p.b, &beta, reinterpret_cast<const void*>(c), p.c,
               reinterpret_cast<void*>(c), p.c, &p.algo, reinterpret_cast<void*>(x.workspace),
               x.workspace_bytes, reinterpret_cast<cudaStream_t>(stream));
  if (s != CUBLAS_STATUS_SUCCESS) return LtError(s, "cublasLtMatmul");
  return absl::OkStatus();
}

}  // namespace cake::workloads::gemm_bf16
