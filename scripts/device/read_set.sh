#!/usr/bin/env bash
# GPU jobs under the narrow worker read set, on a GPU machine from binaries built elsewhere
# (carried build/device and .toolchain): the GPU-labelled tests, then the demo round with caked as
# root, so workers run as uid 65534 under Landlock reading only the system's trees, the toolkit,
# the worker's folder and its library folders. compute-sanitizer runs inside those workers too.
set -uo pipefail
. "$(dirname "$0")/env.sh"
export CAKE_COMMIT=${CAKE_COMMIT:-unknown}
describe_device > "$out/environment_tests.txt"
rc=0
# GPU_TESTS names the tests to run first (default: all four; empty: none).
for t in ${GPU_TESTS-hopper_witness_test measure_protocol_test adversarial_corpus_test kmeans_adversarial_gpu_test}; do
  start=$(date +%s)
  timeout "${TEST_TIMEOUT:-150}" "./build/device/bin/$t" > "$out/$t.log" 2>&1
  code=$?
  echo "$t: exit $code in $(($(date +%s) - start)) s ($(grep -E '^\[  (PASSED|FAILED|SKIPPED) ' "$out/$t.log" | tr '\n' ' '))" |
    tee -a "$out/gpu_tests.txt"
  [ $code -eq 0 ] || rc=1
done
CAKE_DEMO_STATE_DIR=/tmp/caked-demo-state  # scripts/device/demo.sh's
CAKE_DEMO_SEARCH_BUDGET=${CAKE_DEMO_SEARCH_BUDGET:-90s} CAKE_DEMO_CANDIDATES=${CAKE_DEMO_CANDIDATES:-3} DEMO_TIMEOUT=${DEMO_TIMEOUT:-360} ./scripts/device/demo.sh || rc=1
echo "--- what the sandbox let workers read (caked.log)" | tee -a "$out/gpu_tests.txt"
grep -E "confined workers read|worker sandbox|workers run a copy|cannot reach" "$out/caked.log" | head -5 |
  tee -a "$out/gpu_tests.txt"
# Which job kinds ran confined, and how they ended.
python3 - "$out/ledger.db" <<'PY' | tee -a "$out/gpu_tests.txt"
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
for kind, state, n in db.execute("SELECT kind, state, count(*) FROM jobs GROUP BY kind, state"):
    print(f"jobs: {kind} {state} x{n}")
PY
# Who owns the artifact store and what compile jobs published (server/artifact_ownership.h).
{
  echo "--- artifact store ownership"
  stat -c '%a %U:%G %n' "$CAKE_DEMO_STATE_DIR/artifacts" "$CAKE_DEMO_STATE_DIR/work" 2>/dev/null
  find "$CAKE_DEMO_STATE_DIR/artifacts" -mindepth 2 -maxdepth 2 -type d -exec stat -c '%a %U:%G %n' {} + 2>/dev/null | head -4
} | tee -a "$out/gpu_tests.txt"
exit $rc
