#!/usr/bin/env bash
# The main job (compiler stage): analyze and compile the bundled warp GEMM for every admitted
# target, printing each lowering receipt. SM120/SM121 objects are compiled and inspected only.
set -euo pipefail
build=${1:-build}
root=$(cd "$(dirname "$0")/.." && pwd)
store="${CAKE_STORE:-$root/.state/artifacts}"
for t in sm_120f sm_121a sm_120a sm_90; do
  echo "== cakec compile examples/gemm_bf16.textproto --target $t"
  "$build/bin/cakec" compile "$root/examples/gemm_bf16.textproto" --target "$t" --store "$store"
done
