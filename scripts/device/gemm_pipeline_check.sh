#!/usr/bin/env bash
# The staged warp-GEMM mainloop on an sm_90 GPU, from a build made elsewhere (build/device,
# .toolchain): the Hopper witness and the KMeans GPU test (numerics against CPU oracles, tails
# included), compute-sanitizer racecheck and synccheck over the witness's schedules (every
# shipped family point and proposer candidate), the pipeline rule proofs (illegal schedules
# forced through lowering must go wrong; run apart from the sanitizer verdicts), then the
# benchmark (scripts/device/gemm_bench.sh; `--no-bench` skips it) and, with CYCLES=1, the
# leading schedules and their variants compared in SM cycles (scripts/device/gemm_cycles.sh).
# Writes logs and JSON under $OUT (or ./evidence-out).
set -uo pipefail
. "$(dirname "$0")/env.sh"
export CAKE_WORKER="$PWD/build/device/bin/cake-worker" CAKE_SOURCE_DIR="$PWD"
status=0
bench=1
if [ "${1:-}" = "--no-bench" ]; then bench=0; shift; fi
describe_device > "$out/environment.txt"
proofs='HopperWitness.ReuseBeforeRelease*:HopperWitness.UnmergedSplitK*:HopperWitness.TmaIntoPaddedStage*'
legal="-$proofs"
./build/device/bin/hopper_witness_test > "$out/witness.log" 2>&1 || status=1
echo "hopper_witness_test: $(tail -1 "$out/witness.log")"
./build/device/bin/kmeans_adversarial_gpu_test > "$out/kmeans_gpu.log" 2>&1 || status=1
echo "kmeans_adversarial_gpu_test: $(tail -1 "$out/kmeans_gpu.log")"
cs=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
for tool in racecheck synccheck; do
  "$cs" --tool "$tool" --error-exitcode 9 ./build/device/bin/hopper_witness_test \
    --gtest_filter="$legal" > "$out/sanitizer_$tool.log" 2>&1
  rc=$?
  [ $rc -ne 0 ] && status=1
  echo "compute-sanitizer $tool over hopper_witness_test: exit $rc; $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$out/sanitizer_$tool.log" | tail -1)"
done
# Split-K's workspace indexing (partials and arrival counters) under memcheck.
"$cs" --tool memcheck --error-exitcode 9 ./build/device/bin/hopper_witness_test \
  --gtest_filter='HopperWitness.SplitK*' > "$out/sanitizer_memcheck_split_k.log" 2>&1
rc=$?
[ $rc -ne 0 ] && status=1
echo "compute-sanitizer memcheck over split-K: exit $rc; $(grep -E 'ERROR SUMMARY' "$out/sanitizer_memcheck_split_k.log" | tail -1)"
# What racecheck says of the illegal schedules (informational: the proof is the wrong results).
"$cs" --tool racecheck ./build/device/bin/hopper_witness_test \
  --gtest_filter="$proofs" > "$out/rule_proof_racecheck.log" 2>&1
echo "rule proof under racecheck: exit $?; $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$out/rule_proof_racecheck.log" | tail -1)"
[ $bench -eq 1 ] && "$(dirname "$0")/gemm_bench.sh" "$@" | tail -14
if [ "${CYCLES:-0}" = 1 ]; then
  # Row-major vs banded vs banded with the staged store vs persistent CTAs, on a 128x128 and a
  # 128x256 tile.
  base="128x128x64 w2x2 s3 swz128 x4 bf16 tma" wide="128x256x64 w2x4 s3 swz128 x4 bf16 tma"
  for shape in 8192x8192x8192 2048x2048x2048; do
    OUT="$out/cycles" "$(dirname "$0")/gemm_cycles.sh" "$shape" "$base" "$base g16" \
      "$base g16 st" "$base g16 p" "$wide sm90-only" "$wide g16 sm90-only" \
      "$wide g16 st sm90-only" "$wide g16 p sm90-only" | tail -10
  done
fi
exit $status
