#!/usr/bin/env bash
# The aarch64 build (the GB10 runs DGX OS, an arm64 Ubuntu 24.04) cross-compiled on a Debian 12
# amd64 machine, and its CPU tests run under qemu-user. Installs, idempotently, Debian's cross
# toolchain, qemu-user-static and the arm64 multiarch -dev packages, registers qemu-aarch64 with
# binfmt_misc (so processes the tests start, caked and cake-worker, are emulated too), builds in
# BUILD (default build-aarch64) with cmake/toolchains/aarch64-linux-gnu.cmake, and runs
# `ctest -LE gpu` with CAKED_CONFINE_WORKERS=false: qemu-user refuses seccomp filters (EINVAL)
# and knows no Landlock, so the test daemons run their workers unconfined (a confined caked
# refuses to start there); the sandbox tests still run and check that the probe says so.
# Build tools stay the host's: protoc, grpc_cpp_plugin, and nvcc for the embedded fatbins.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
build=${1:-$root/build-aarch64}
jobs=${JOBS:-$(nproc)}
sudo_cmd=""
[ "$(id -u)" -ne 0 ] && sudo_cmd="sudo"

"$root/scripts/bootstrap.sh"  # the host's build tools and the Python client for the tests

arm64_packages=(
  crossbuild-essential-arm64 qemu-user-static binfmt-support
  libgrpc++-dev:arm64 libprotobuf-dev:arm64 libabsl-dev:arm64 libspdlog-dev:arm64 libfmt-dev:arm64
  libsqlite3-dev:arm64 libssl-dev:arm64 libgtest-dev:arm64 libgmock-dev:arm64
  libsystemd-dev:arm64 libseccomp-dev:arm64
)
if ! dpkg --print-foreign-architectures | grep -qx arm64; then
  echo "aarch64: dpkg --add-architecture arm64" >&2
  $sudo_cmd dpkg --add-architecture arm64
  $sudo_cmd apt-get update -qq
fi
missing=()
for p in "${arm64_packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "aarch64: installing ${missing[*]}" >&2
  $sudo_cmd apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq --no-install-recommends \
    "${missing[@]}" >&2
fi

# binfmt_misc: a CI container may not have it mounted; qemu-user-static registers only when it is.
if [ ! -e /proc/sys/fs/binfmt_misc/status ]; then
  $sudo_cmd mount -t binfmt_misc binfmt_misc /proc/sys/fs/binfmt_misc ||
    { echo "aarch64: cannot mount binfmt_misc (needs root or a privileged container)" >&2; exit 1; }
fi
if [ ! -e /proc/sys/fs/binfmt_misc/qemu-aarch64 ]; then
  $sudo_cmd update-binfmts --enable qemu-aarch64 >&2 ||
    { echo "aarch64: cannot register qemu-aarch64 with binfmt_misc" >&2; exit 1; }
fi

cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_TOOLCHAIN_FILE="$root/cmake/toolchains/aarch64-linux-gnu.cmake" >/dev/null
cmake --build "$build" -j "$jobs"
file "$build/bin/caked" | grep -q "ARM aarch64" ||
  { echo "aarch64: $build/bin/caked is not an aarch64 executable" >&2; exit 1; }
echo "aarch64: built $(file -b "$build/bin/caked" | cut -d, -f1-2)" >&2
echo "aarch64: workers unconfined under qemu-user (CAKED_CONFINE_WORKERS=false)" >&2
CAKED_CONFINE_WORKERS=false ctest --test-dir "$build" -LE gpu --output-on-failure -j "$jobs" \
  --timeout 1800
