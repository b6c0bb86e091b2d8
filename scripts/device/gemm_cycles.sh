#!/usr/bin/env bash
# Schedules of the staged GEMM family compared in SM cycles, not time: Nsight Compute
# (--clock-control none) on each schedule's timed launches (the correctness check's launch
# skipped), with elapsed cycles, SM clock, DRAM throughput and L2 hit rate per launch (the CSVs
# also hold warp stall reasons and pipe utilization). The SM
# clock of a GEMM on an H100/H200 moves with its power draw (1.4-1.9 GHz seen in one bench run),
# so wall-clock ratios between two schedules mix their speed with the clock each one drew;
# cycles do not. Usage: gemm_cycles.sh SHAPE "DESCRIPTION" ["DESCRIPTION"...] (exact
# descriptions, as cake-gemm-bench prints them). Writes environment.txt, cycles_*.csv and
# cycles.txt under $OUT; with SMEM=1 also smem_*.csv (shared-memory and tensor-pipe utilization).
set -uo pipefail
. "$(dirname "$0")/env.sh"
shape=${1:?usage: gemm_cycles.sh MxNxK DESCRIPTION...}
shift
export CAKE_COMMIT=${CAKE_COMMIT:-$(git rev-parse HEAD 2>/dev/null || echo unknown)}
export CAKE_LIBCUBLASLT=${CAKE_LIBCUBLASLT:-$(ls /usr/local/cuda/lib64/libcublasLt.so.1[0-9]* 2>/dev/null | head -1)}
ncu=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
describe_device >> "$out/environment.txt"
echo "cycles at $shape" >> "$out/environment.txt"
i=0
for schedule in "$@"; do
  i=$((i + 1))
  csv="$out/cycles_${shape}_$i.csv"
  "$ncu" --clock-control none --kernel-name regex:cake_gemm --launch-skip 1 --launch-count 4 \
    --section SpeedOfLight --section MemoryWorkloadAnalysis --section WarpStateStats \
    --section ComputeWorkloadAnalysis --csv --page details \
    ./build/device/bin/cake-gemm-bench --only "$schedule" --shapes "$shape" --rounds 3 \
    --block-ms 1 > "$csv" 2> "$out/cycles_${shape}_$i.log"
  sed -i "s#$PWD/#./#g" "$csv"  # ncu names the profiled binary by its absolute path
  echo "$schedule" > "$csv.name"
  if [ "${SMEM:-0}" = 1 ]; then
    # Shared-memory and tensor-pipe utilization, to test whether ldmatrix reads plus TMA writes
    # bound a 64x64-warp-tile mma.sync GEMM. Only metrics this ncu knows for the chip are asked
    # for (an unknown name would abort the whole profile).
    known=$("$ncu" --query-metrics --chip "${NCU_CHIP:-gh100}" 2>/dev/null | awk '{print $1}')
    metrics=""
    for base in l1tex__data_pipe_lsu_wavefronts_mem_shared l1tex__data_bank_reads \
      l1tex__data_bank_writes sm__pipe_tensor_op_hmma_cycles_active sm__pipe_shared_cycles_active \
      l1tex__data_bank_conflicts_pipe_lsu_mem_shared; do
      grep -qx "$base" <<< "$known" && metrics="$metrics,$base.avg.pct_of_peak_sustained_elapsed"
    done
    [ -n "$metrics" ] && "$ncu" --clock-control none --kernel-name regex:cake_gemm \
      --launch-skip 1 --launch-count 1 --metrics "${metrics#,}" --csv --page raw \
      ./build/device/bin/cake-gemm-bench --only "$schedule" --shapes "$shape" --rounds 3 \
      --block-ms 1 > "$out/smem_${shape}_$i.csv" 2>> "$out/cycles_${shape}_$i.log"
    [ -f "$out/smem_${shape}_$i.csv" ] && sed -i "s#$PWD/#./#g" "$out/smem_${shape}_$i.csv"
  fi
done
python3 - "$out" "$shape" <<'PY' | tee -a "$out/cycles.txt"
import csv, glob, os, statistics, sys
out, shape = sys.argv[1], sys.argv[2]
m, n, k = (int(x) for x in shape.split("x"))
print("shape %s: median of 4 launches per schedule" % shape)
print("%-48s %10s %8s %10s %7s %7s %9s" % ("schedule", "cycles", "MHz", "us", "DRAM%", "L2hit%", "FLOP/clk"))
for f in sorted(glob.glob(os.path.join(out, "cycles_%s_*.csv" % shape))):
    name = open(f + ".name").read().strip()
    per = {}
    try:
        rows = [r for r in csv.DictReader(l for l in open(f) if l.startswith('"'))]
    except Exception as e:
        print("%-48s unreadable: %s" % (name, e)); continue
    for r in rows:
        per.setdefault(r["Metric Name"], []).append((r["Metric Value"].replace(",", ""), r["Metric Unit"]))
    # ncu prints values in the units it picks (Hz or GHz, ns or ms): scale by the unit given.
    to_mhz = {"hz": 1e-6, "khz": 1e-3, "mhz": 1.0, "ghz": 1e3}
    to_us = {"ns": 1e-3, "nsecond": 1e-3, "us": 1.0, "usecond": 1.0, "ms": 1e3, "msecond": 1e3}
    def med(metric, scales=None):
        vals = [float(v) * (scales.get(u.lower(), float("nan")) if scales else 1.0)
                for v, u in per.get(metric, []) if v]
        return statistics.median(vals) if vals else float("nan")
    cycles = med("Elapsed Cycles")
    us = med("Duration", to_us)
    mhz = med("SM Frequency", to_mhz)
    print("%-48s %10.0f %8.0f %10.1f %7.1f %7.1f %9.0f" % (
        name, cycles, mhz, us, med("DRAM Throughput"), med("L2 Hit Rate"), 2.0 * m * n * k / cycles))
PY
