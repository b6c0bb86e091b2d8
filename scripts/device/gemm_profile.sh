#!/usr/bin/env bash
# Nsight Compute (--clock-control none) on one schedule of the staged GEMM family and on the
# mma.sync ceiling kernel: the full section set (speed of light, memory and L2 throughput, warp
# stalls) and the per-SASS-instruction stall samples, to say where a schedule loses to the
# ceiling (and, with PEER=1, on cuBLASLt's kernel: its L2 traffic and SM clock beside ours).
# Usage: gemm_profile.sh "128x256x64 w2x4 s2" [MxNxK]. Writes environment.txt and, for each of
# ceiling, schedule (and peer), ncu_*_details.csv, ncu_*_source.csv and ncu_*.log under $OUT.
set -uo pipefail
. "$(dirname "$0")/env.sh"
schedule=${1:?usage: gemm_profile.sh SCHEDULE [MxNxK]}
shape=${2:-8192x8192x8192}
export CAKE_COMMIT=${CAKE_COMMIT:-$(git rev-parse HEAD 2>/dev/null || echo unknown)}
export CAKE_LIBCUBLASLT=${CAKE_LIBCUBLASLT:-$(ls /usr/local/cuda/lib64/libcublasLt.so.1[0-9]* 2>/dev/null | head -1)}
ncu=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
{
  describe_device
  echo "schedule: $schedule; shape: $shape"
} | tee "$out/environment.txt"
bench=(./build/device/bin/cake-gemm-bench --only "$schedule" --shapes "$shape" --rounds 3 --block-ms 1)
what_list="ceiling:cake_mma_ceiling_4 schedule:cake_gemm"
# cuBLASLt's kernel names differ by release (nvjet, sm90_xmma, cutlass): anything not ours.
[ "${PEER:-0}" = 1 ] && what_list="$what_list peer:^(?!cake_)"
for what in $what_list; do
  name=${what%%:*}
  "$ncu" --clock-control none --kernel-name regex:"${what#*:}" --launch-count 1 --set full \
    --import-source no -o "$out/$name" "${bench[@]}" > "$out/ncu_$name.log" 2>&1
  echo "ncu $name: exit $?" | tee -a "$out/environment.txt"
  "$ncu" --import "$out/$name.ncu-rep" --csv --page details > "$out/ncu_${name}_details.csv"
  "$ncu" --import "$out/$name.ncu-rep" --csv --page source --print-source sass \
    > "$out/ncu_${name}_source.csv"
  rm -f "$out/$name.ncu-rep"
done
ls -la "$out"
