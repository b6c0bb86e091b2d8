#include "cake_export_c.h"

#include <cstring>
#include <memory>
#include <string>

#include "cake_launcher.h"

struct cake_export_launcher {
  std::unique_ptr<cake_launcher::Launcher> launcher;
  std::string entry;
};

namespace {

int Fail(const cake_launcher::Status& s, char* err, size_t err_len) {
  if (s.ok()) return 0;
  if (err != nullptr && err_len > 0) {
    std::strncpy(err, s.message().c_str(), err_len - 1);
    err[err_len - 1] = '\0';
  }
  return -1;
}

std::string JoinedScalars() {
  std::string s;
  for (const std::string& name : cake_launcher::ExportedOperation().scalars)
    s += (s.empty() ? "" : ",") + name;
  return s;
}

}  // namespace

const char* cake_export_operation(void) {
  return cake_launcher::ExportedOperation().operation.c_str();
}

const char* cake_export_scalars(void) {
  static const std::string scalars = JoinedScalars();
  return scalars.c_str();
}

cake_export_launcher* cake_launcher_plan(const char* export_dir, const char* const* names,
                                         const int64_t* values, int n, char* err, size_t err_len) {
  cake_launcher::Shape shape;
  for (int i = 0; i < n; ++i) shape[names[i]] = values[i];
  cake_launcher::Plan plan;
  const cake_launcher::OperationSpec& op = cake_launcher::ExportedOperation();
  if (Fail(cake_launcher::MakePlan(op, shape, &plan), err, err_len) != 0) return nullptr;
  auto* l = new cake_export_launcher;
  l->entry = op.entries[plan.entry].name;
  l->launcher = std::make_unique<cake_launcher::Launcher>(op, std::move(plan), export_dir);
  return l;
}

uint64_t cake_launcher_workspace_bytes(const cake_export_launcher* l) {
  return l->launcher->plan().workspace_bytes;
}

const char* cake_launcher_entry(const cake_export_launcher* l) { return l->entry.c_str(); }

int cake_launcher_prepare(cake_export_launcher* l, int device, char* err, size_t err_len) {
  return Fail(l->launcher->Prepare(device), err, err_len);
}

int cake_launcher_bind(cake_export_launcher* l, const char* const* scalar_names,
                       const int64_t* scalar_values, int n_scalars, const char* const* names,
                       const uint64_t* ptrs, const char* const* dtypes, const int* ranks,
                       const int64_t* shapes, const int64_t* strides, int n_tensors,
                       uint64_t workspace, uint64_t workspace_bytes, void* stream, char* err,
                       size_t err_len) {
  cake_launcher::Shape live;
  for (int i = 0; i < n_scalars; ++i) live[scalar_names[i]] = scalar_values[i];
  std::map<std::string, cake_launcher::TensorView> tensors;
  size_t at = 0;
  for (int i = 0; i < n_tensors; ++i) {
    cake_launcher::TensorView v;
    v.data = ptrs[i];
    v.dtype = dtypes[i];
    v.shape.assign(shapes + at, shapes + at + ranks[i]);
    if (strides != nullptr) v.strides.assign(strides + at, strides + at + ranks[i]);
    at += static_cast<size_t>(ranks[i]);
    tensors[names[i]] = std::move(v);
  }
  const int rc = Fail(
      l->launcher->Bind(live, tensors, workspace, workspace_bytes, static_cast<CUstream>(stream)),
      err, err_len);
  if (rc == 0)
    l->entry = cake_launcher::ExportedOperation().entries[l->launcher->bound_entry()].name;
  return rc;
}

int cake_launcher_run(cake_export_launcher* l, char* err, size_t err_len) {
  return Fail(l->launcher->Run(), err, err_len);
}

int64_t cake_launcher_descriptor_encodings(const cake_export_launcher* l) {
  return l->launcher->descriptor_encodings();
}

void cake_launcher_free(cake_export_launcher* l) { delete l; }
