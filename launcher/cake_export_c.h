/* The C face of an exported Consumer CAKE launcher (launcher/cake_launcher.h), for callers that
 * are not C++: cake_export.py loads it with ctypes. Every call that can fail returns 0 on success
 * and -1 with a message in err (at most err_len bytes, NUL-terminated). */
#ifndef CAKE_EXPORT_C_H_
#define CAKE_EXPORT_C_H_

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct cake_export_launcher cake_export_launcher;

/* The exported operation's name and its scalars, comma-separated in order. */
const char* cake_export_operation(void);
const char* cake_export_scalars(void);

/* Plans for the capacity shape (n scalars by name) against the export in export_dir (where its
 * cubins are); NULL with err when no entry admits it. */
cake_export_launcher* cake_launcher_plan(const char* export_dir, const char* const* names,
                                         const int64_t* values, int n, char* err, size_t err_len);
uint64_t cake_launcher_workspace_bytes(const cake_export_launcher* l);
/* The entry the capacity shape dispatches to (after Bind: the bound one). */
const char* cake_launcher_entry(const cake_export_launcher* l);
int cake_launcher_prepare(cake_export_launcher* l, int device, char* err, size_t err_len);
/* Tensor i: names[i], address ptrs[i], dtypes[i], ranks[i] extents taken in order from shapes
 * and strides (in elements; strides may be NULL for row-major contiguous). */
int cake_launcher_bind(cake_export_launcher* l, const char* const* scalar_names,
                       const int64_t* scalar_values, int n_scalars, const char* const* names,
                       const uint64_t* ptrs, const char* const* dtypes, const int* ranks,
                       const int64_t* shapes, const int64_t* strides, int n_tensors,
                       uint64_t workspace, uint64_t workspace_bytes, void* stream, char* err,
                       size_t err_len);
int cake_launcher_run(cake_export_launcher* l, char* err, size_t err_len);
int64_t cake_launcher_descriptor_encodings(const cake_export_launcher* l);
void cake_launcher_free(cake_export_launcher* l);

#ifdef __cplusplus
}
#endif

#endif /* CAKE_EXPORT_C_H_ */
