#!/usr/bin/env bash
# Runs the evidence-authority checks on a GPU machine from binaries built elsewhere (carried
# build/device and .toolchain): the protocol's GPU tests, the adversarial corpus through real
# worker processes, and cake-protocol-bench (A/A and planted slowdown). Writes logs and JSON to
# $OUT. BENCH_ARGS passes options to the bench.
set -uo pipefail
. "$(dirname "$0")/env.sh"
export CAKE_WORKER="$PWD/build/device/bin/cake-worker" CAKE_SOURCE_DIR="$PWD"
export CAKE_COMMIT=${CAKE_COMMIT:-$(git rev-parse --short HEAD 2>/dev/null || echo unknown)}
{
  echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo "commit: $CAKE_COMMIT"
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.applications.graphics,temperature.gpu,power.draw --format=csv
  "$CAKE_NVCC" --version | tail -2
  command -v compute-sanitizer || ls /usr/local/cuda/bin/compute-sanitizer
} > "$out/environment.txt" 2>&1
rc=0
./build/device/bin/measure_protocol_test 2>&1 | tee "$out/measure_protocol.log" | grep -E "^\[ *(OK|FAILED|SKIPPED) |eager|graph|default SM|Failure|error" || true
[ "${PIPESTATUS[0]}" -eq 0 ] || rc=1
./build/device/bin/adversarial_corpus_test 2>&1 | tee "$out/adversarial_corpus.log" | grep -E "^\[ *(OK|FAILED|SKIPPED) |control vs|Failure|Expected|Which is|error" || true
[ "${PIPESTATUS[0]}" -eq 0 ] || rc=1
./build/device/bin/cake-protocol-bench ${BENCH_ARGS:-} 2>&1 | tee "$out/protocol_bench.log"
[ "${PIPESTATUS[0]}" -eq 0 ] || rc=1
exit $rc
