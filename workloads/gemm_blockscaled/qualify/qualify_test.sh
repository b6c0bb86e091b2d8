#!/usr/bin/env bash
# The qualification experiment without an SM12x device (CTest, no GPU label: it must hold on
# any machine but an SM120/SM121):
#  1. its kernels hold the intended SASS forms for sm_120f and sm_121a: the legacy kernels
#     QMMA.16832.F32.E4M3.E4M3 and no block-scaled form, the unit-scale kernels
#     QMMA.SF.16832.F32.E4M3.E4M3.E8 and no legacy form;
#  2. run here, it refuses with "no SM120 execution witness possible on ...", exits 3 and
#     writes nothing.
# Usage: qualify_test.sh QUALIFY_BINARY FATBIN CUOBJDUMP
set -uo pipefail
bin=$1 fatbin=$2 cuobjdump=$3
fail=0
sass=$("$cuobjdump" -sass "$fatbin") || { echo "cuobjdump failed"; exit 1; }
for arch in sm_120f sm_121a; do
  # The functions of one architecture's section, each with its QMMA forms.
  section=$(echo "$sass" | awk -v a="$arch" '/^[[:space:]]*arch = /{keep = ($3 == a)} keep')
  [ -n "$section" ] || { echo "FAIL: no $arch code in the fatbin"; fail=1; continue; }
  for kernel in cake_qualify_mma_legacy cake_qualify_rate_legacy cake_qualify_mma_unit_scale cake_qualify_rate_unit_scale; do
    body=$(echo "$section" | awk -v k="$kernel" '/Function : /{keep = ($3 == k)} keep')
    legacy=$(echo "$body" | grep -c ' QMMA\.16832\.F32\.E4M3\.E4M3 ')
    scaled=$(echo "$body" | grep -c ' QMMA\.SF\.16832\.F32\.E4M3\.E4M3\.E8 ')
    case $kernel in
      *legacy) ok=$([ "$legacy" -ge 1 ] && [ "$scaled" -eq 0 ] && echo 1) ;;
      *) ok=$([ "$scaled" -ge 1 ] && [ "$legacy" -eq 0 ] && echo 1) ;;
    esac
    echo "$arch $kernel: $legacy QMMA.16832.F32.E4M3.E4M3, $scaled QMMA.SF.16832.F32.E4M3.E4M3.E8"
    [ "$ok" = 1 ] || { echo "FAIL: $arch $kernel has the wrong forms"; fail=1; }
  done
done
out=$(mktemp -d)/qualify.json
refusal=$("$bin" --out "$out")
rc=$?
echo "run here: exit $rc: $refusal"
if [ $rc -ne 3 ] || [[ "$refusal" != "no SM120 execution witness possible on "* ]] || [ -e "$out" ]; then
  echo "FAIL: expected the refusal (exit 3, nothing written)"
  fail=1
fi
exit $fail
