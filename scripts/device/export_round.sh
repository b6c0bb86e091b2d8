#!/usr/bin/env bash
# Exports on a GPU machine, from binaries built elsewhere (carried build/device and .toolchain):
#   scripts/device/export_round.sh
# caked gets two contracts: the bundled GEMM contract with a TMA baseline (point 01 of the
# built-in space, so that its launch binds tensor maps) and the bundled KMeans contract. Once
# each baseline is the validated incumbent, one challenger is proposed so that the ledger holds a
# paired timing of the incumbent; then `cakectl export` writes each incumbent (sm_90: the
# qualified target), twice, and the two folders must be byte-identical. The consumer example is
# built against each export and run from C++ (oracle, graph replay with changed live shapes, the
# TMA descriptor test with and without re-encoding, a context reset, timing) and from Python on
# PyTorch tensors. Saves everything to $OUT.
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
"$bin/cakectl" space gemm_bf16_tn --out /tmp/gemm_space >/dev/null
"$bin/cakectl" space kmeans_assign --out /tmp/kmeans_space >/dev/null
create() {  # NAME BASELINE
  "$bin/cakectl" -o json contract create "contracts/$1.textproto" --baseline "$2" |
    python3 -c 'import json,sys; print(json.load(sys.stdin)["contract_id"])'
}
gemm=$(create gemm_bf16 /tmp/gemm_space/01.textproto)
kmeans=$(create kmeans_assign examples/kmeans_assign.textproto)
echo "gemm contract $gemm (baseline: $(sed -n 2p /tmp/gemm_space/labels.txt)); kmeans contract $kmeans" | tee "$log"
"$bin/cakectl" watch --until-idle --timeout 300 >/dev/null 2>&1
# One challenger each: its paired run times the incumbent as its other arm.
"$bin/cakectl" propose /tmp/gemm_space/00.textproto --contract "$gemm" --key export-gemm >>"$log" 2>&1
"$bin/cakectl" propose /tmp/kmeans_space/01.textproto --contract "$kmeans" --key export-kmeans >>"$log" 2>&1
"$bin/cakectl" watch --until-idle --timeout 400 >/dev/null 2>&1
"$bin/cakectl" -o table status 2>&1 | tee -a "$log"
for pair in "gemm:$gemm" "kmeans:$kmeans"; do
  name=${pair%%:*} id=${pair#*:}
  echo "== export $name ($id)" | tee -a "$log"
  "$bin/cakectl" -o table export "$id" --out "/tmp/export_$name" 2>&1 | tee -a "$log"
  "$bin/cakectl" -o table export "$id" --out "/tmp/export_${name}_again" >/dev/null 2>&1
  if diff -r "/tmp/export_$name" "/tmp/export_${name}_again" >/dev/null; then
    echo "re-export: byte-identical ($(find "/tmp/export_$name" -type f | wc -l) files)" | tee -a "$log"
  else
    echo "re-export: DIFFERS" | tee -a "$log"
  fi
  echo "== unqualified sm_120f without the flag" | tee -a "$log"
  "$bin/cakectl" export "$id" --out "/tmp/export_${name}_sm120" --targets sm_120f 2>&1 | tee -a "$log"
  cp "/tmp/export_$name/manifest.json" "$out/${name}_manifest.json"
  cmake -S /tmp/export_"$name" -B /tmp/export_"$name"/build -G Ninja >/dev/null 2>&1 &&
    cmake --build /tmp/export_"$name"/build >/dev/null 2>&1 || echo "export build FAILED" | tee -a "$log"
  cmake -S examples/export_consumer -B "/tmp/consumer_$name" -G Ninja -DCAKE_EXPORT_DIR="/tmp/export_$name" \
    >/dev/null 2>&1 && cmake --build "/tmp/consumer_$name" 2>&1 | tail -1 | tee -a "$log"
  "/tmp/consumer_$name/export_consumer_checks" --refusals 2>&1 | tee -a "$log"
done
c=/tmp/consumer_gemm/export_consumer_run
echo "== C++ gemm" | tee -a "$log"
"$c" /tmp/export_gemm --capacity M=1024,N=768,K=1032 --live M=777,N=333,K=520 --descriptor \
  --time M=4096,N=4096,K=4096 2>&1 | tee -a "$log"
"$c" /tmp/export_gemm --capacity M=256,N=256,K=256 --reset 2>&1 | tee -a "$log"
echo "== C++ kmeans" | tee -a "$log"
/tmp/consumer_kmeans/export_consumer_run /tmp/export_kmeans --capacity B=2,N=4096,K=1000,D=72 \
  --live B=1,N=3001,K=333,D=72 --time B=8,N=32768,K=512,D=128 2>&1 | tee -a "$log"
echo "== Python" | tee -a "$log"
python3 examples/export_consumer/run_export.py /tmp/export_gemm M=1024,N=768,K=1032 M=777,N=333,K=520 2>&1 | tee -a "$log"
python3 examples/export_consumer/run_export.py /tmp/export_kmeans B=2,N=4096,K=1000,D=72 B=1,N=3001,K=333,D=72 2>&1 | tee -a "$log"
echo "== the ledger's timing of the same incumbents (eager rows)" | tee -a "$log"
python3 - "$out" "$log" <<'PY' | tee -a "$log"
import json, re, sys
log = open(sys.argv[2]).read()
timed = {"gemm": ("square_4k", "K=4096,M=4096,N=4096"), "kmeans": ("medium", "B=8,D=128,K=512,N=32768")}
for name in ("gemm", "kmeans"):
    m = json.load(open(f"{sys.argv[1]}/{name}_manifest.json"))
    t = m.get("ledger_timing")
    if not t:
        print(f"{name}: the ledger holds no timing of {m['incumbent']}")
        continue
    print(f"{name}: incumbent {m['incumbent']} as the {t['arm']} arm of {t['measurement_of']}'s run {t['run']} on {t['device']}")
    for r in t["rows"]:
        print(f"  {r['row']} {r['mode']}/{r['cache']}: median {r['median_us']:.2f} us over {r['samples']} samples")
    row, shape = timed[name]
    ours = re.search(r"TIME " + re.escape(shape) + r" entry '[^']*': median ([0-9.]+) us", log)
    ledger = [r for r in t["rows"] if r["row"] == row and r["mode"] == "eager" and r["cache"] == "warm"]
    if ours and ledger:
        print(f"  export's eager warm median at {row}: {float(ours.group(1)):.2f} us; ledger "
              f"{ledger[0]['median_us']:.2f} us; ratio {float(ours.group(1)) / ledger[0]['median_us']:.4f}")
    else:
        print(f"  no side-by-side time for {row} (export timed: {bool(ours)}, ledger row: {bool(ledger)})")
PY
kill -TERM "$daemon"; wait "$daemon" 2>/dev/null
cp "$state/caked.log" "$out/caked.log"
"$bin/cakectl" --version >/dev/null 2>&1
