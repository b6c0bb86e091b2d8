#!/usr/bin/env bash
# The daemon's search on a GPU machine, from binaries built elsewhere (carried build/device and
# .toolchain): caked (as root: workers as uid 65534) gets one bundled contract (SEARCH_CONTRACT,
# default gemm_bf16) and `cakectl search --budget SEARCH_BUDGET`; after CRASH_AFTER seconds caked
# is killed with SIGKILL and started again on the same state, and the search must resume. Saves
# the search's progress and summary, its JSON report, the calibrations, the candidates, the
# daemon log and the ledger to $OUT.
set -uo pipefail
. "$(dirname "$0")/env.sh"
bin=build/device/bin
name=${SEARCH_CONTRACT:-gemm_bf16}
state=/tmp/caked-search-state
rm -rf "$state" && mkdir -p "$state"
describe_device > "$out/environment.txt"
export CAKE_ADDR="unix:$state/caked.sock" CAKE_TOKEN_FILE="$state/tokens/operator"
start_daemon() {
  rm -f "$state/caked.sock"
  "$bin/caked" --state-dir "$state" --cpu-workers "${CPU_WORKERS:-12}" >>"$state/caked.log" 2>&1 &
  daemon=$!
  for _ in $(seq 1 200); do [ -S "$state/caked.sock" ] && [ -f "$CAKE_TOKEN_FILE" ] && break; sleep 0.1; done
}
start_daemon
id=$("$bin/cakectl" -o json contract create "contracts/$name.textproto" --baseline "examples/$name.textproto" |
  python3 -c 'import json,sys; print(json.load(sys.stdin)["contract_id"])')
echo "contract $name: $id" | tee "$out/search.txt"
sid=$("$bin/cakectl" search --contract "$id" --budget "${SEARCH_BUDGET:-8m}" --batch "${SEARCH_BATCH:-6}" \
  --detach 2>>"$out/search.txt")
echo "search $sid" | tee -a "$out/search.txt"
rc=0
if [ -n "${CRASH_AFTER:-}" ]; then
  "$bin/cakectl" -o table search --follow "$sid" >/dev/null 2>>"$out/progress.txt" &
  follower=$!
  sleep "$CRASH_AFTER"
  kill "$follower" 2>/dev/null
  before=$(python3 -c 'import sqlite3,sys; print(sqlite3.connect(sys.argv[1]).execute("SELECT count(*) FROM measurements").fetchone()[0])' "$state/ledger.db")
  echo "== SIGKILL caked after ${CRASH_AFTER} s ($before measurement rows recorded)" | tee -a "$out/search.txt" "$out/progress.txt"
  kill -9 "$daemon"; wait "$daemon" 2>/dev/null
  start_daemon
  grep -E "resumed|recovered" "$state/caked.log" | tail -3 | tee -a "$out/search.txt"
  after=$(python3 -c 'import sqlite3,sys; print(sqlite3.connect(sys.argv[1]).execute("SELECT count(*) FROM measurements").fetchone()[0])' "$state/ledger.db")
  echo "== restarted: $after measurement rows ($before before the kill)" | tee -a "$out/search.txt"
  [ "$after" -ge "$before" ] || rc=1
fi
"$bin/cakectl" -o table search --follow "$sid" >>"$out/search.txt" 2>>"$out/progress.txt" || rc=1
"$bin/cakectl" -o json search --follow "$sid" >"$out/search.json" 2>/dev/null
# What was recorded, before anything else can run out of time.
"$bin/cakectl" -o table candidates --contract "$id" >"$out/candidates.txt" 2>&1
"$bin/cakectl" -o table status >"$out/status.txt" 2>&1
kill -TERM "$daemon"; wait "$daemon" 2>/dev/null
python3 - "$state/ledger.db" <<'PY' | tee -a "$out/search.txt"
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
print("calibrations (device, samples, held-out tau):")
for row in db.execute("SELECT device, samples, round(held_out_tau, 3) FROM calibrations ORDER BY id"):
    print("  ", *row)
for kind, state, n in db.execute("SELECT kind, state, count(*) FROM jobs GROUP BY kind, state"):
    print(f"jobs: {kind} {state} x{n}")
print("promotions:", [r for r in db.execute("SELECT candidate_id, previous_id, substr(reason, 1, 80) FROM promotions")])
PY
python3 -c 'import sqlite3,sys; sqlite3.connect(sys.argv[1]).backup(sqlite3.connect(sys.argv[2]))' "$state/ledger.db" "$out/ledger.db"
cp "$state/caked.log" "$out/caked.log"
exit $rc
