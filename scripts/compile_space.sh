#!/usr/bin/env bash
# Compiles every point of an operation's search space for one target, offline and in parallel:
#   scripts/compile_space.sh OPERATION TARGET OUT [BUILD]
# writes OUT/NN.textproto and OUT/labels.txt (`cakectl space OPERATION --search`), then OUT/art/NN/
# (kernel.cubin, kernel.cu, receipt.json: a copy of the cakec artifact) for each point that
# compiled, and OUT/art/labels.txt. A point that does not compile is listed in OUT/failed.txt with
# cakec's first error line. For benches on a machine without the daemon
# (scripts/device/kmeans_peers.sh).
set -euo pipefail
[ $# -ge 3 ] || { sed -n 2,8p "$0"; exit 2; }
op=$1 target=$2 out=$3 build=${4:-build}
rm -rf "$out" && mkdir -p "$out/art"
"$build/bin/cakectl" space "$op" --search --out "$out" >/dev/null
cp "$out/labels.txt" "$out/art/labels.txt"
store=$(mktemp -d)
trap 'rm -rf "$store"' EXIT
compile_one() {
  local file=$1 name
  name=$(basename "$file" .textproto)
  if "$build/bin/cakec" compile -t "$target" --store "$store" --json "$file" >"$out/$name.json" 2>"$out/$name.err"; then
    dir=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["artifact_dir"])' "$out/$name.json")
    mkdir -p "$out/art/$name"
    cp "$dir"/kernel.cubin "$dir"/kernel.cu "$dir"/receipt.json "$out/art/$name/"
  else
    echo "$name $(grep -m1 -iE 'error|rejected' "$out/$name.err" "$out/$name.json" | head -c 300)" >>"$out/failed.txt"
  fi
}
export -f compile_one
export out target store build
ls "$out"/*.textproto | xargs -P "$(nproc)" -I{} bash -c 'compile_one {}'
echo "$(ls -d "$out"/art/*/ | wc -l) of $(ls "$out"/*.textproto | wc -l) points compiled for $target into $out/art" >&2
