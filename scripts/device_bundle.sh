#!/usr/bin/env bash
# Packs what a GPU machine needs to run binaries built here into BUILD/device (and a compressed
# BUILD/device.tar.xz):
# stripped executables in bin/ and the Debian libraries its image lacks in lib/ (glibc, libstdc++,
# OpenSSL, zlib, systemd and compression libraries are left to the image's own, newer ones).
set -euo pipefail
build=${1:-build}
dest="$build/device"
rm -rf "$dest" && mkdir -p "$dest/bin" "$dest/lib"
# BUNDLE_EXES names a smaller set (e.g. "caked cakectl cake-worker" for a daemon session).
exes=${BUNDLE_EXES:-caked cakectl cake-worker cakec hopper_witness_test measure_protocol_test adversarial_corpus_test cake-protocol-bench cake-hostile-worker cake-fault-campaign cake-sandbox-probe kmeans_adversarial_gpu_test cake-sm12x-qualify}
for exe in $exes; do
  [ -x "$build/bin/$exe" ] && strip --strip-debug -o "$dest/bin/$exe" "$build/bin/$exe"
done
for exe in "$dest"/bin/*; do
  ldd "$exe" | awk '/=> \//{print $3}' |
    grep -E 'libprotobuf|libabsl|libgrpc|libgpr|libaddress_sorting|libupb|libre2|libcares|libspdlog|libfmt|libsqlite3' |
    while read -r lib; do cp -uL "$lib" "$dest/lib/"; done
done
strip --strip-unneeded "$dest"/lib/* 2>/dev/null || true
du -sh "$dest" >&2
# The same, compressed (about a fifth of the size): carry BUILD/device.tar.xz where the tree
# plus the bundle would be too large to travel, and unpack it there with
#   tar xJf BUILD/device.tar.xz -C BUILD
tar cJf "$build/device.tar.xz" -C "$build" device
du -sh "$build/device.tar.xz" >&2
