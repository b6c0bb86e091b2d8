#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "passes.h"

namespace cake::compiler {

int DTypeBits(ir::DType t) {
  switch (t) {
    case ir::BF16:
    case ir::F16:
      return 16;
    case ir::F32:
    case ir::S32:
    case ir::U32:
      return 32;
    case ir::S64:
      return 64;
    case ir::E4M3:
    case ir::E5M2:
    case ir::UE8M0:
    case ir::UE4M3:
    case ir::U8:
      return 8;
    case ir::E3M2:
    case ir::E2M3:
      return 6;
    case ir::E2M1:
      return 4;
    default:
      return 0;
  }
}

std::string DTypeName(ir::DType t) { return ir::DType_Name(t); }

std::optional<int64_t> ConstDim(const ir::Dim& d) {
  if (d.kind_case() == ir::Dim::kSize) return d.size();
  return std::nullopt;
}

int64_t KnownMultiple(const KernelGraph& g, const ir::Dim& d) {
  if (d.kind_case() == ir::Dim::kSize) return d.size();
  auto it = g.scalars.find(d.symbol());
  if (it == g.scalars.end() || it->second->multiple_of() <= 1) return 1;
  return it->second->multiple_of();
}

std::string DimText(const ir::Dim& d) {
  if (d.kind_case() == ir::Dim::kSize) return absl::StrCat(d.size());
  return d.symbol();
}

bool IsRowMajorFamily(ir::Representation::Kind k) {
  return k == ir::Representation::ROW_MAJOR || k == ir::Representation::SWIZZLE_32B ||
         k == ir::Representation::SWIZZLE_64B || k == ir::Representation::SWIZZLE_128B;
}

int SwizzleBytes(ir::Representation::Kind k) {
  switch (k) {
    case ir::Representation::SWIZZLE_32B:
      return 32;
    case ir::Representation::SWIZZLE_64B:
      return 64;
    case ir::Representation::SWIZZLE_128B:
      return 128;
    default:
      return 0;
  }
}

CheckedInt BufferStageBytes(const ir::Buffer& b) {
  const int bits = DTypeBits(b.dtype());
  CheckedInt elems = 1;
  const auto& dims = b.shape().dims();
  for (int i = 0; i < dims.size(); ++i) {
    CheckedInt extent = ConstDim(dims[i]).value_or(0);
    // PACKED_FP4 is row-major with two elements a byte: its rows are padded alike.
    if (i == dims.size() - 1 && (b.representation().kind() == ir::Representation::ROW_MAJOR ||
                                 b.representation().kind() == ir::Representation::PACKED_FP4))
      extent += b.representation().padding_elements();
    if (i == 0 && dims.size() > 1 && b.representation().kind() == ir::Representation::COL_MAJOR)
      extent += b.representation().padding_elements();
    elems *= extent;
  }
  return (elems * bits + 7) / 8;
}

int BufferStages(const KernelGraph& g, const ir::Buffer& b) {
  if (b.pipeline().empty()) return 1;
  auto it = g.pipelines.find(b.pipeline());
  if (it == g.pipelines.end() || it->second->stages() < 1) return 1;
  return it->second->stages();
}

bool IsWarpCollective(const ir::Operation& op) {
  switch (op.op_case()) {
    case ir::Operation::kMatrixLoad:
    case ir::Operation::kMma:
    case ir::Operation::kRegisterBudget:
    case ir::Operation::kRowReduce:
    case ir::Operation::kCrossWarpReduce:
    case ir::Operation::kArgReduce:
    case ir::Operation::kScaleLoad:
      return true;
    default:
      return false;
  }
}

const ir::StaticTiles* EnclosingTiles(const KernelGraph& g, const OpNode& n, std::string* work) {
  const ir::StaticTiles* tiles = nullptr;
  for (const std::string& header : n.loop_nest) {
    std::vector<std::string> parts = absl::StrSplit(header, ':');
    if (parts[0] != "tile" || parts.size() != 2) continue;
    auto wi = g.work.find(parts[1]);
    if (wi == g.work.end()) continue;
    *work = parts[1];
    if (wi->second->has_static_tiles()) tiles = &wi->second->static_tiles();
    if (wi->second->has_persistent()) tiles = &wi->second->persistent().tiles();
  }
  return tiles;
}

}  // namespace cake::compiler
