#!/usr/bin/env bash
# Runs the Hopper witness (tests/gpu/hopper_witness_test) on a machine with an sm_90 GPU, from a
# build made elsewhere: carried build/device (scripts/device_bundle.sh: stripped binaries and the shared libraries
# the image lacks) and .toolchain (cuobjdump). Writes evidence files under $OUT (or ./evidence-out).
set -uo pipefail
. "$(dirname "$0")/env.sh"
export CAKE_EVIDENCE_DIR="$out"
describe_device | tee "$out/environment.txt"
./build/device/bin/hopper_witness_test --gtest_output="json:$out/gtest.json" 2>&1 | tee "$out/witness.log"
rc=${PIPESTATUS[0]}
if command -v compute-sanitizer >/dev/null || [ -x /usr/local/cuda/bin/compute-sanitizer ]; then
  cs=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
  for tool in memcheck racecheck; do
    CAKE_EVIDENCE_DIR= "$cs" --tool "$tool" --error-exitcode 9 ./build/device/bin/hopper_witness_test \
      --gtest_filter='HopperWitness.BundledExampleBf16Out:HopperWitness.SingleStageX2Loads' \
      > "$out/sanitizer_$tool.log" 2>&1
    echo "compute-sanitizer $tool: exit $?" | tee -a "$out/environment.txt"
    tail -3 "$out/sanitizer_$tool.log"
  done
fi
exit $rc
