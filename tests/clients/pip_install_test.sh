#!/usr/bin/env bash
# The Python client as a Python user installs it: `pip install ./clients/python` into a fresh venv
# without system packages, its dependencies (grpcio, protobuf) from the package index, then a round
# trip against a real caked (status, a contract with the builder's baseline). Exit 77 (skipped,
# saying why) when the package index cannot be reached.
#   tests/clients/pip_install_test.sh BUILD_DIR
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
build=$(cd "${1:-build}" && pwd)
work=$(mktemp -d /tmp/cake-pip.XXXXXX)
daemon=
trap '[ -n "$daemon" ] && kill "$daemon" 2>/dev/null; rm -rf "$work"' EXIT
if [ ! -f "$root/clients/python/cake/service_pb2.py" ]; then
  echo "FAIL: the generated messages are missing (build first)"; exit 1
fi
python3 -m venv "$work/venv" || { echo "FAIL: python3 -m venv"; exit 1; }
if ! "$work/venv/bin/pip" download -q --no-deps -d "$work/probe" protobuf >/dev/null 2>&1; then
  echo "SKIPPED: the package index cannot be reached from here"; exit 77
fi
# From a copy: setuptools writes build/ beside the sources it installs.
cp -r "$root/clients/python" "$work/client"
rm -rf "$work/client/build"
if ! "$work/venv/bin/pip" install -q "$work/client" > "$work/pip.log" 2>&1; then
  echo "FAIL: pip install ./clients/python"; cat "$work/pip.log"; exit 1
fi
"$work/venv/bin/pip" list 2>/dev/null | grep -iE "^(grpcio|protobuf|consumer-cake) "
"$build/bin/caked" --state-dir "$work/state" --no-gpu --worker-user "" 2> "$work/caked.log" &
daemon=$!
for _ in $(seq 1 100); do [ -S "$work/state/caked.sock" ] && break; sleep 0.1; done
cd "$work" && CAKE_STATE_DIR="$work/state" CAKE_SOURCE_DIR="$root" "$work/venv/bin/python" - <<'PY'
import os
import cake
from cake import Client, Schedule
assert "site-packages" in cake.__file__, cake.__file__  # the installed copy, not the checkout
with Client() as c:
    assert c.status().boot_id
    contract = open(os.path.join(os.environ["CAKE_SOURCE_DIR"], "contracts", "gemm_bf16.textproto")).read()
    r = c.create_contract(contract, baseline=Schedule.gemm())
    assert r.contract_id.startswith("ct-") and r.baseline_candidate, r
    print("round trip through the installed client:", r.contract_id, r.baseline_candidate)
PY
