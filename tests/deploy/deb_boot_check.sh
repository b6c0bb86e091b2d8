#!/usr/bin/env bash
# The .deb on a clean, booted Debian 12: a debootstrap'd system started under qemu-system (KVM
# where usable, else TCG) with systemd as PID 1. Inside it, as root: `apt-get install` of the
# package (its dependencies resolved by apt from a cache filled beforehand, since the guest has no
# network), `systemctl enable --now caked` (Type=notify: it returns once caked said READY=1),
# then `cakectl status` with no flags as a member of the cake group (must work) and as a user
# outside it (must be refused), the journal's records with their priorities, and a restart.
# Prints the guest's console transcript; exits 0 only if every check in it passed.
# Needs root, network (Debian's mirror), debootstrap and qemu-system-x86 (installed here if
# missing). Not part of `make test` (minutes, root, KVM): `make test-deb-boot`.
#   usage: deb_boot_check.sh BUILD [WORKDIR]   (WORKDIR keeps the base system between runs)
set -euo pipefail
build=$(cd "${1:?usage: deb_boot_check.sh BUILD [WORKDIR]}" && pwd)
work=${2:-/var/tmp/cake-deb-boot}
mirror=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
fail() { echo "deb_boot_check: $*" >&2; exit 1; }
[ "$(id -u)" -eq 0 ] || fail "needs root (debootstrap, chroot, mkfs)"
need=()
command -v debootstrap >/dev/null || need+=(debootstrap)
command -v qemu-system-x86_64 >/dev/null || need+=(qemu-system-x86)
if [ ${#need[@]} -gt 0 ]; then
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${need[@]}" >&2
fi
mkdir -p "$work"

# 1. The package, from BUILD.
rm -rf "$work/pkg"
(cd "$work" && cpack --config "$build/CPackConfig.cmake" -B "$work/pkg" >"$work/cpack.log" 2>&1) ||
  { cat "$work/cpack.log" >&2; fail "cpack failed"; }
deb=$(ls "$work"/pkg/consumer-cake_*.deb)
echo "package: $(basename "$deb") ($(du -h "$deb" | cut -f1))"

# 2. A clean Debian 12 with systemd and a kernel, made once; each run starts from a copy of it.
base="$work/base"
if [ ! -e "$base/.complete" ]; then
  rm -rf "$base"
  debootstrap --variant=minbase \
    --include=systemd,systemd-sysv,udev,dbus,linux-image-amd64,initramfs-tools,passwd \
    bookworm "$base" "$mirror" >"$work/debootstrap.log" 2>&1 ||
    { tail -20 "$work/debootstrap.log" >&2; fail "debootstrap failed"; }
  touch "$base/.complete"
fi
guest="$work/guest"
rm -rf "$guest"
cp -a "$base" "$guest"
rm -f "$guest/.complete"
cp "$deb" "$guest/root/consumer-cake.deb"
# apt resolves the package's dependencies now, from the mirror, into the guest's cache only.
cp /etc/resolv.conf "$guest/etc/resolv.conf"
echo "deb $mirror bookworm main" >"$guest/etc/apt/sources.list"
for fs in proc sys dev; do mount --bind "/$fs" "$guest/$fs"; done
trap 'for fs in dev sys proc; do umount -l "$guest/$fs" 2>/dev/null || true; done' EXIT
chroot "$guest" apt-get update -qq
chroot "$guest" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --download-only \
  /root/consumer-cake.deb >"$work/download.log" 2>&1 ||
  { tail -20 "$work/download.log" >&2; fail "apt could not resolve the package's dependencies"; }
for fs in dev sys proc; do umount -l "$guest/$fs"; done
trap - EXIT
dpkg-query --admindir="$guest/var/lib/dpkg" -W consumer-cake >/dev/null 2>&1 &&
  fail "the package is already installed in the guest before boot"

# 3. What the booted guest runs once, on its console, then powers off.
cat >"$guest/root/boot-check.sh" <<'GUEST'
#!/bin/bash
# The transcript goes to a file on the guest's disk (read back after power-off) and the console.
exec > >(tee /root/boot-check.txt >/dev/ttyS0) 2>&1
failures=0
check() {  # check NAME COMMAND...: runs it, prints its output and PASS/FAIL NAME
  echo "--- $1"
  local name=$1; shift
  if "$@"; then echo "PASS $name"; else echo "FAIL $name (exit $?)"; failures=$((failures + 1)); fi
}
echo "=== guest: $(. /etc/os-release; echo "$PRETTY_NAME"), kernel $(uname -r), systemd $(systemctl --version | head -1 | cut -d' ' -f2), PID 1 $(cat /proc/1/comm)"
# No network here: apt finds every dependency in its cache ("Need to get 0 B").
check install env DEBIAN_FRONTEND=noninteractive apt-get install -y /root/consumer-cake.deb
check caked_user_and_group sh -c 'id caked && getent group cake'
check config_modes sh -c 'stat -c "%A %U:%G %n" /etc/caked /etc/caked/caked.conf'
check unit_enabled_started systemctl enable --now caked
check unit_active sh -c 'systemctl show caked -p Type -p ActiveState -p SubState -p NRestarts -p StatusText; systemctl is-active caked'
# Delegate=yes: each job gets its own cgroup under the unit's (not the process-group fallback).
check job_containment_cgroup sh -c 'journalctl -u caked --no-pager -o cat | grep "job containment:" | tail -1 | grep "job containment: cgroup v2 per job"'
check socket_and_state sh -c 'stat -c "%A %U:%G %n" /run/caked /run/caked/caked.sock /var/lib/caked /var/lib/caked/tokens /var/lib/caked/tokens/ci'
useradd --create-home --groups cake alice
useradd --create-home bob
check status_as_group_member runuser -u alice -- cakectl status -o table
check status_json_as_group_member sh -c 'runuser -u alice -- cakectl status -o json | grep -q "\"version\""'
# Outside the group neither the socket (/run/caked is 0750 caked:cake) nor a token is reachable:
# cakectl must exit 4 (auth) or 5 (daemon unavailable), not 0 and not "command not found".
check status_refused_outside_group sh -c 'runuser -u bob -- cakectl status -o json; rc=$?; echo "cakectl exit $rc"; [ $rc -eq 4 ] || [ $rc -eq 5 ]'
# caked's own records (not only systemd's about it) reach the journal with a priority.
check journal_priorities sh -c 'journalctl -u caked --no-pager -o short-iso | tail -8; journalctl _SYSTEMD_UNIT=caked.service _COMM=caked --no-pager -o verbose | grep -m3 "PRIORITY="'
check restart sh -c 'systemctl restart caked && systemctl is-active caked && runuser -u alice -- cakectl status -o json >/dev/null'
check stop sh -c 'systemctl is-active caked && systemctl stop caked; systemctl show caked -p ActiveState -p Result -p ExecMainStatus; [ "$(systemctl show caked -p Result --value)" = success ] && [ "$(systemctl show caked -p ActiveState --value)" = inactive ]'
echo "=== deb_boot_check: $failures failed"
[ $failures -eq 0 ] && echo "=== DEB-BOOT-CHECK OK" || echo "=== DEB-BOOT-CHECK FAILED"
exec >/dev/null 2>&1  # lets tee finish writing the file
sleep 1
sync
systemctl poweroff
GUEST
chmod +x "$guest/root/boot-check.sh"
cat >"$guest/etc/systemd/system/cake-boot-check.service" <<'UNIT'
[Unit]
Description=Consumer CAKE package check
After=basic.target systemd-user-sessions.service
[Service]
Type=oneshot
ExecStart=/root/boot-check.sh
[Install]
WantedBy=multi-user.target
UNIT
ln -sf /etc/systemd/system/cake-boot-check.service \
  "$guest/etc/systemd/system/multi-user.target.wants/cake-boot-check.service"
# No login prompt on the console: a getty's vhangup() would cut the check's output off.
ln -sf /dev/null "$guest/etc/systemd/system/serial-getty@ttyS0.service"
ln -sf /dev/null "$guest/etc/systemd/system/getty@tty1.service"
echo "cake-deb-boot" >"$guest/etc/hostname"
echo "/dev/vda / ext4 rw 0 1" >"$guest/etc/fstab"

# 4. Boot it.
kernel=$(ls "$guest"/boot/vmlinuz-* | tail -1)
initrd=$(ls "$guest"/boot/initrd.img-* | tail -1)
cp "$kernel" "$work/vmlinuz"
cp "$initrd" "$work/initrd.img"
rm -f "$work/disk.img"
mkfs.ext4 -q -L cakeroot -d "$guest" "$work/disk.img" 3G
# KVM only where the CPU offers virtualisation to this machine: a /dev/kvm without vmx/svm (nested,
# not exposed) was seen to spin without booting. Otherwise TCG, slower but real.
accel=(-accel tcg,thread=multi -cpu max)
if [ -w /dev/kvm ] && grep -qE '\b(vmx|svm)\b' /proc/cpuinfo; then accel=(-accel kvm -cpu host); fi
echo "booting (${accel[*]})"
timeout 900 qemu-system-x86_64 "${accel[@]}" -m 2048 -smp 2 -nographic -no-reboot \
  -kernel "$work/vmlinuz" -initrd "$work/initrd.img" \
  -append "root=/dev/vda rw console=ttyS0 panic=-1" \
  -drive file="$work/disk.img",format=raw,if=virtio -nic none >"$work/console.log" 2>&1 || true
# The guest's own transcript, from its disk.
debugfs -R "cat /root/boot-check.txt" "$work/disk.img" >"$work/transcript.txt" 2>/dev/null ||
  fail "no transcript on the guest's disk (console: $work/console.log)"
cat "$work/transcript.txt"
grep -qx "=== DEB-BOOT-CHECK OK" "$work/transcript.txt" ||
  fail "the guest's checks did not all pass (console: $work/console.log)"
echo "deb_boot_check: ok"
