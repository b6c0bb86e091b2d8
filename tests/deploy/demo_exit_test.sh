#!/usr/bin/env bash
# `make demo` tells the truth by its exit code: 0 when a candidate reached the furthest state the
# machine allows (Compiled without a GPU), non-zero with a one-line reason when every candidate
# was rejected. The rejecting run uses an nvcc that fails every compile with an error about the
# generated source (a verdict on the schedule, as a real compile error is).
#   tests/deploy/demo_exit_test.sh BUILD_DIR
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
build=${1:-build}
work=$(mktemp -d /tmp/cake-demo-exit.XXXXXX)
chmod 755 "$work"
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/toolkit/bin"
cat > "$work/toolkit/bin/nvcc" <<'SH'
#!/bin/sh
if [ "$1" = "--version" ]; then
  echo "Cuda compilation tools, release 13.0, V13.0.88"
  exit 0
fi
for last in "$@"; do :; done
echo "$last(1): error: this nvcc rejects every kernel (the demo exit-code test)" >&2
exit 1
SH
chmod 755 "$work/toolkit/bin/nvcc"
fail=0
mkdir -p "$work/rejecting" "$work/compiling"

out=$(CAKE_NVCC="$work/toolkit/bin/nvcc" CAKE_DEMO_CANDIDATES=1 CAKE_DEMO_CONTRACTS=gemm_bf16 \
  CAKE_DEMO_STATE="$work/rejecting" "$root/scripts/demo.sh" "$build" 2>&1)
rc=$?
if [ "$rc" -eq 0 ]; then
  echo "FAIL: the demo exited 0 with every candidate rejected"; fail=1
fi
echo "$out" | grep -qE "== demo verdict: FAILED: no candidate reached Compiled: ([0-9]+) of \\1 rejected, the first: " ||
  { echo "FAIL: no one-line reason; the demo printed:"; echo "$out" | tail -20; fail=1; }

out=$(CAKE_DEMO_CANDIDATES=1 CAKE_DEMO_CONTRACTS=gemm_bf16 CAKE_DEMO_STATE="$work/compiling" \
  "$root/scripts/demo.sh" "$build" 2>&1)
rc=$?
if [ "$rc" -ne 0 ]; then
  echo "FAIL: the demo exited $rc though it compiles:"; echo "$out" | tail -20; fail=1
fi
echo "$out" | grep -qE "== demo verdict: [1-9][0-9]* of [0-9]+ candidate\\(s\\) reached Compiled \\(without an execution device\\)" ||
  { echo "FAIL: the passing demo's verdict is missing:"; echo "$out" | tail -20; fail=1; }
[ $fail -eq 0 ] && echo "demo exit codes: ok"
exit $fail
