// cake-sandbox-probe: asks cake-worker for its devices under the worker sandbox, once whole and
// once without each layer, and prints which layer (if any) a driver trips over. For an operator
// whose GPU machine answers "no execution device" only when workers are confined.
//   cake-sandbox-probe --worker build/bin/cake-worker [--state-dir DIR]
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "CLI/CLI.hpp"
#include "gpuqueue/sandbox.h"
#include "gpuqueue/worker_sandbox.h"

namespace fs = std::filesystem;

int main(int argc, char** argv) {
  std::string worker, state_dir = "/tmp/cake-sandbox-probe";
  bool inherit_env = false;
  CLI::App app{"cake-sandbox-probe: which worker sandbox layer, if any, stops the GPU probe"};
  app.add_option("--worker", worker, "cake-worker executable")->required();
  app.add_option("--state-dir", state_dir, "protected scratch state directory");
  app.add_flag("--inherit-env", inherit_env, "pass this process's whole environment");
  CLI11_PARSE(app, argc, argv);
  worker = fs::absolute(worker).string();
  fs::create_directories(fs::path(state_dir) / "work");

  struct Variant {
    const char* name;
    bool landlock, scopes, seccomp;
  };
  const std::vector<Variant> variants = {{"whole sandbox", true, true, true},
                                         {"without landlock scopes", true, false, true},
                                         {"without landlock", false, false, true},
                                         {"without seccomp", true, true, false},
                                         {"without landlock and seccomp", false, false, false}};
  std::printf("%s\n", cake::gpuqueue::DescribeSandboxSupport().c_str());
  int i = 0;
  for (const Variant& v : variants) {
    cake::gpuqueue::SandboxSpec spec;
    spec.job_dir = (fs::path(state_dir) / "work" / ("probe-" + std::to_string(i++))).string();
    spec.protected_dirs = {state_dir};
    spec.gpu = true;
    spec.landlock = v.landlock;
    spec.landlock_scopes = v.scopes;
    spec.seccomp = v.seccomp;
    cake::gpuqueue::SandboxOptions opts;
    opts.worker_path = worker;
    opts.timeout = std::chrono::seconds(60);
    opts.confine = spec;
    if (inherit_env)
      for (char** e = environ; *e != nullptr; ++e) {
        const std::string kv = *e;
        const size_t eq = kv.find('=');
        if (eq != std::string::npos) opts.env[kv.substr(0, eq)] = kv.substr(eq + 1);
      }
    else
      for (const char* pass : {"PATH", "LD_LIBRARY_PATH", "CAKE_LIBCUDA", "CAKE_LIBNVML",
                               "CUDA_VISIBLE_DEVICES", "NVIDIA_VISIBLE_DEVICES"})
        if (const char* val = getenv(pass)) opts.env[pass] = val;
    cake::worker::Request probe;
    probe.mutable_probe();
    auto reply = cake::gpuqueue::RunInWorker(probe, opts);
    std::string outcome;
    if (!reply.ok())
      outcome = "worker failed: " + std::string(reply.status().message());
    else if (reply->probe().device_count() == 0)
      outcome = "no device: " + reply->probe().reason();
    else
      outcome = "device: " + reply->probe().devices(0);
    std::printf("%-30s %s\n", v.name, outcome.c_str());
  }
  return 0;
}
