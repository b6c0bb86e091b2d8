#include "request_limits.h"

#include <map>
#include <string>

#include "absl/strings/str_cat.h"
#include "compiler/schedule_limits.h"

namespace cake::server {
namespace {

namespace pb = google::protobuf;

struct FieldLimit {
  size_t bytes = kDefaultStringBytes;  // strings and bytes (each element of a repeated one)
  int entries = kDefaultRepeated;      // repeated fields
};

// Fields whose limit is not the default, by full name.
const std::map<std::string, FieldLimit>& Overrides() {
  static const auto* table = new std::map<std::string, FieldLimit>{
      {"cake.service.ProposeRequest.schedule_text", {compiler::kMaxScheduleTextBytes, 0}},
      {"cake.contract.Contract.baseline_schedule", {compiler::kMaxScheduleTextBytes, 0}},
      {"cake.service.ProposeRequest.contract_id", {kMaxIdBytes, 0}},
      {"cake.service.ProposeRequest.idempotency_key", {kMaxIdempotencyKeyBytes, 0}},
      {"cake.service.MeasureRequest.idempotency_key", {kMaxIdempotencyKeyBytes, 0}},
      {"cake.evidence.Hypothesis.parent", {kMaxIdBytes, 0}},
      {"cake.evidence.Hypothesis.changed_decisions", {256, 32}},
      {"cake.evidence.Hypothesis.expected_effect", {2048, 0}},
      {"cake.evidence.Hypothesis.falsification", {2048, 0}},
      {"cake.contract.Contract.rows", {kDefaultStringBytes, 256}},
      {"cake.contract.ValidationPolicy.cases", {kDefaultStringBytes, 256}},
  };
  return *table;
}

FieldLimit LimitOf(const pb::FieldDescriptor* f) {
  auto it = Overrides().find(f->full_name());
  return it == Overrides().end() ? FieldLimit{} : it->second;
}

absl::Status Walk(const pb::Message& m, const std::string& path, int depth) {
  // Request messages nest a few levels; the binary parser already refused deeper ones.
  if (depth > 16) return absl::InvalidArgumentError(absl::StrCat(path, ": nested too deep"));
  const pb::Reflection* refl = m.GetReflection();
  std::vector<const pb::FieldDescriptor*> fields;
  refl->ListFields(m, &fields);
  for (const pb::FieldDescriptor* f : fields) {
    const FieldLimit limit = LimitOf(f);
    const std::string where = absl::StrCat(path, ".", f->name());
    const int count = f->is_repeated() ? refl->FieldSize(m, f) : 1;
    if (f->is_repeated() && count > limit.entries)
      return absl::InvalidArgumentError(
          absl::StrCat(where, " has ", count, " entries (limit ", limit.entries, ")"));
    for (int i = 0; i < count; ++i) {
      const std::string at = f->is_repeated() ? absl::StrCat(where, "[", i, "]") : where;
      if (f->cpp_type() == pb::FieldDescriptor::CPPTYPE_STRING) {
        std::string scratch;
        const std::string& v = f->is_repeated()
                                   ? refl->GetRepeatedStringReference(m, f, i, &scratch)
                                   : refl->GetStringReference(m, f, &scratch);
        if (v.size() > limit.bytes)
          return absl::InvalidArgumentError(
              absl::StrCat(at, " is ", v.size(), " bytes (limit ", limit.bytes, ")"));
      } else if (f->cpp_type() == pb::FieldDescriptor::CPPTYPE_MESSAGE) {
        const pb::Message& child =
            f->is_repeated() ? refl->GetRepeatedMessage(m, f, i) : refl->GetMessage(m, f);
        absl::Status s = Walk(child, at, depth + 1);
        if (!s.ok()) return s;
      }
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status CheckRequestLimits(const pb::Message& request) {
  return Walk(request, request.GetDescriptor()->name(), 0);
}

absl::Status CheckIdempotencyKey(const std::string& key) {
  if (key.size() > kMaxIdempotencyKeyBytes)
    return absl::InvalidArgumentError(absl::StrCat("idempotency_key is ", key.size(),
                                                   " bytes (limit ", kMaxIdempotencyKeyBytes, ")"));
  for (size_t i = 0; i < key.size(); ++i) {
    const unsigned char c = static_cast<unsigned char>(key[i]);
    if (c < 0x21 || c > 0x7e)
      return absl::InvalidArgumentError(
          absl::StrCat("idempotency_key byte ", i, " is not printable ASCII (0x21-0x7e)"));
  }
  return absl::OkStatus();
}

}  // namespace cake::server
