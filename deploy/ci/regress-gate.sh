#!/usr/bin/env bash
# CI regression gate: re-validates and re-times a contract's incumbent on the machine's caked
# (the GPU box), and fails the job on a regression. Runs as a member of caked's group with the ci
# token (no flags needed on a box installed from the package), or with $CAKE_ADDR and
# $CAKE_TOKEN_FILE set.
#
#   deploy/ci/regress-gate.sh CONTRACT_ID [TIMEOUT_S]
#
# Exit codes (cakectl's): 0 no regression; 3 a regression (validation failed, the incumbent is no
# longer faster than the baseline, or slower than its own recorded run beyond the floor); 1 the
# gate could not decide (a job failed, was inconclusive, or did not end in time); 4 token or
# role; 5 caked unavailable. The JSON result is kept as regress.json for the CI artifacts.
set -uo pipefail
contract=${1:?usage: regress-gate.sh CONTRACT_ID [TIMEOUT_S]}
timeout_s=${2:-1800}
export CAKE_TOKEN_FILE=${CAKE_TOKEN_FILE:-/var/lib/caked/tokens/ci}
cakectl -o json regress --contract "$contract" --timeout "$timeout_s" | tee regress.json
rc=${PIPESTATUS[0]}
case $rc in
  0) echo "regress gate: no regression" ;;
  3) echo "regress gate: REGRESSION (see regress.json)" ;;
  *) echo "regress gate: could not decide (exit $rc)" ;;
esac
exit "$rc"
