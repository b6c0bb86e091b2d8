// The validation runner: produces the separate evidence records of one kernel on the device
// (seed Appendix A.3), each from fresh inputs drawn from a recorded seed:
//   NUMERICAL_CONTRACT          every catalogue case, each on a freshly loaded module (so a
//                               kernel's hidden state cannot carry between cases), output
//                               poisoned before the launch and checked fully written, compared
//                               with the float64 oracle under the NaN/Inf policy;
//   MUTATION_AND_LIFECYCLE      inputs bitwise unchanged and canary guards around A, B and C
//                               intact after every launch; a lifecycle sequence on one module
//                               (same buffers with new contents, new buffers with the same
//                               contents, a shape change, the same call repeated);
//   REPEATED_EXECUTION_DETERMINISM  the same inputs twice give bitwise the same output.
// A hang (launch watchdog) or a sticky CUDA error ends the job: later records are NOT_RUN.
// Runs inside a cake-worker process; not thread-safe.
#pragma once

#include <string>

#include "absl/status/statusor.h"
#include "cake/contract.pb.h"
#include "cake/evidence.pb.h"
#include "cake/worker.pb.h"
#include "device_session.h"

namespace cake::gpuqueue {

struct ValidationOutcome {
  evidence::Validation validation;
  bool device_fault = false;  // a hang or sticky error: the context is lost
};

ValidationOutcome RunValidation(const Gpu& g, const KernelImage& kernel,
                                const contract::Contract& c, uint64_t seed);

// Runs the small cases once each, without guards or checks, for an instrumented process
// (compute-sanitizer watches the launches). Exact-size allocations, so one element past an
// output is outside every allocation. Returns the cases run, or the first CUDA error.
absl::StatusOr<std::vector<std::string>> RunForSanitizer(const Gpu& g, const KernelImage& kernel,
                                                         const contract::Contract& c,
                                                         uint64_t seed);

// Pure helpers, exposed for tests.
// Number of `element_bytes`-wide elements whose bytes are all still the poison 0xFF.
int64_t CountPoison(const std::string& raw, int element_bytes);

}  // namespace cake::gpuqueue
