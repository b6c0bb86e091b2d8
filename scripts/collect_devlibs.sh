#!/usr/bin/env bash
# Copies the shared libraries a built binary needs that a device machine's image may lack
# (Debian's protobuf, Abseil, OpenSSL, gRPC, spdlog, fmt, SQLite) into BUILD/devlibs, for use
# with LD_LIBRARY_PATH there. glibc and libstdc++ are left to the device's (newer) own.
set -euo pipefail
build=${1:-build}
shift || true
mkdir -p "$build/devlibs"
for bin in "$@"; do
  ldd "$bin" | awk '/=> \//{print $3}' | grep -E 'libprotobuf|libabsl|libcrypto|libssl|libgrpc|libgpr|libaddress_sorting|libupb|libre2|libcares|libz\.|libspdlog|libfmt|libsqlite3|libsystemd|libcap|liblzma|liblz4|libzstd|libgcrypt|libgpg-error' |
    while read -r lib; do cp -uL "$lib" "$build/devlibs/"; done
done
du -sh "$build/devlibs" >&2
