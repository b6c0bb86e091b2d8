// The workload seam: everything the daemon, the worker and the clients know about one computation
// comes from its Workload, found by the contract's `operation` in one registry. A workload lives
// in its own folder (workloads/<name>/): its problem-shape message (an arm of
// cake.contract.ProblemShape), contract checks, default validation cases and derived boundary
// cases, input generator and independent oracle, the tensors and scalars of its kernel ABI, the
// FLOP/byte model of the roofline and the schedule space of the built-in proposer. Its device
// side (GPU-generated inputs and the timed-output check) registers with the worker
// (gpuqueue/worker/device_workload.h). Outside its folder and its lowering nothing names it.
//
// Workloads register themselves at static-initialization time (CAKE_REGISTER_WORKLOAD); their
// object libraries are linked whole (workloads/CMakeLists.txt). Registered workloads are
// immutable and thread-safe.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "cake/contract.pb.h"
#include "cake/evidence.pb.h"
#include "cake/report.pb.h"

namespace cake::workloads {

// One validation case: a contract row, a policy case or a derived boundary case.
struct Case {
  std::string name;
  contract::ProblemShape problem;
  contract::InputDistribution inputs = contract::UNIFORM;
  std::string role;  // "discovery" | "held_out" | "boundary" | "adversarial"
  bool held_out = false;
};

// A kernel's grid divisors by extent name ("M" -> 128): what derived boundary cases are made of.
using Tiles = std::map<std::string, int>;
Tiles TilesOf(const report::LaunchSpec& launch);

// One tensor of the kernel ABI for a problem.
struct TensorSpec {
  std::string name;  // the schedule's tensor parameter ("A", "X", "idx")
  size_t bytes = 0;
  int element_bytes = 2;
  bool output = false;  // poisoned (all bytes 0xFF) before a launch, checked fully written
};

// Host inputs of one case: bytes per input tensor.
using TensorBytes = std::map<std::string, std::string>;

struct WorkModel {
  double flops = 0;
  double bytes = 0;  // compulsory DRAM traffic: inputs read once, outputs written once
};

// The matrix product a warp-tiled kernel of a problem computes (GEMM: M x N x K; KMeans: the
// B*N points against K centroids over D), for the tile cost model. All 0: not a tiled product.
struct MatmulExtents {
  int64_t m = 0, n = 0, k = 0;
};

// A point of the workload's schedule space for the built-in proposer.
struct Proposal {
  std::string label;          // "128x128x32 w2x2 s3"
  std::string schedule_text;  // a cake.ir.Module in text format
  evidence::Hypothesis hypothesis;
};

class Workload {
 public:
  virtual ~Workload() = default;

  // The contract operation this workload answers, e.g. "gemm_bf16_tn".
  virtual std::string operation() const = 0;
  // One line: the math and the types.
  virtual std::string description() const = 0;

  // INVALID_ARGUMENT naming what is wrong: a row's or case's shape, or the contract's dtypes.
  virtual absl::Status CheckShape(const contract::ProblemShape& s) const = 0;
  virtual absl::Status CheckContract(const contract::Contract& c) const = 0;
  // Multiply-adds (or the workload's unit of work) of a problem: bounds instrumented runs.
  virtual int64_t WorkUnits(const contract::ProblemShape& s) const = 0;
  virtual WorkModel Model(const contract::ProblemShape& s, const contract::Contract& c) const = 0;
  // "4096x4096x4096", for reports and logs.
  virtual std::string ShapeText(const contract::ProblemShape& s) const = 0;

  // The validation cases a contract that states none gets, and the required evidence.
  virtual contract::ValidationPolicy DefaultPolicy() const = 0;
  // Boundary cases derived from a kernel's grid divisors (partial tiles).
  virtual std::vector<Case> DerivedCases(const Tiles& tiles) const = 0;
  // The shapes of the lifecycle sequence (first, second) and of the determinism check.
  virtual std::vector<contract::ProblemShape> LifecycleShapes() const = 0;
  virtual contract::ProblemShape DeterminismShape() const = 0;

