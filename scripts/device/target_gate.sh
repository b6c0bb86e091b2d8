#!/usr/bin/env bash
# The execution-target gate on a GPU machine, from binaries built elsewhere (carried build/device
# and .toolchain):  scripts/device/target_gate.sh NAME
# caked gets the bundled contract NAME (contracts/NAME.textproto, baseline examples/NAME.textproto)
# whose execution target the machine's device does not run. Its baseline must stop at compiled,
# its note naming the target, the device found and the missing witness; measuring it and
# searching the contract must be refused; nothing may be validated or timed. Saves the
# candidate, the refusals and the daemon log to $OUT.
set -uo pipefail
[ $# -eq 1 ] || { sed -n 2,9p "$0"; exit 2; }
name=$1
. "$(dirname "$0")/env.sh"
bin=build/device/bin
state=/tmp/caked-gate-state
rm -rf "$state" && mkdir -p "$state"
describe_device >"$out/environment.txt"
export CAKE_ADDR="unix:$state/caked.sock" CAKE_TOKEN_FILE="$state/tokens/operator"
"$bin/caked" --state-dir "$state" --cpu-workers "${CPU_WORKERS:-8}" >>"$state/caked.log" 2>&1 &
daemon=$!
for _ in $(seq 1 200); do [ -S "$state/caked.sock" ] && [ -f "$CAKE_TOKEN_FILE" ] && break; sleep 0.1; done
id=$("$bin/cakectl" -o json contract create "contracts/$name.textproto" \
  --baseline "examples/$name.textproto" |
  python3 -c 'import json,sys; print(json.load(sys.stdin)["contract_id"])')
echo "contract $name: $id" | tee "$out/gate.txt"
"$bin/cakectl" watch --until-idle --timeout 240 >/dev/null 2>&1
"$bin/cakectl" -o json candidates --contract "$id" >"$out/candidates.json" 2>&1
"$bin/cakectl" -o table candidates --contract "$id" 2>&1 | tee -a "$out/gate.txt"
cand=$(python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); c=d.get("candidates", d); print(c[0]["id"] if isinstance(c, list) and c else "")' "$out/candidates.json")
{ echo "== measure $cand"; "$bin/cakectl" measure "$cand" --key gate-1; echo "exit $?"
  echo "== search"; "$bin/cakectl" search --contract "$id" --budget 1m; echo "exit $?"; } 2>&1 | tee -a "$out/gate.txt"
kill -TERM "$daemon"; wait "$daemon" 2>/dev/null
python3 - "$state/ledger.db" <<'PY' | tee -a "$out/gate.txt"
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
for kind, state, n in db.execute("SELECT kind, state, count(*) FROM jobs GROUP BY kind, state"):
    print(f"jobs: {kind} {state} x{n}")
print("measurements:", db.execute("SELECT count(*) FROM measurements").fetchone()[0])
PY
cp "$state/caked.log" "$out/caked.log"
