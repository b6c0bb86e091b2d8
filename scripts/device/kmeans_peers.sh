#!/usr/bin/env bash
# KMeans assignment against Flash-KMeans on a GPU machine, from sm_90 artifacts compiled elsewhere
# (KMEANS_ARTIFACTS, default build/kmeans_space/art: one cakec artifact folder per point of
# the KMeans operation's search space, `scripts/compile_space.sh OPERATION sm_90 build/kmeans_space`,
# with labels.txt beside them) and the peer's wheel
# (.whl/flash_kmeans-0.3.1-py3-none-any.whl, fetched where pip can reach PyPI:
#   python3 -m pip download --no-deps -d .whl flash-kmeans==0.3.1).
# Runs clients/bench/kmeans_vs_torch.py twice, one process per peer mode: mma_sync (the peer on
# mma.sync, the instruction class SM120/SM121 have) and native (the peer on Hopper's wgmma).
# The native run covers the first NATIVE_SHAPES shapes (default 1, the paper shape), the
# mma_sync run the first SHAPES (default all 5). Writes environment.txt and kmeans_peers_{mma_sync,native}.{txt,json} under $OUT.
# LEGAL=DIR (a compile_space.sh output for the contract's compile target, e.g.
# build/kmeans_space_sm120, compile_space.sh for sm_120f) benches
# only the points that compiled there too: a point that spills on sm_120f is not SM120-legal.
set -uo pipefail
. "$(dirname "$0")/env.sh"
art=${KMEANS_ARTIFACTS:-build/kmeans_space/art}
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/peer-site \
  .whl/flash_kmeans-0.3.1-py3-none-any.whl || exit 2
export PYTHONPATH=/tmp/peer-site${PYTHONPATH:+:$PYTHONPATH}
{
  describe_device
  python3 -c 'import torch, triton; print("torch", torch.__version__, "triton", triton.__version__)'
  echo "artifacts: $(ls -d "$art"/*/ | wc -l) from $art${LEGAL:+, only those compiled in $LEGAL}"
} | tee "$out/environment.txt"
dirs=() labels=()
while IFS=$'\t' read -r name label; do
  [ -f "$art/${name%.textproto}/kernel.cubin" ] || continue
  [ -z "${LEGAL:-}" ] || [ -d "$LEGAL/art/${name%.textproto}" ] || continue
  dirs+=("$art/${name%.textproto}") labels+=("$label")
done <"$art/labels.txt"
rc=0
for mode in ${PEER_MODES:-mma_sync native}; do
  PYTHONUNBUFFERED=1 python3 clients/bench/kmeans_vs_torch.py --artifacts "${dirs[@]}" \
    --labels "${labels[@]}" --peer-mode "$mode" --rounds "${ROUNDS:-4}" --reps "${REPS:-5}" \
    --shapes "$([ "$mode" = native ] && echo "${NATIVE_SHAPES:-1}" || echo "${SHAPES:-5}")" --out "$out/kmeans_peers_$mode.json" >"$out/kmeans_peers_$mode.txt" 2>&1 || rc=1
  grep -E "^[0-9]+x|RATIO|best schedule|peer PTX|FAILED" "$out/kmeans_peers_$mode.txt"
done
exit $rc