  // The kernel ABI: tensors (inputs and outputs) and scalar values of a problem.
  virtual std::vector<TensorSpec> Tensors(const contract::ProblemShape& s,
                                          const contract::Contract& c) const = 0;
  virtual std::map<std::string, int64_t> Scalars(const contract::ProblemShape& s) const = 0;
  // Fresh inputs of `dist` from `seed`.
  virtual TensorBytes MakeInputs(const contract::ProblemShape& s, contract::InputDistribution dist,
                                 uint64_t seed) const = 0;
  // The numbers of one launch against the independent oracle: fills non_finite,
  // out_of_tolerance, errors, sampled_rows, passed and failure of `check`. `outputs` holds every
  // output tensor's bytes as the kernel left them (unwritten poison already counted by the
  // caller and passed in `unwritten`).
  virtual void Judge(const contract::ProblemShape& s, const contract::Contract& c,
                     contract::InputDistribution dist, uint64_t seed, const TensorBytes& inputs,
                     const TensorBytes& outputs, int64_t unwritten,
                     evidence::RowCheck* check) const = 0;

  // The built-in proposer's points, the first being the bundled baseline's.
  virtual std::vector<Proposal> ScheduleSpace() const = 0;
  // The space the daemon's search (search/search.h) ranks and explores: every point legal by
  // construction for the workload's lowering, distinct labels. It starts with ScheduleSpace()'s
  // points (the search's first round, before any row is measured). Default: ScheduleSpace().
  virtual std::vector<Proposal> SearchSpace() const { return ScheduleSpace(); }
  // The product the cost model sees for a problem; all 0 (the default): the search cannot model
  // this workload and is refused.
  virtual MatmulExtents Extents(const contract::ProblemShape&) const { return {}; }
};

// The registered workload of `operation`, or nullptr.
const Workload* FindWorkload(const std::string& operation);
// Every registered operation, sorted: for error messages.
std::vector<std::string> RegisteredOperations();
// INVALID_ARGUMENT naming the registered operations when none answers `operation`.
absl::Status UnknownOperation(const std::string& operation);

// Registers at static-initialization time; a second workload for one operation aborts.
bool RegisterWorkload(std::unique_ptr<Workload> w);
#define CAKE_REGISTER_WORKLOAD(Type)                          \
  [[maybe_unused]] static const bool cake_registered_##Type = \
      ::cake::workloads::RegisterWorkload(std::make_unique<Type>())

// --- what every workload's cases are made of -------------------------------------------------

// Appends a case of `problem` to a policy, and a required evidence record.
void AddPolicyCase(contract::ValidationPolicy* p, const std::string& name,
                   const contract::ProblemShape& problem, contract::InputDistribution dist,
                   const std::string& role);
void RequireEvidence(contract::ValidationPolicy* p, evidence::EvidenceKind kind);
// A matrix product's extents within the bounds every such workload keeps: each of m, n and k at
// most 2^20 and each operand (m x k, n x k, m x n) at most 2^32 elements, so that no product of
// the shape comes near 64-bit overflow; INVALID_ARGUMENT naming the extent or operand.
absl::Status CheckMatrixExtents(int64_t m, int64_t n, int64_t k);
// The boundary cases of a matrix product tiled tile_m x tile_n (tiles "M" and "N", at least 2):
// one row against a partial column tile, a tile less one each way, two tiles and one more each
// way, with K of k[0], k[1] and k[2]; `problem` makes a workload's shape of (m, n, k).
std::vector<Case> MatrixTailCases(const Tiles& tiles, const std::array<int, 3>& k,
                                  contract::ProblemShape (*problem)(int m, int n, int k));
// BF16 bit patterns as a tensor's bytes, and back.
std::string Bf16TensorBytes(const std::vector<uint16_t>& v);
std::vector<uint16_t> Bf16FromTensorBytes(const std::string& bytes);

// The policy applied when a contract states none: the workload's default.
contract::ValidationPolicy EffectivePolicy(const contract::Contract& c, const Workload& w);
// The same, finding the workload of the contract's operation (an unregistered one has no
// default cases, only the three required records).
contract::ValidationPolicy EffectivePolicy(const contract::Contract& c);
// Every case a kernel with grid divisors `tiles` is validated on, in a fixed order: contract
// rows, the policy's cases, then derived boundary cases (when the policy enables them).
std::vector<Case> CaseCatalogue(const contract::Contract& c, const Workload& w, const Tiles& tiles);
// The catalogue's cases of at most `max_work` work units, plus the derived boundary cases: what
// instrumented (sanitizer) runs take.
std::vector<Case> SmallCases(const contract::Contract& c, const Workload& w, const Tiles& tiles,
                             int64_t max_work);

}  // namespace cake::workloads
