#include "workload.h"

#include <cstring>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <mutex>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "base/checked_int.h"

namespace cake::workloads {
namespace {

struct Registry {
  std::mutex mu;
  std::map<std::string, std::unique_ptr<Workload>> by_operation;
};

Registry& TheRegistry() {
  static Registry* r = new Registry();
  return *r;
}

}  // namespace

bool RegisterWorkload(std::unique_ptr<Workload> w) {
  Registry& r = TheRegistry();
  std::lock_guard<std::mutex> lock(r.mu);
  const std::string op = w->operation();
  if (!r.by_operation.emplace(op, std::move(w)).second) {
    std::fprintf(stderr, "two workloads register operation '%s'\n", op.c_str());
    std::abort();
  }
  return true;
}

const Workload* FindWorkload(const std::string& operation) {
  Registry& r = TheRegistry();
  std::lock_guard<std::mutex> lock(r.mu);
  auto it = r.by_operation.find(operation);
  return it == r.by_operation.end() ? nullptr : it->second.get();
}

std::vector<std::string> RegisteredOperations() {
  Registry& r = TheRegistry();
  std::lock_guard<std::mutex> lock(r.mu);
  std::vector<std::string> ops;
  for (const auto& [op, w] : r.by_operation) ops.push_back(op);
  return ops;
}

absl::Status UnknownOperation(const std::string& operation) {
  return absl::InvalidArgumentError(
      absl::StrCat("no workload answers operation '", operation,
                   "' (registered: ", absl::StrJoin(RegisteredOperations(), ", "), ")"));
}

Tiles TilesOf(const report::LaunchSpec& launch) {
  Tiles t;
  for (const report::LaunchSpec::GridDim* g :
       {&launch.grid_x(), &launch.grid_y(), &launch.grid_z()})
    if (!g->extent().empty() && g->divisor() > 1) t[g->extent()] = g->divisor();
  return t;
}

contract::ValidationPolicy EffectivePolicy(const contract::Contract& c, const Workload& w) {
  return c.has_validation() ? c.validation() : w.DefaultPolicy();
}

contract::ValidationPolicy EffectivePolicy(const contract::Contract& c) {
  if (c.has_validation()) return c.validation();
  if (const Workload* w = FindWorkload(c.operation())) return w->DefaultPolicy();
  contract::ValidationPolicy p;
  for (evidence::EvidenceKind k : {evidence::NUMERICAL_CONTRACT, evidence::MUTATION_AND_LIFECYCLE,
                                   evidence::REPEATED_EXECUTION_DETERMINISM}) {
    contract::EvidenceRequirement* r = p.add_evidence();
    r->set_kind(k);
    r->set_required(true);
  }
  return p;
}

std::vector<Case> CaseCatalogue(const contract::Contract& c, const Workload& w,
                                const Tiles& tiles) {
  std::vector<Case> out;
  for (const contract::Row& r : c.rows()) {
    Case k;
    k.name = r.name();
    k.problem = r.problem();
    k.role = r.held_out() ? "held_out" : "discovery";
    k.held_out = r.held_out();
    out.push_back(std::move(k));
  }
  const contract::ValidationPolicy p = EffectivePolicy(c, w);
  for (const contract::ValidationCase& vc : p.cases()) {
    Case k;
    k.name = vc.name();
    k.problem = vc.problem();
    k.inputs =
        vc.inputs() == contract::INPUT_DISTRIBUTION_UNSPECIFIED ? contract::UNIFORM : vc.inputs();
    k.role = vc.role().empty() ? "adversarial" : vc.role();
    k.held_out = vc.held_out();
    out.push_back(std::move(k));
  }
  if (p.derive_boundary_cases())
    for (Case& k : w.DerivedCases(tiles)) out.push_back(std::move(k));
  return out;
}

std::vector<Case> SmallCases(const contract::Contract& c, const Workload& w, const Tiles& tiles,
                             int64_t max_work) {
  std::vector<Case> out;
  for (Case& k : CaseCatalogue(c, w, tiles))
    if (w.WorkUnits(k.problem) <= max_work) out.push_back(std::move(k));
  if (!EffectivePolicy(c, w).derive_boundary_cases())
    for (Case& k : w.DerivedCases(tiles)) out.push_back(std::move(k));
  return out;
}

void AddPolicyCase(contract::ValidationPolicy* p, const std::string& name,
                   const contract::ProblemShape& problem, contract::InputDistribution dist,
                   const std::string& role) {
  contract::ValidationCase* c = p->add_cases();
  c->set_name(name);
  *c->mutable_problem() = problem;
  c->set_inputs(dist);
  c->set_role(role);
}

absl::Status CheckMatrixExtents(int64_t m, int64_t n, int64_t k) {
  constexpr int64_t kMaxExtent = int64_t{1} << 20;
  constexpr int64_t kMaxOperandElements = int64_t{1} << 32;
  for (const auto& [name, extent] : {std::pair{"m", m}, {"n", n}, {"k", k}})
    if (extent > kMaxExtent)
      return absl::InvalidArgumentError(absl::StrCat(name, " = ", extent, " is over 2^20 (",
                                                     kMaxExtent, "), the bound of each extent"));
  for (const auto& [name, elems] : {std::pair{"A (m x k)", base::CheckedInt(m) * k},
                                    {"B (n x k)", base::CheckedInt(n) * k},
                                    {"C (m x n)", base::CheckedInt(m) * n}})
    if (elems.Exceeds(kMaxOperandElements))
      return absl::InvalidArgumentError(
          absl::StrCat(name, " holds ", elems.ToString(), " elements, over 2^32"));
  return absl::OkStatus();
}

std::vector<Case> MatrixTailCases(const Tiles& tiles, const std::array<int, 3>& k,
                                  contract::ProblemShape (*problem)(int m, int n, int k)) {
  auto tile = [&](const char* extent) {
    auto it = tiles.find(extent);
    return std::max(it == tiles.end() ? 2 : it->second, 2);
  };
  const int tile_m = tile("M"), tile_n = tile("N");
  std::vector<Case> out;
  auto add = [&](const std::string& name, int m, int n, int kk) {
    Case c;
    c.name = name;
    c.problem = problem(m, n, kk);
    c.role = "boundary";
    out.push_back(c);
  };
  add("partial_tile_single_row", 1, tile_n + 1, k[0]);
  add("partial_tile_minus_one", tile_m - 1, tile_n - 1, k[1]);
  add("partial_tile_plus_one", 2 * tile_m + 1, tile_n + 1, k[2]);
  return out;
}

void RequireEvidence(contract::ValidationPolicy* p, evidence::EvidenceKind kind) {
  contract::EvidenceRequirement* r = p->add_evidence();
  r->set_kind(kind);
  r->set_required(true);
}

std::string Bf16TensorBytes(const std::vector<uint16_t>& v) {
  return std::string(reinterpret_cast<const char*>(v.data()), v.size() * 2);
}

std::vector<uint16_t> Bf16FromTensorBytes(const std::string& bytes) {
  std::vector<uint16_t> v(bytes.size() / 2);
  std::memcpy(v.data(), bytes.data(), v.size() * 2);
  return v;
}

}  // namespace cake::workloads
