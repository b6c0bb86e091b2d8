#!/usr/bin/env bash
# Builds the fuzz targets with every library instrumented (clang, ASan + UBSan + coverage;
# build-fuzz/) and runs each for SECONDS (default 600) from its committed corpus, then merges
# what it found into tests/fuzz/corpus/NAME (minimized: only inputs that add coverage).
#   scripts/fuzz.sh [SECONDS] [NAME ...]     NAME: parse_analyze rpc_request worker_reply portfolio
# Crashes are written to build-fuzz/crashes/NAME/ and make the script exit 1.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
seconds=${1:-600}
shift || true
names=("$@")
[ ${#names[@]} -gt 0 ] || names=(parse_analyze rpc_request worker_reply portfolio)
build="$root/build-fuzz"
CC=clang CXX=clang++ cmake -S "$root" -B "$build" -G Ninja -DCAKE_FUZZ=ON -DCAKE_WERROR=OFF \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build "$build" --target "${names[@]/%/_fuzzer}"
export CAKE_SOURCE_DIR="$root"
# Deep nesting needs long inputs: the schedule text limit is 256 KiB.
max_len=300000
status=0
for name in "${names[@]}"; do
  corpus="$root/tests/fuzz/corpus/$name"
  found="$build/found/$name"
  crashes="$build/crashes/$name"
  mkdir -p "$found" "$crashes"
  echo "== $name: ${seconds}s"
  if ! "$build/bin/${name}_fuzzer" "$found" "$corpus" -max_len=$max_len -max_total_time="$seconds" \
      -timeout=30 -rss_limit_mb=4096 -artifact_prefix="$crashes/" -print_final_stats=1 \
      2>"$build/$name.log"; then
    echo "$name: FAILED (see $build/$name.log and $crashes)"
    status=1
  fi
  grep -E "stat::number_of_executed_units|stat::peak_rss_mb|cov:" "$build/$name.log" | tail -3
  "$build/bin/${name}_fuzzer" -merge=1 "$corpus" "$found" -max_len=$max_len \
    -artifact_prefix="$crashes/" 2>>"$build/$name.log" || true
done
exit $status
