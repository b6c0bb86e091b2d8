#include "request_limits.h"

#include <map>
#include <string>

#include "absl/strings/str_cat.h"
#include "compiler/schedule_limits.h"
#include "error_detail.h"

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
      {"cake.v1.ProposeRequest.schedule_text", {compiler::kMaxScheduleTextBytes, 0}},
      {"cake.contract.Contract.baseline_schedule", {compiler::kMaxScheduleTextBytes, 0}},
      // Each member's; together they are held to the same limit (server/proposal.cc).
      {"cake.portfolio.Member.schedule_text", {compiler::kMaxScheduleTextBytes, 0}},
      {"cake.v1.ProposeRequest.contract_id", {kMaxIdBytes, 0}},
      {"cake.v1.ProposeRequest.idempotency_key", {kMaxIdempotencyKeyBytes, 0}},
      {"cake.v1.MeasureRequest.idempotency_key", {kMaxIdempotencyKeyBytes, 0}},
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

// "ProposeRequest.hypothesis.parent" -> "hypothesis.parent": the path within the request.
std::string FieldPath(const std::string& where) {
  const size_t dot = where.find('.');
  return dot == std::string::npos ? where : where.substr(dot + 1);
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
      return InvalidField(
          FieldPath(where),
          absl::StrCat(where, " has ", count, " entries (limit ", limit.entries, ")"),
          limit.entries);
    for (int i = 0; i < count; ++i) {
      const std::string at = f->is_repeated() ? absl::StrCat(where, "[", i, "]") : where;
      if (f->cpp_type() == pb::FieldDescriptor::CPPTYPE_STRING) {
        std::string scratch;
        const std::string& v = f->is_repeated()
                                   ? refl->GetRepeatedStringReference(m, f, i, &scratch)
                                   : refl->GetStringReference(m, f, &scratch);
        if (v.size() > limit.bytes)
          return InvalidField(
              FieldPath(at), absl::StrCat(at, " is ", v.size(), " bytes (limit ", limit.bytes, ")"),
              static_cast<int64_t>(limit.bytes));
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
    return InvalidField("idempotency_key",
                        absl::StrCat("idempotency_key is ", key.size(), " bytes (limit ",
                                     kMaxIdempotencyKeyBytes, ")"),
                        static_cast<int64_t>(kMaxIdempotencyKeyBytes));
  for (size_t i = 0; i < key.size(); ++i) {
    const unsigned char c = static_cast<unsigned char>(key[i]);
    if (c < 0x21 || c > 0x7e)
      return InvalidField("idempotency_key", absl::StrCat("idempotency_key byte ", i,
                                                          " is not printable ASCII (0x21-0x7e)"));
  }
  return absl::OkStatus();
}

}  // namespace cake::server
