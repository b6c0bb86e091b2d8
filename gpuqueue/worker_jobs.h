// The jobs a cake-worker process runs, one per process. CPU jobs (compile) need no GPU; GPU jobs
// (validate, measure, probe) create the only CUDA context of the process. Each returns a reply;
// none touches the ledger.
#pragma once

#include "cake/worker.pb.h"

namespace cake::gpuqueue {

worker::Reply RunWorkerRequest(const worker::Request& request);

}  // namespace cake::gpuqueue
