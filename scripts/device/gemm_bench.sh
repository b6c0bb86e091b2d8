#!/usr/bin/env bash
# Runs cake-gemm-bench (workloads/gemm_bf16/bench) on a machine with an sm_90 GPU from a build
# made elsewhere (build/device from scripts/device_bundle.sh, .toolchain's cuobjdump), then, with
# NCU=1, Nsight Compute on each schedule's first launch at 4096^3 (--clock-control none). Writes
# environment.txt, gemm_bench.{txt,json} and ncu.csv under $OUT (or ./evidence-out).
set -uo pipefail
. "$(dirname "$0")/env.sh"
export CAKE_COMMIT=${CAKE_COMMIT:-$(git rev-parse HEAD 2>/dev/null || echo unknown)}
if [ -z "${CAKE_LIBCUBLASLT:-}" ]; then
  CAKE_LIBCUBLASLT=$(ls /usr/local/cuda/lib64/libcublasLt.so.1[0-9]* 2>/dev/null | head -1)
  [ -z "$CAKE_LIBCUBLASLT" ] &&
    CAKE_LIBCUBLASLT=$(find / -name 'libcublasLt.so.1[0-9]' -not -path '/proc/*' 2>/dev/null | head -1)
  export CAKE_LIBCUBLASLT
fi
{
  describe_device
  echo "cublasLt: $CAKE_LIBCUBLASLT"
} | tee "$out/environment.txt"
./build/device/bin/cake-gemm-bench --json "$out/gemm_bench.json" "$@" 2>&1 | tee "$out/gemm_bench.txt"
rc=${PIPESTATUS[0]}
if [ "${NCU:-0}" = 1 ]; then
  ncu=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
  "$ncu" --clock-control none --kernel-name regex:cake_gemm --launch-count 40 \
    --section SpeedOfLight --section Occupancy --section LaunchStats --section WarpStateStats \
    --section SchedulerStats --section MemoryWorkloadAnalysis --csv --page details \
    ./build/device/bin/cake-gemm-bench --shapes 4096x4096x4096 --rounds 3 --block-ms 1 \
    > "$out/ncu.csv" 2> "$out/ncu.log"
  echo "ncu: exit $?" | tee -a "$out/environment.txt"
fi
exit $rc
