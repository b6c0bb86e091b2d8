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
# An online backup: committed rows still in the WAL are included.
python3 -c 'import sqlite3,sys; sqlite3.connect(sys.argv[1]).backup(sqlite3.connect(sys.argv[2]))' \
  "$CAKE_DEMO_STATE/ledger.db" "$out/ledger.db" 2>/dev/null
cp "$CAKE_DEMO_STATE/caked.log" "$out/caked.log" 2>/dev/null
cp "$CAKE_DEMO_STATE/report.html" "$out/report.html" 2>/dev/null
exit $rc
