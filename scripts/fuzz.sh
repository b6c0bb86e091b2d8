#!/usr/bin/env bash
# Builds the fuzz targets with every library instrumented (clang, ASan + UBSan + coverage;
# build-fuzz/) and runs each for SECONDS (default 600) from its committed corpus, in libFuzzer's
# fork mode so that a finding does not end the run: every crash, oracle abort, sanitizer report,
# timeout or OOM is saved and the search goes on. Then, per target:
#   * the figures: executions, coverage (cov/ft), corpus size, findings;
#   * each finding's first report with its stack (UBSan prints stacks: print_stacktrace=1);
#   * the new inputs merged into tests/fuzz/corpus/NAME (minimized: only inputs that add
#     coverage), and every finding copied there as regression-<sha1>, so CTest's corpus replay
#     runs it from now on (it fails until the defect is fixed).
#   scripts/fuzz.sh [SECONDS] [NAME ...]     NAME: parse_analyze rpc_request worker_reply portfolio
# Targets run JOBS at a time (default: the number of CPUs). Exit 1 when anything was found.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
seconds=${1:-600}
shift || true
names=("$@")
[ ${#names[@]} -gt 0 ] || names=(parse_analyze rpc_request worker_reply portfolio)
jobs=${JOBS:-$(nproc)}
build="$root/build-fuzz"
CC=clang CXX=clang++ cmake -S "$root" -B "$build" -G Ninja -DCAKE_FUZZ=ON -DCAKE_WERROR=OFF \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build "$build" --target "${names[@]/%/_fuzzer}"
export CAKE_SOURCE_DIR="$root"
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1:report_error_type=1
export ASAN_OPTIONS=abort_on_error=1:symbolize=1:detect_leaks=0
# Deep nesting needs long inputs: the schedule text limit is 256 KiB.
max_len=300000

run_one() {
  local name=$1 found="$build/found/$1" crashes="$build/crashes/$1" log="$build/$1.log"
  rm -rf "$found" "$crashes" "$build/fork-$1"
  mkdir -p "$found" "$crashes" "$build/fork-$1"
  # The first corpus directory receives the new inputs; the committed corpus only seeds.
  (cd "$build/fork-$1" && "$build/bin/${name}_fuzzer" "$found" "$root/tests/fuzz/corpus/$name" \
    -fork=1 -ignore_crashes=1 -ignore_timeouts=1 -ignore_ooms=1 -max_len=$max_len \
    -max_total_time="$seconds" -timeout=30 -rss_limit_mb=4096 -artifact_prefix="$crashes/" \
    >"$log" 2>&1) || true
}

running=0
for name in "${names[@]}"; do
  echo "== $name: ${seconds}s (fork mode, findings do not stop it)"
  run_one "$name" &
  running=$((running + 1))
  if [ "$running" -ge "$jobs" ]; then wait -n || true; running=$((running - 1)); fi
done
wait || true

status=0
for name in "${names[@]}"; do
  log="$build/$name.log"
  crashes="$build/crashes/$name"
  corpus="$root/tests/fuzz/corpus/$name"
  # Fork mode's status lines: "#EXECS: cov: C ft: F corp: N exec/s: E oom/timeout/crash: a/b/c".
  last=$(grep -E '^#[0-9]+: cov:' "$log" | tail -1 || true)
  findings=$(find "$crashes" -type f | wc -l)
  echo "== $name"
  echo "   ${last:-no status line (see $log)}"
  echo "   findings saved: $findings"
  if [ "$findings" -gt 0 ]; then
    status=1
    # Each distinct report once, with its stack.
    grep -hE -A25 'runtime error:|ERROR: AddressSanitizer|ERROR: libFuzzer|oracle:' \
      "$build/fork-$name"/*/log* "$log" 2>/dev/null | head -120 || true
    for f in "$crashes"/*; do
      cp "$f" "$corpus/regression-$(sha1sum "$f" | cut -c1-40)"
    done
    echo "   copied into $corpus as regression-* (CTest replays them)"
  fi
  "$build/bin/${name}_fuzzer" -merge=1 "$corpus" "$build/found/$name" -max_len=$max_len \
    -artifact_prefix="$crashes/" >>"$log" 2>&1 || true
  echo "   corpus now: $(find "$corpus" -type f | wc -l) files"
done
exit $status
