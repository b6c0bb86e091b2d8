#!/usr/bin/env bash
# Runs the main job (scripts/demo.sh) on a GPU machine from binaries built elsewhere: carried
# build/device (scripts/device_bundle.sh) and .toolchain. Saves the transcript, ledger and daemon log to $OUT.
set -uo pipefail
. "$(dirname "$0")/env.sh"
export CAKE_DEMO_STATE=/tmp/caked-demo-state
rm -rf "$CAKE_DEMO_STATE" && mkdir -p "$CAKE_DEMO_STATE"
{
  echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo "commit: ${CAKE_COMMIT:-unknown}"
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu,power.draw --format=csv
  "$CAKE_NVCC" --version | tail -2
} > "$out/environment.txt"
timeout "${DEMO_TIMEOUT:-900}" ./scripts/demo.sh build/device 2>&1 | tee "$out/demo.log"
rc=${PIPESTATUS[0]}
# On a GPU machine the round must reach the device: no failed job, at least one measurement.
python3 - "$CAKE_DEMO_STATE/ledger.db" <<'PY' || rc=1
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
failed = db.execute("SELECT count(*) FROM jobs WHERE state = 'FAILED'").fetchone()[0]
measured = db.execute("SELECT count(*) FROM measurements").fetchone()[0]
print(f"== demo round check: {failed} failed job(s), {measured} measurement(s)")
sys.exit(0 if failed == 0 and measured > 0 else 1)
PY
# A retried Measure with one idempotency key queues one GPU run, not two (the daemon restarted on
# the demo's state; the first eligible non-incumbent candidate is measured again).
{
  bin=build/device/bin
  export CAKE_ADDR="unix:$CAKE_DEMO_STATE/caked.sock" CAKE_TOKEN_FILE="$CAKE_DEMO_STATE/tokens/operator"
  "$bin/caked" --state-dir "$CAKE_DEMO_STATE" >>"$CAKE_DEMO_STATE/caked.log" 2>&1 &
  daemon=$!
  for _ in $(seq 1 100); do [ -S "$CAKE_DEMO_STATE/caked.sock" ] && break; sleep 0.1; done
  cand=$(python3 -c 'import sqlite3,sys; db=sqlite3.connect(sys.argv[1]); r=db.execute("SELECT c.id FROM candidates c WHERE c.state IN (4,5,6,7) AND c.id NOT IN (SELECT candidate_id FROM incumbents) ORDER BY seq LIMIT 1").fetchone(); print(r[0] if r else "")' "$CAKE_DEMO_STATE/ledger.db")
  echo "== measure idempotency: candidate ${cand:-none}"
  if [ -n "$cand" ]; then
    a=$("$bin/cakectl" -o json measure "$cand" --key retry-1 | python3 -c 'import json,sys; print(json.load(sys.stdin)["job_id"])')
    b=$("$bin/cakectl" -o json measure "$cand" --key retry-1 | python3 -c 'import json,sys; print(json.load(sys.stdin)["job_id"])')
    echo "first job $a, retried job $b: $([ "$a" = "$b" ] && echo same || echo DIFFERENT)"
    [ "$a" = "$b" ] || echo "IDEMPOTENCY FAILED"
    "$bin/cakectl" watch --until-idle --timeout 600 >/dev/null 2>&1 || true
  fi
  "$bin/cakectl" -o json status | python3 -c 'import json,sys; s=json.load(sys.stdin); print("containment:", s.get("containment")); print("worker sandbox:", s.get("worker_sandbox"))'
  kill -TERM $daemon; wait $daemon || true
} 2>&1 | tee "$out/measure_idempotency.log"
grep -q "IDEMPOTENCY FAILED" "$out/measure_idempotency.log" && rc=1
# An online backup: committed rows still in the WAL are included.
python3 -c 'import sqlite3,sys; sqlite3.connect(sys.argv[1]).backup(sqlite3.connect(sys.argv[2]))' \
  "$CAKE_DEMO_STATE/ledger.db" "$out/ledger.db" 2>/dev/null
cp "$CAKE_DEMO_STATE/caked.log" "$out/caked.log" 2>/dev/null
cp "$CAKE_DEMO_STATE"/report-*.html "$out/" 2>/dev/null
exit $rc
