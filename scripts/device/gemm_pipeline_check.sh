#!/usr/bin/env bash
# The staged warp-GEMM mainloop on an sm_90 GPU, from a build made elsewhere (build/device,
# .toolchain): the Hopper witness and the KMeans GPU test (numerics against CPU oracles, tails
# included), compute-sanitizer racecheck and synccheck over the witness's schedules, then the
# benchmark (scripts/device/gemm_bench.sh). Writes logs and JSON under $OUT (or ./evidence-out).
set -uo pipefail
. "$(dirname "$0")/env.sh"
export CAKE_WORKER="$PWD/build/device/bin/cake-worker" CAKE_SOURCE_DIR="$PWD"
status=0
./build/device/bin/hopper_witness_test > "$out/witness.log" 2>&1 || status=1
echo "hopper_witness_test: $(tail -1 "$out/witness.log")"
./build/device/bin/kmeans_adversarial_gpu_test > "$out/kmeans_gpu.log" 2>&1 || status=1
echo "kmeans_adversarial_gpu_test: $(tail -1 "$out/kmeans_gpu.log")"
cs=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
for tool in racecheck synccheck; do
  "$cs" --tool "$tool" --error-exitcode 9 ./build/device/bin/hopper_witness_test \
    > "$out/sanitizer_$tool.log" 2>&1
  rc=$?
  [ $rc -ne 0 ] && status=1
  echo "compute-sanitizer $tool over hopper_witness_test: exit $rc; $(grep -E 'ERROR SUMMARY' "$out/sanitizer_$tool.log" | tail -1)"
done
"$(dirname "$0")/gemm_bench.sh" "$@" | tail -14
exit $status
