// The jobs a cake-worker process runs, one per process. CPU jobs (compile) need no GPU; GPU jobs
// (validate, sanitize, measure, probe) create the only CUDA context of the process. Each returns
// a reply; none touches the ledger.
#pragma once

#include <string>

#include "cake/worker.pb.h"

namespace cake::gpuqueue {

worker::Reply RunWorkerRequest(const worker::Request& request);

// The process compute-sanitizer watches during a sanitize job: runs the small catalogue cases of
// the validate job in `request_file` (a framed Request) once each. Prints one "case: ..." line
// per case on stdout; returns the process exit code (0, or 3 with the error on stderr).
int RunSanitizeTarget(const std::string& request_file);

// Parses compute-sanitizer's output for `tool`: the number of errors it reports ("ERROR SUMMARY:
// N errors", or racecheck's "(E errors, W warnings)"), or -1 when it printed no summary.
int SanitizerErrors(const std::string& tool, const std::string& output);

}  // namespace cake::gpuqueue
