#include "lowering.h"

#include <cstdio>
#include <cstdlib>
#include <map>
#include <mutex>

#include "absl/strings/str_cat.h"

namespace cake::compiler {
namespace {

struct Registry {
  std::mutex mu;
  std::map<std::string, std::unique_ptr<Lowering>> by_name;
};

Registry& TheRegistry() {
  static Registry* r = new Registry();
  return *r;
}

}  // namespace

bool RegisterLowering(std::unique_ptr<Lowering> l) {
  Registry& r = TheRegistry();
  std::lock_guard<std::mutex> lock(r.mu);
  const std::string name = l->name();
  if (!r.by_name.emplace(name, std::move(l)).second) {
    std::fprintf(stderr, "two lowerings register the name '%s'\n", name.c_str());
    std::abort();
  }
  return true;
}

std::vector<const Lowering*> AllLowerings() {
  Registry& r = TheRegistry();
  std::lock_guard<std::mutex> lock(r.mu);
  std::vector<const Lowering*> out;
  for (const auto& [name, l] : r.by_name) out.push_back(l.get());
  return out;
}

const Lowering* LoweringByName(const std::string& name) {
  for (const Lowering* l : AllLowerings())
    if (l->name() == name) return l;
  return nullptr;
}

const Lowering* MatchLowering(const ir::Module& module, const KernelGraph& g,
                              std::string* why_not) {
  std::string reasons;
  for (const Lowering* l : AllLowerings()) {
    absl::Status s = l->Match(module, g);
    if (s.ok()) return l;
    absl::StrAppend(&reasons, reasons.empty() ? "" : "; ", l->name(), ": ", s.message());
  }
  if (why_not != nullptr) *why_not = reasons.empty() ? "no lowering is registered" : reasons;
  return nullptr;
}

bool EnsureLaunchSpec(report::LoweringReceipt* receipt) {
  if (receipt->launch().args_size() > 0) return true;
  for (const Lowering* l : AllLowerings())
    if (l->UpgradeReceipt(receipt)) return true;
  return false;
}

}  // namespace cake::compiler
