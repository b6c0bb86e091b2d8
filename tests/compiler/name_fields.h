// Every string field of a schedule that holds a name (all but Module.description and
// Target.ptx_version), found by the tests' own reflective walk, with a way to overwrite it in a
// copy: how the injection tests reach every place a name can be written.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "cake/ir.pb.h"

namespace cake::testing {

class NameField {
 public:
  const std::string& path() const { return path_; }
  // `module` with this field set to `value`.
  ir::Module With(const ir::Module& module, const std::string& value) const {
    ir::Module out = module;
    google::protobuf::Message* msg = &out;
    for (size_t i = 0; i + 1 < steps_.size(); ++i) {
      const auto& [field, index] = steps_[i];
      msg = index >= 0 ? msg->GetReflection()->MutableRepeatedMessage(msg, field, index)
                       : msg->GetReflection()->MutableMessage(msg, field);
    }
    const auto& [field, index] = steps_.back();
    if (index >= 0)
      msg->GetReflection()->SetRepeatedString(msg, field, index, value);
    else
      msg->GetReflection()->SetString(msg, field, value);
    return out;
  }

  static std::vector<NameField> Of(const ir::Module& module) {
    std::vector<NameField> out;
    Walk(module, {}, "", &out);
    return out;
  }

 private:
  using Step = std::pair<const google::protobuf::FieldDescriptor*, int>;
  static void Walk(const google::protobuf::Message& msg, const std::vector<Step>& steps,
                   const std::string& prefix, std::vector<NameField>* out) {
    const auto* refl = msg.GetReflection();
    std::vector<const google::protobuf::FieldDescriptor*> fields;
    refl->ListFields(msg, &fields);
    for (const auto* field : fields) {
      const int count = field->is_repeated() ? refl->FieldSize(msg, field) : 1;
      for (int i = 0; i < count; ++i) {
        std::string path =
            prefix.empty() ? field->name() : absl::StrCat(prefix, ".", field->name());
        if (field->is_repeated()) absl::StrAppend(&path, "[", i, "]");
        std::vector<Step> here = steps;
        here.emplace_back(field, field->is_repeated() ? i : -1);
        if (field->cpp_type() == google::protobuf::FieldDescriptor::CPPTYPE_STRING) {
          if (field->full_name() == "cake.ir.Module.description" ||
              field->full_name() == "cake.ir.Target.ptx_version")
            continue;
          NameField f;
          f.path_ = path;
          f.steps_ = std::move(here);
          out->push_back(std::move(f));
        } else if (field->cpp_type() == google::protobuf::FieldDescriptor::CPPTYPE_MESSAGE) {
          Walk(field->is_repeated() ? refl->GetRepeatedMessage(msg, field, i)
                                    : refl->GetMessage(msg, field),
               here, path, out);
        }
      }
    }
  }

  std::string path_;
  std::vector<Step> steps_;
};

// What an agent might put in a name to make it code, one of each form (the kernel-name one is
// the form that reached nvcc before names were checked).
inline std::vector<std::string> InjectionForms(const std::string& file_to_include) {
  return {
      "gemm_bf16(){}\n#error injected via a name\nextern \"C\" __global__ void x",
      absl::StrCat("x\n#include \"", file_to_include, "\"\nint y"),
      absl::StrCat("#include \"", file_to_include, "\""),
      "A/*x*/",
      "x)",
      "int",
      "__x",
      "_X",
      "x_",
      "tid; asm(\"trap;\")",
      std::string(65, 'a'),
      "na\xc3\xafve",
      "1abc",
  };
}

}  // namespace cake::testing
