#!/usr/bin/env bash
# Hostile-input and containment checks on a GPU machine from binaries built elsewhere (carried
# build/device and .toolchain): what the kernel offers (Landlock, cgroup v2), the main job (the
# demo round: CUDA, nvcc and compute-sanitizer through confined workers), a retried Measure, and
# the hostile worker suite. caked runs without capabilities and with no new privileges, the
# closest equivalents here of the unit's CapabilityBoundingSet= and NoNewPrivileges=yes.
set -uo pipefail
. "$(dirname "$0")/env.sh"
export CAKE_SOURCE_DIR="$PWD"
export CAKE_COMMIT=${CAKE_COMMIT:-unknown}
{
  echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo "commit: $CAKE_COMMIT"
  echo "kernel: $(uname -r)"
  nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
  "$CAKE_NVCC" --version | tail -1
  grep -E "^0::" /proc/self/cgroup
  mount | grep cgroup2 || echo "no cgroup2 mount"
  command -v setpriv || echo "no setpriv"
} > /tmp/environment_hardening.txt 2>&1
rc=0
# The demo round (scripts/device/demo.sh) with caked's capabilities dropped.
if command -v setpriv >/dev/null; then
  mkdir -p /tmp/unpriv && cat > /tmp/unpriv/caked <<SH
#!/bin/sh
exec setpriv --no-new-privs --bounding-set=-all --inh-caps=-all $PWD/build/device/bin/caked.real "\$@"
SH
  cp build/device/bin/caked build/device/bin/caked.real
  cp /tmp/unpriv/caked build/device/bin/caked && chmod +x build/device/bin/caked
fi
CAKE_DEMO_SEARCH_BUDGET=${CAKE_DEMO_SEARCH_BUDGET:-2m} DEMO_TIMEOUT=${DEMO_TIMEOUT:-420} ./scripts/device/demo.sh || rc=1
[ -f build/device/bin/caked.real ] && mv build/device/bin/caked.real build/device/bin/caked
timeout 240 ./build/device/bin/cake-fault-campaign --parts hostile --work /tmp/cake-hostile \
  --caked "$PWD/build/device/bin/caked" --worker "$PWD/build/device/bin/cake-worker" \
  --hostile-worker "$PWD/build/device/bin/cake-hostile-worker" --out "$out/hostile_suite.json" \
  > /dev/null 2> "$out/hostile_suite.log" || rc=1
# demo.sh wrote environment.txt; this run's own facts follow it.
{
  echo "--- hardening run"
  cat /tmp/environment_hardening.txt
  grep -E "containment|worker sandbox" /tmp/cake-hostile/hostile/caked.log | head -2
} >> "$out/environment.txt"
exit $rc
