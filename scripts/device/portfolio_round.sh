#!/usr/bin/env bash
# A portfolio through caked on a GPU machine, from binaries built elsewhere (build/device from
# scripts/device_bundle.sh, .toolchain): caked on a fresh state directory, the bundled GEMM
# contract, `cakectl propose --portfolio portfolios/gemm_bf16.textproto`, then the daemon's own
# round (compile per member and target, validation of each member on the cases its guard admits,
# sanitizers, paired timing per row against the incumbent, promotion). Writes the transcript, the
# candidate as JSON, the daemon log and a summary under $OUT (or ./evidence-out); exit 1 when the
# portfolio did not reach the device or a job failed.
set -uo pipefail
. "$(dirname "$0")/env.sh"
bin=build/device/bin
state=/tmp/caked-portfolio-state
rm -rf "$state" && mkdir -p "$state"
export CAKE_ADDR="unix:$state/caked.sock" CAKE_TOKEN_FILE="$state/tokens/operator"
describe_device > "$out/environment.txt"
"$bin/caked" --state-dir "$state" >"$state/caked.log" 2>&1 &
daemon=$!
trap 'kill $daemon 2>/dev/null || true; wait $daemon 2>/dev/null || true' EXIT
for _ in $(seq 1 100); do [ -S "$state/caked.sock" ] && [ -f "$CAKE_TOKEN_FILE" ] && break; sleep 0.1; done
{
  echo "== cakectl contract create contracts/gemm_bf16.textproto"
  contract=$("$bin/cakectl" -o json contract create contracts/gemm_bf16.textproto \
    --baseline examples/gemm_bf16.textproto |
    python3 -c 'import json,sys; print(json.load(sys.stdin)["contract_id"])')
  echo "contract $contract"
  echo "== cakectl propose portfolios/gemm_bf16.textproto --portfolio"
  cand=$("$bin/cakectl" -o json propose portfolios/gemm_bf16.textproto --portfolio \
    --contract "$contract" | python3 -c 'import json,sys; print(json.load(sys.stdin)["candidate_id"])')
  echo "candidate $cand"
  echo "== cakectl watch --until-idle"
  "$bin/cakectl" watch --until-idle --timeout "${PORTFOLIO_TIMEOUT:-420}" | python3 -c '
import json, sys
for line in sys.stdin:
    e = json.loads(line)
    print("  [%s] %-12s %s" % (e.get("id"), e.get("candidate_id", ""), e.get("message", "")), flush=True)'
  echo "== cakectl candidates"
  "$bin/cakectl" -o table candidates --contract "$contract"
  "$bin/cakectl" -o json show "$cand" > "$out/portfolio_candidate.json"
} 2>&1 | tee "$out/portfolio_round.log"
python3 - "$out/portfolio_candidate.json" "$state/ledger.db" <<'PY' | tee "$out/summary.txt"
import json, sqlite3, sys
c = json.load(open(sys.argv[1]))
db = sqlite3.connect(sys.argv[2])
failed = db.execute("SELECT count(*) FROM jobs WHERE state = 'FAILED'").fetchone()[0]
print("candidate", c.get("id"), "state", c.get("state"), "|", c.get("statusNote", c.get("status_note", "")))
print("manifests:", [(m.get("target"), [e.get("name") for e in m.get("entries", [])]) for m in c.get("manifests", [])])
rows = [r for v in [c] for r in v.get("validation", {}).get("rows", [])] or [
    r for rec in c.get("evidence", []) if rec.get("kind") == "NUMERICAL_CONTRACT" for r in rec.get("cases", [])]
members = {}
for r in rows:
    members.setdefault(r.get("entry", "-"), []).append((r.get("row"), r.get("passed", False)))
for m, rs in sorted(members.items()):
    print("validation member %-16s %d cases, %d passed" % (m, len(rs), sum(1 for _, p in rs if p)))
for m in c.get("measurements", []):
    for rt in m.get("rows", []):
        print("timing run %s row %-10s challenger member %-16s incumbent %s ratio %.3f verdict %s" % (
            m.get("run", 0), rt.get("row"), rt.get("challengerEntry", rt.get("challenger_entry", "-")),
            rt.get("incumbentEntry", rt.get("incumbent_entry", "-")),
            rt.get("medianRatio", rt.get("median_ratio", 0)), rt.get("verdict")))
print("failed jobs:", failed)
measured = bool(c.get("measurements"))
sys.exit(0 if failed == 0 and rows and measured else 1)
PY
rc=${PIPESTATUS[0]}
python3 -c 'import sqlite3,sys; sqlite3.connect(sys.argv[1]).backup(sqlite3.connect(sys.argv[2]))' \
  "$state/ledger.db" "$out/ledger.db" 2>/dev/null
cp "$state/caked.log" "$out/caked.log" 2>/dev/null
exit $rc
