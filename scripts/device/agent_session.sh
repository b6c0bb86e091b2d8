#!/usr/bin/env bash
# The scripted agent session (clients/mcp/example_agent_run.py) on a GPU machine, from binaries
# built elsewhere (carried build/device, .toolchain) and the client packages (carried
# clients/python with its generated messages; the MCP SDK as wheels under .whl, installed into
# /tmp/site), then `cakectl regress` on its contract. Saves the transcript, the regress result,
# ledger and daemon log to $OUT.
set -uo pipefail
. "$(dirname "$0")/env.sh"
if [ -d .whl ]; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
    --target /tmp/site .whl/*.whl || exit 1
  export PYTHONPATH=/tmp/site
fi
state=/tmp/caked-agent-state
rm -rf "$state" && mkdir -p "$state"
bin=build/device/bin
{
  echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo "commit: ${CAKE_COMMIT:-unknown}"
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu,power.draw --format=csv
  "$CAKE_NVCC" --version | tail -2
  python3 --version
} > "$out/environment.txt"
"$bin/caked" --state-dir "$state" >"$state/caked.log" 2>&1 &
daemon=$!
for _ in $(seq 1 100); do [ -S "$state/caked.sock" ] && [ -f "$state/tokens/agent" ] && break; sleep 0.1; done
export CAKE_ADDR="unix:$state/caked.sock"
contract=$(CAKE_TOKEN_FILE="$state/tokens/operator" "$bin/cakectl" -o json contract create \
  contracts/gemm_bf16.textproto --baseline examples/gemm_bf16.textproto)
cid=$(echo "$contract" | python3 -c 'import json,sys; print(json.load(sys.stdin)["contract_id"])')
base=$(echo "$contract" | python3 -c 'import json,sys; print(json.load(sys.stdin)["baseline_candidate"])')
echo "contract $cid, baseline $base (created by the operator)" | tee "$out/transcript.txt"
CAKE_STATE_DIR="$state" CAKE_TOKEN_FILE="$state/tokens/agent" timeout "${AGENT_TIMEOUT:-540}" \
  python3 clients/mcp/example_agent_run.py "$cid" "$base" "${AGENT_BUDGET:-500}" 2>&1 |
  tee -a "$out/transcript.txt"
rc=${PIPESTATUS[0]}
# The CI gate on the session's contract: re-validate and re-time the incumbent.
CAKE_TOKEN_FILE="$state/tokens/ci" timeout 300 "$bin/cakectl" -o json regress --contract "$cid" \
  --timeout 280 > "$out/regress.json" 2> "$out/regress.err"
echo "regress exit code $?" >> "$out/regress.err"
CAKE_TOKEN_FILE="$state/tokens/operator" "$bin/cakectl" -o table candidates --contract "$cid" \
  > "$out/candidates.txt" 2>&1
kill -TERM $daemon; wait $daemon
python3 -c 'import sqlite3,sys; sqlite3.connect(sys.argv[1]).backup(sqlite3.connect(sys.argv[2]))' \
  "$state/ledger.db" "$out/ledger.db"
cp "$state/caked.log" "$out/caked.log"
exit $rc
