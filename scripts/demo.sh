#!/usr/bin/env bash
# The main job: a real optimisation round. Starts caked on a fresh state directory (embedded
# SQLite ledger), creates every bundled contract (contracts/<name>.textproto, its baseline
# examples/<name>.textproto: the warp GEMM and the KMeans assignment). With a GPU it runs the
# daemon's search on each (`cakectl search`, CAKE_DEMO_SEARCH_BUDGET each, default 4m): candidates
# are proposed from the workload's space, ranked by the cost model once rows are measured,
# validated, timed and one may be promoted. Without one, the built-in proposer submits a few points
# through the public API and they stop at Compiled with "no execution device". Then it shows
# progress, prints `cakectl status`, the candidates and the ledger's rows, and stops the daemon.
set -euo pipefail
build=${1:-build}
root=$(cd "$(dirname "$0")/.." && pwd)
bin="$root/$build/bin"
[ -d "$bin" ] || bin="$build/bin"
state=${CAKE_DEMO_STATE:-$(mktemp -d /tmp/caked-demo.XXXXXX)}
count=${CAKE_DEMO_CANDIDATES:-5}
export CAKE_ADDR="unix:$state/caked.sock" CAKE_TOKEN_FILE="$state/tokens/operator"

echo "== caked --state-dir $state"
"$bin/caked" --state-dir "$state" >"$state/caked.log" 2>&1 &
daemon=$!
trap 'kill $daemon 2>/dev/null || true; wait $daemon 2>/dev/null || true' EXIT
for _ in $(seq 1 100); do [ -S "$state/caked.sock" ] && [ -f "$CAKE_TOKEN_FILE" ] && break; sleep 0.1; done
sed 's/^/  caked: /' "$state/caked.log"

contracts=()
for file in "$root"/contracts/*.textproto; do
  name=$(basename "$file" .textproto)
  case " ${CAKE_DEMO_CONTRACTS:-$name} " in *" $name "*) ;; *) continue ;; esac
  echo "== cakectl contract create contracts/$name.textproto"
  id=$("$bin/cakectl" -o json contract create "$file" --baseline "$root/examples/$name.textproto" |
    python3 -c 'import json,sys; print(json.load(sys.stdin)["contract_id"])')
  echo "contract $id"
  contracts+=("$id")
done
device=$("$bin/cakectl" -o json status | python3 -c 'import json,sys; print(1 if json.load(sys.stdin).get("execution_device") else 0)')
for id in "${contracts[@]}"; do
  if [ "$device" = 1 ]; then
    echo "== cakectl search --contract $id --budget ${CAKE_DEMO_SEARCH_BUDGET:-4m} (the daemon's search)"
    "$bin/cakectl" -o table search --contract "$id" --budget "${CAKE_DEMO_SEARCH_BUDGET:-4m}" || echo "  search exit code $?"
  else
    echo "== cakectl demo-agent --contract $id (no execution device: the built-in proposer's list, compiled only)"
    "$bin/cakectl" -o table demo-agent --contract "$id" --count "$count"
  fi
done

echo "== progress (cakectl watch --until-idle)"
"$bin/cakectl" watch --until-idle --timeout 1500 | python3 -c '
import json, sys
for line in sys.stdin:
    e = json.loads(line)
    print("  [%s] %-12s %s" % (e.get("id"), e.get("candidate_id", ""), e.get("message", "")), flush=True)'

echo "== cakectl status"
"$bin/cakectl" -o table status
for contract in "${contracts[@]}"; do
  echo "== cakectl candidates --contract $contract"
  "$bin/cakectl" -o table candidates --contract "$contract"
  incumbent=$("$bin/cakectl" -o json status | python3 -c 'import json,sys; s=json.load(sys.stdin); print(next((c.get("incumbent","") for c in s.get("contracts",[]) if sys.argv[1] in (c.get("contract_id"), c.get("contractId"))), ""))' "$contract")
  if [ -n "$incumbent" ]; then
    echo "== cakectl show $incumbent (incumbent)"
    "$bin/cakectl" -o table show "$incumbent"
    echo "== cakectl regress --contract $contract (CI's regression run: re-validates the incumbent)"
    "$bin/cakectl" regress --contract "$contract" || echo "  regress exit code $?"
  fi
  echo "== cakectl report $contract (row tables, candidate history, roofline: HTML)"
  "$bin/cakectl" report "$contract" --out "$state/report-$contract.html" || echo "  report exit code $?"
done

echo "== ledger rows ($state/ledger.db)"
python3 - "$state/ledger.db" <<'PY'
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
queries = [
    "SELECT id, state, rejected_at, substr(status_note, 1, 80) AS note FROM candidates ORDER BY seq",
    "SELECT id, candidate_id, kind, state, attempt, substr(error, 1, 60) AS error FROM jobs ORDER BY id",
    "SELECT candidate_id, job_id, passed FROM validations ORDER BY id",
    "SELECT candidate_id, job_id, kind, tool, status FROM evidence_records ORDER BY id",
    "SELECT candidate_id, incumbent_id, run, verdict, invalid, substr(invalid_reason, 1, 60) AS reason FROM measurements ORDER BY id",
    "SELECT COUNT(*) AS raw_timing_samples, SUM(discarded) AS discarded, MIN(incumbent_sm_mhz) AS min_sm_mhz, COUNT(incumbent_span_us) AS with_cupti_span FROM measurement_samples",
    "SELECT contract_id, candidate_id, previous_id, substr(reason, 1, 90) AS reason FROM promotions ORDER BY id",
]
for q in queries:
    cur = db.execute(q)
    cols = [d[0] for d in cur.description]
    print("  -- " + q.split(" FROM ")[1].split()[0])
    print("  " + " | ".join(cols))
    for row in cur:
        print("  " + " | ".join(str(v) for v in row))
PY
# The round's verdict: at least one candidate must reach the furthest state this machine allows
# (Measured with an execution device, Compiled without one); the exit code says whether it did.
status_json=$("$bin/cakectl" -o json status)
verdict=0
python3 - "$state/ledger.db" "$status_json" <<'PY' || verdict=$?
import json, sqlite3, sys
db = sqlite3.connect(sys.argv[1])
status = json.loads(sys.argv[2])
device = bool(status.get("execution_device", False))
goal, goal_name = (5, "Measured") if device else (3, "Compiled")
rows = db.execute("SELECT state, status_note FROM candidates ORDER BY seq").fetchall()
reached = sum(1 for state, _ in rows if goal <= state < 8)
rejected = [note for state, note in rows if state == 8]
if reached > 0:
    print(f"== demo verdict: {reached} of {len(rows)} candidate(s) reached {goal_name}"
          f" ({'with' if device else 'without'} an execution device)")
    sys.exit(0)
why = (f"{len(rejected)} of {len(rows)} rejected, the first: {rejected[0][:200]}" if rejected
       else f"{len(rows)} candidate(s), none settled")
print(f"== demo verdict: FAILED: no candidate reached {goal_name}: {why}")
sys.exit(1)
PY
echo "== stopping caked"
kill -TERM $daemon
wait $daemon || true
trap - EXIT
tail -n 2 "$state/caked.log" | sed 's/^/  caked: /'
echo "state kept in $state"
exit $verdict
