#include "canonical.h"

#include <algorithm>

#include "base/digest.h"
#include "google/protobuf/io/coded_stream.h"
#include "google/protobuf/io/zero_copy_stream_impl_lite.h"

namespace cake::compiler {
namespace {

template <typename Repeated>
void SortByName(Repeated* items) {
  std::stable_sort(items->begin(), items->end(),
                   [](const auto& a, const auto& b) { return a.name() < b.name(); });
}

void CanonicalizeRepresentation(ir::Representation* r) {
  if (r->kind() != ir::Representation::BLOCK_SCALE) {
    r->clear_scale_format();
    r->clear_group_size();
  }
}

void CanonicalizeOps(google::protobuf::RepeatedPtrField<ir::Operation>* ops) {
  for (ir::Operation& op : *ops) CanonicalizeOps(op.mutable_body());
}

void CanonicalizeKernel(ir::Kernel* k) {
  for (ir::ScalarParam& s : *k->mutable_scalars()) {
    if (s.dtype() == ir::DTYPE_UNSPECIFIED) s.set_dtype(ir::S32);
    if (s.multiple_of() == 1) s.clear_multiple_of();
  }
  for (ir::TensorParam& t : *k->mutable_tensors()) {
    if (t.has_representation()) CanonicalizeRepresentation(t.mutable_representation());
    std::sort(t.mutable_may_alias()->begin(), t.mutable_may_alias()->end());
  }
  if (k->launch().cluster_size() == 1) k->mutable_launch()->clear_cluster_size();
  for (ir::WorkSchedule& w : *k->mutable_work()) {
    ir::StaticTiles* tiles = w.has_static_tiles() ? w.mutable_static_tiles()
                             : w.has_persistent() ? w.mutable_persistent()->mutable_tiles()
                                                  : nullptr;
    if (tiles != nullptr && tiles->raster_group_m() == 1) tiles->clear_raster_group_m();
  }
  for (ir::Role& r : *k->mutable_roles()) {
    if (r.issuer() == ir::Role::ISSUER_UNSPECIFIED) r.set_issuer(ir::Role::ALL_LANES);
    std::sort(r.mutable_warps()->begin(), r.mutable_warps()->end());
  }
  for (ir::Buffer& b : *k->mutable_buffers()) {
    if (b.has_representation()) CanonicalizeRepresentation(b.mutable_representation());
  }
  for (ir::Accumulator& a : *k->mutable_accumulators()) {
    if (a.init() == ir::Accumulator::INIT_UNSPECIFIED) a.set_init(ir::Accumulator::ZERO);
  }
  for (ir::Pipeline& p : *k->mutable_pipelines()) {
    std::sort(p.mutable_producers()->begin(), p.mutable_producers()->end());
    std::sort(p.mutable_consumers()->begin(), p.mutable_consumers()->end());
  }
  SortByName(k->mutable_roles());
  SortByName(k->mutable_buffers());
  SortByName(k->mutable_instrs());
  SortByName(k->mutable_accumulators());
  SortByName(k->mutable_pipelines());
  SortByName(k->mutable_work());
  SortByName(k->mutable_softmax_states());
  SortByName(k->mutable_caches());
  SortByName(k->mutable_selections());
  CanonicalizeOps(k->mutable_ops());
}

}  // namespace

ir::Module Canonicalize(const ir::Module& module) {
  ir::Module c = module;
  c.clear_description();
  for (ir::Kernel& k : *c.mutable_kernels()) CanonicalizeKernel(&k);
  SortByName(c.mutable_workspaces());
  return c;
}

std::string CanonicalBytes(const ir::Module& canonical) { return DeterministicBytes(canonical); }

std::string DeterministicBytes(const google::protobuf::Message& m) {
  std::string out;
  {
    google::protobuf::io::StringOutputStream raw(&out);
    google::protobuf::io::CodedOutputStream coded(&raw);
    coded.SetSerializationDeterministic(true);
    m.SerializeToCodedStream(&coded);
  }
  return out;
}

std::string ScheduleHash(const ir::Module& module) {
  std::string payload(kCanonicalFormVersion);
  payload.push_back('\n');
  payload += CanonicalBytes(Canonicalize(module));
  return base::Sha256Hex(payload);
}

}  // namespace cake::compiler
