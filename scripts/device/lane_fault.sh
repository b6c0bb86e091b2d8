#!/usr/bin/env bash
# The device lane after a fault, on a GPU machine (binaries from scripts/device_bundle.sh): the
# first validate worker is killed (the worker's CAKE_WORKER_FAULT_DIR hook), the lane probes its
# device in a fresh worker before the next job, and the next candidate's validation runs on the
# same device and passes. Prints the lane's events and the devices `cakectl status` reports.
set -uo pipefail
. "$(dirname "$0")/env.sh"
bin=build/device/bin
state=/tmp/caked-lane-fault
rm -rf "$state" /tmp/cake-faults && mkdir -p "$state" /tmp/cake-faults
export CAKE_WORKER_FAULT_DIR=/tmp/cake-faults CAKE_WORKER_TEST_HOOKS=1
touch /tmp/cake-faults/validate.crash  # consumed by the first validate worker: SIGKILL
export CAKE_ADDR="unix:$state/caked.sock" CAKE_TOKEN_FILE="$state/tokens/operator"
"$bin/caked" --state-dir "$state" >"$state/caked.log" 2>&1 &
daemon=$!
for _ in $(seq 1 100); do [ -S "$state/caked.sock" ] && [ -f "$CAKE_TOKEN_FILE" ] && break; sleep 0.1; done
# Any bundled contract will do ($CAKE_LANE_CONTRACT names one; default: the last in name order).
contract=${CAKE_LANE_CONTRACT:-$(ls contracts/*.textproto | tail -1)}
id=$("$bin/cakectl" -o json contract create "$contract" --baseline "examples/$(basename "$contract")" |
  python3 -c 'import json,sys; print(json.load(sys.stdin)["contract_id"])')
echo "== contract $id; its baseline's validate worker is killed"
"$bin/cakectl" watch --until-idle --timeout 300 >/dev/null 2>&1
"$bin/cakectl" -o table demo-agent --contract "$id" --count 2
"$bin/cakectl" watch --until-idle --timeout 400 >/dev/null 2>&1
echo "== status devices"
"$bin/cakectl" -o json status | python3 -c 'import json,sys; s=json.load(sys.stdin); [print(" ", d) for d in s.get("devices", [])]'
kill -TERM $daemon; wait $daemon
echo "== lane events, in order"
python3 - "$state/ledger.db" <<'PY'
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
rows = db.execute("SELECT id, kind, job_id, message FROM events WHERE kind IN "
                  "('job_failed','device_probe_ok','device_probe_failed','device_wait') "
                  "OR (kind = 'state' AND message LIKE 'VALIDATED%') "
                  "OR (kind = 'state' AND message LIKE 'REJECTED%') ORDER BY id").fetchall()
for r in rows: print(" ", r[0], r[1], "job", r[2], "|", r[3][:160])
kinds = [r[1] for r in rows]
ok = ("job_failed" in kinds and "device_probe_ok" in kinds
      and kinds.index("device_probe_ok") > kinds.index("job_failed")
      and any(r[1] == "state" and r[3].startswith("VALIDATED") for r in rows
              if r[0] > rows[kinds.index("device_probe_ok")][0]))
print("== lane fault check:", "passed (fault, probe, next job validated on the device)" if ok else "FAILED")
sys.exit(0 if ok else 1)
PY
rc=$?
grep -E "started|probe|answers|execution device" "$state/caked.log" | head -40
cp "$state/caked.log" "$out/lane_fault_caked.log"
exit $rc
