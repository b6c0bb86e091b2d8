#!/usr/bin/env bash
# The Debian package: built with CPack from BUILD, then checked without installing it on this
# machine: its files, its dependencies from the binaries' shared libraries, the conffile and the
# maintainer script, the unit (ExecStart at the installed path; systemd-analyze verify), the
# sysusers.d entry (the caked user, the cake group), and the packaged binaries.
set -euo pipefail
build=$(cd "${1:?usage: deb_package_test.sh BUILD}" && pwd)
out=$(mktemp -d /tmp/cake-deb.XXXXXX)
trap 'rm -rf "$out"' EXIT
fail() { echo "deb_package_test: $*" >&2; exit 1; }
(cd "$out" && cpack --config "$build/CPackConfig.cmake" -B "$out/pkg" >"$out/cpack.log" 2>&1) ||
  { cat "$out/cpack.log" >&2; fail "cpack failed"; }
deb=$(ls "$out"/pkg/consumer-cake_*.deb)
echo "package: $(basename "$deb") ($(du -h "$deb" | cut -f1))"
dpkg-deb -c "$deb" | awk '{print $NF}' >"$out/contents"
for f in ./usr/bin/caked ./usr/bin/cakectl ./usr/bin/cakec ./usr/bin/cake-worker \
  ./usr/lib/systemd/system/caked.service ./usr/lib/sysusers.d/caked.conf \
  ./usr/lib/tmpfiles.d/caked.conf ./etc/caked/caked.conf \
  ./usr/share/doc/consumer-cake/README.md ./usr/share/consumer-cake/contracts/gemm_bf16.textproto; do
  grep -qx "$f" "$out/contents" || fail "missing $f"
done
depends=$(dpkg-deb -f "$deb" Depends)
echo "depends: $depends"
for lib in libgrpc++ libprotobuf libsqlite3 libabsl systemd; do
  grep -q "$lib" <<<"$depends" || fail "Depends lacks $lib"
done
dpkg-deb -e "$deb" "$out/control"
grep -qx /etc/caked/caked.conf "$out/control/conffiles" || fail "caked.conf is not a conffile"
[ -x "$out/control/postinst" ] || fail "no postinst"
dpkg-deb -x "$deb" "$out/root"
unit="$out/root/usr/lib/systemd/system/caked.service"
grep -q "^ExecStart=/usr/bin/caked " "$unit" || fail "ExecStart does not name /usr/bin/caked"
grep -qx "User=caked" "$unit" && grep -qx "Group=cake" "$unit" || fail "unit user/group"
# Verified as installed, with ExecStart pointed at the extracted binary (nothing is installed here).
sed "s#/usr/bin/caked#$out/root/usr/bin/caked#" "$unit" >"$out/caked.service"
systemd-analyze verify "$out/caked.service" || fail "systemd-analyze verify"
sysusers=$(systemd-sysusers --root="$out/root" --dry-run 2>&1 || true)
grep -q "Creating user 'caked'" <<<"$sysusers" && grep -q "Creating group 'cake'" <<<"$sysusers" ||
  fail "sysusers.d creates neither caked nor cake: $sysusers"
"$out/root/usr/bin/caked" --version
"$out/root/usr/bin/cakectl" --version
echo "deb_package_test: ok"
