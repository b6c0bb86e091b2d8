#!/usr/bin/env bash
# The workload seam holds: a workload's name appears only in its own places. For the workloads
# given (default: every folder workloads/<name>/ but the first, gemm_bf16, which predates the
# seam and still names itself in tests and examples of the compiler): its folder, its tests
# (tests/workloads/<name>/), its contract and example (contracts/<name>.textproto,
# examples/<name>.textproto), its one lowering (the one folder of compiler/lowerings/ that names
# it), its arm of proto/cake/shape.proto, and documentation (*.md) and evidence. Naming its
# example's file (<name>.textproto, an input like any other) and fuzz inputs (tests/fuzz/corpus,
# tests/fuzz/seeds: data, not code) are not naming it. Any other file naming it is listed and the
# check fails.
set -uo pipefail
cd "$(dirname "$0")/.."
files() {
  if git rev-parse --git-dir >/dev/null 2>&1; then git ls-files --cached --others --exclude-standard
  else find . -type f -not -path './build*' | sed 's|^\./||'; fi
}
names=("$@")
if [ ${#names[@]} -eq 0 ]; then
  for dir in workloads/*/; do
    name=$(basename "$dir")
    [ "$name" = gemm_bf16 ] || names+=("$name")
  done
fi
fail=0
for name in "${names[@]}"; do
  lowerings=$(grep -l -i -- "$name" compiler/lowerings/*/* 2>/dev/null | xargs -r -n1 dirname | sort -u)
  if [ "$(echo "$lowerings" | grep -c .)" -gt 1 ]; then
    echo "workload '$name' is named by more than one lowering:"; echo "$lowerings" | sed 's/^/  /'
    fail=1
    continue
  fi
  offenders=$(files | grep -v -E "^(workloads/$name/|tests/workloads/$name/|contracts/$name\.textproto$|examples/$name\.textproto$|proto/cake/shape\.proto$|evidence/)" |
    grep -v -E '\.md$' | { if [ -n "$lowerings" ]; then grep -v "^$lowerings/"; else cat; fi; } |
    grep -v -E '^tests/fuzz/(corpus|seeds)/' |
    while read -r f; do
      [ -f "$f" ] && sed "s/$name\.textproto//g" "$f" | grep -q -i -- "$name" && echo "$f"
    done)
  if [ -n "$offenders" ]; then
    echo "workload '$name' is named outside its places:"; echo "$offenders" | sed 's/^/  /'
    fail=1
  else
    echo "workload '$name': named only in its own places (lowering: ${lowerings:-none})"
  fi
done
exit $fail
