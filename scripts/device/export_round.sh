#!/usr/bin/env bash
# Exports on a GPU machine, from binaries built elsewhere (carried build/device and .toolchain):
#   scripts/device/export_round.sh
# For every workloads/*/export/round.env (which contract, baseline, challenger and shapes): caked
# gets the bundled contract; once its baseline is the validated incumbent, one challenger is
# proposed so that the ledger holds a paired timing of the incumbent; `cakectl export` writes the
# incumbent (sm_90: the qualified target) twice, and the two folders must be byte-identical; an
# unqualified target without --allow-unqualified must be refused. The consumer example is built
# against each export and run from C++ (oracle, graph replay with changed live shapes, the TMA
# descriptor test with and without re-encoding, a context reset, timing) and from Python on
# PyTorch tensors; the export's time is printed beside the ledger's. Saves everything to $OUT.
set -uo pipefail
. "$(dirname "$0")/env.sh"
bin=build/device/bin
state=/tmp/caked-export-state
rm -rf "$state" && mkdir -p "$state"
describe_device >"$out/environment.txt"
export CAKE_ADDR="unix:$state/caked.sock" CAKE_TOKEN_FILE="$state/tokens/operator"
"$bin/caked" --state-dir "$state" --cpu-workers "${CPU_WORKERS:-12}" >>"$state/caked.log" 2>&1 &
daemon=$!
for _ in $(seq 1 200); do [ -S "$state/caked.sock" ] && [ -f "$CAKE_TOKEN_FILE" ] && break; sleep 0.1; done
log="$out/export_round.txt"
: >"$log"
rounds=(workloads/*/export/round.env)
declare -A contract_of
schedule() {  # POINT OPERATION CONTRACT -> a schedule file
  if [ "$1" = example ]; then echo "examples/$3.textproto"; return; fi
  [ -d "/tmp/space_$2" ] || "$bin/cakectl" space "$2" --out "/tmp/space_$2" >/dev/null
  echo "/tmp/space_$2/$1.textproto"
}
for round in "${rounds[@]}"; do
  (
    . "$round"
    id=$("$bin/cakectl" -o json contract create "contracts/$CONTRACT.textproto" \
      --baseline "$(schedule "$BASELINE" "$OPERATION" "$CONTRACT")" |
      python3 -c 'import json,sys; print(json.load(sys.stdin)["contract_id"])')
    echo "$CONTRACT $id"
  ) >>"$state/contracts.txt"
done
cat "$state/contracts.txt" | tee -a "$log"
"$bin/cakectl" watch --until-idle --timeout "${WAIT_BASELINES:-300}" >/dev/null 2>&1
for round in "${rounds[@]}"; do
  (
    . "$round"
    id=$(awk -v c="$CONTRACT" '$1 == c {print $2}' "$state/contracts.txt")
    "$bin/cakectl" propose "$(schedule "$CHALLENGER" "$OPERATION" "$CONTRACT")" --contract "$id" \
      --key "export-$CONTRACT"
  ) >>"$log" 2>&1
done
"$bin/cakectl" watch --until-idle --timeout "${WAIT_CHALLENGERS:-300}" >/dev/null 2>&1
"$bin/cakectl" -o table status 2>&1 | tee -a "$log"
for round in "${rounds[@]}"; do
  (
    . "$round"
    id=$(awk -v c="$CONTRACT" '$1 == c {print $2}' "$state/contracts.txt")
    x=/tmp/export_$CONTRACT c=/tmp/consumer_$CONTRACT
    echo "== export $CONTRACT ($id)"
    "$bin/cakectl" -o table export "$id" --out "$x" 2>&1
    "$bin/cakectl" -o table export "$id" --out "${x}_again" >/dev/null 2>&1
    if diff -r "$x" "${x}_again" >/dev/null; then
      echo "re-export: byte-identical ($(find "$x" -type f | wc -l) files)"
    else
      echo "re-export: DIFFERS"
    fi
    echo "== sm_120f without --allow-unqualified"
    "$bin/cakectl" export "$id" --out "${x}_sm120" --targets sm_120f 2>&1
    cp "$x/manifest.json" "$out/${CONTRACT}_manifest.json"
    { cmake -S "$x" -B "$x/build" -G Ninja && cmake --build "$x/build"; } >/dev/null 2>&1 ||
      echo "export build FAILED"
    { cmake -S examples/export_consumer -B "$c" -G Ninja -DCAKE_EXPORT_DIR="$x" &&
        cmake --build "$c"; } >"$out/${CONTRACT}_consumer_build.txt" 2>&1 || echo "consumer build FAILED"
    "$c/export_consumer_checks" --refusals 2>&1
    echo "== C++ $CONTRACT"
    descriptor=()
    [ -n "$DESCRIPTOR" ] && descriptor=(--descriptor $DESCRIPTOR)
    "$c/export_consumer_run" "$x" --capacity "$CAPACITY" --live "$LIVE" "${descriptor[@]}" \
      --time "$TIME" 2>&1
    "$c/export_consumer_run" "$x" --capacity "$LIVE" --reset 2>&1
    echo "== Python $CONTRACT"
    python3 examples/export_consumer/run_export.py "$x" "$CAPACITY" "$LIVE" 2>&1
  ) 2>&1 | tee -a "$log"
done
echo "== the ledger's timing of the same incumbents, beside the export's" | tee -a "$log"
for round in "${rounds[@]}"; do
  ( . "$round"; echo "$CONTRACT $ROW $TIME" ) >>"$state/rows.txt"
done
python3 - "$out" "$log" "$state/rows.txt" <<'PY' | tee -a "$log"
import json, re, sys
log = open(sys.argv[2]).read()
for line in open(sys.argv[3]):
    contract, row, shape = line.split()
    try:
        m = json.load(open(f"{sys.argv[1]}/{contract}_manifest.json"))
    except OSError:
        print(f"{contract}: no export")
        continue
    t = m.get("ledger_timing")
    if not t:
        print(f"{contract}: the ledger holds no timing of {m['incumbent']}")
        continue
    print(f"{contract}: incumbent {m['incumbent']}, the {t['arm']} arm of {t['measurement_of']}'s run {t['run']} on {t['device']}")
    for r in t["rows"]:
        print(f"  {r['row']} {r['mode']}/{r['cache']}: median {r['median_us']:.2f} us over {r['samples']} samples")
    ours = re.search(r"TIME " + re.escape(shape) + r" entry '[^']*': median ([0-9.]+) us", log)
    ledger = [r for r in t["rows"] if r["row"] == row and r["mode"] == "eager" and r["cache"] == "warm"]
    if ours and ledger:
        print(f"  the export's eager warm median at {row}: {float(ours.group(1)):.2f} us; the ledger's "
              f"{ledger[0]['median_us']:.2f} us; ratio {float(ours.group(1)) / ledger[0]['median_us']:.4f}")
    else:
        print(f"  no side-by-side time for {row} (export timed: {bool(ours)}, ledger row: {bool(ledger)})")
PY
kill -TERM "$daemon"; wait "$daemon" 2>/dev/null
cp "$state/caked.log" "$out/caked.log"
