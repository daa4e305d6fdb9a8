#!/usr/bin/env bash
# Runs Tether against real BlueZ: boots Debian 12's kernel in qemu with the kernel Bluetooth stack, btvirt's two
# virtual LE controllers and bluetoothd 5.66, runs a scenario with Tether's binaries inside, and brings the results
# back through a 9p share. See deploy/real-bluez/README.md.
#
#   scripts/vm/real-bluez.sh [scenario]       # default scenario: tether (deploy/real-bluez/scenarios/<name>.sh)
#
# Exit status: 0 the scenario passed; 1 it failed (logs, bluetoothd log and btmon trace kept in the run folder), or
# the harness could not set itself up (an apt or kernel-download hiccup, a missing tool it should have installed);
# 77 this machine cannot run the VM at all: not x86_64, or qemu missing with no root or sudo to install it (a loud
# SKIP banner says why; never a silent pass). No KVM is not a reason: the VM runs under TCG.
# TETHER_REQUIRE_REAL_BLUEZ=1 (scripts/test.sh sets it in CI) turns that 77 into 1: the scenario must run.
# Environment: TETHER_VM_ACCEL=kvm|tcg (skip the probe), TETHER_VM_LINK=static|shared (see step 2),
# TETHER_VM_CACHE (kernel + initramfs cache),
# TETHER_VM_RUN (run folder), TETHER_VM_SCRATCH (swift build scratch path), TETHER_VM_CONFIGURATION (release),
# TETHER_VM_BOOT_SECONDS (bound, 540), TETHER_VM_PRODUCTS (the binaries to build and copy, instead of the
# scenario's "# needs:" line), TETHER_VM_BIN (a folder with those binaries already built: no build),
# TETHER_VM_FAULT (handed to the guest's scenario: a fault planted on purpose to see its check fail, e.g.
# tetherd-health's wrong-value:5), TETHER_VM_PREPARE_ONLY (see step 6).
set -euo pipefail
cd "$(dirname "$0")/../.."
repo=$(pwd)
scenario=${1:-tether}
harness=$repo/deploy/real-bluez
[ -f "$harness/scenarios/$scenario.sh" ] || { echo "real-bluez: no scenario '$scenario' in $harness/scenarios" >&2; exit 2; }

# This machine cannot run the VM at all: 77, or 1 when the scenario is required.
skip() {
    echo "############################################################################"
    if [ "${TETHER_REQUIRE_REAL_BLUEZ:-0}" = 1 ]; then
        echo "### FAIL real-bluez (required: TETHER_REQUIRE_REAL_BLUEZ=1): $*"
        echo "############################################################################"
        exit 1
    fi
    echo "### SKIP real-bluez: $*"
    echo "############################################################################"
    exit 77
}
# The harness could not set itself up on a machine that can run the VM: a failure, never a skip.
broken() {
    echo "real-bluez: HARNESS FAILURE: $*" >&2
    exit 1
}
now() { date +%s.%N; }
elapsed() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.1f", b - a }'; }
declare -A timing
started=$(now)

[ "$(uname -m)" = x86_64 ] || skip "the harness boots Debian's amd64 kernel; this machine is $(uname -m)"

# 1. Debian packages: the build's (scripts/setup/debian-packages.txt) and the harness's own.
step=$(now)
scripts/setup/install-deps.sh
mapfile -t wanted < <(grep -v '^\s*#' "$harness/debian-packages.txt" | tr -s ' \t' '\n' | grep -v '^$')
missing=()
for package in "${wanted[@]}"; do
    dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" || missing+=("$package")
done
if ((${#missing[@]})); then
    if [ "$(id -u)" = 0 ]; then as_root=(); elif command -v sudo >/dev/null; then as_root=(sudo); else
        skip "missing Debian packages (${missing[*]}) and no root or sudo to install them"; fi
    echo "real-bluez: installing ${missing[*]}"
    DEBIAN_FRONTEND=noninteractive timeout 600 "${as_root[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null \
        || { DEBIAN_FRONTEND=noninteractive timeout 300 "${as_root[@]}" apt-get update -qq && \
             DEBIAN_FRONTEND=noninteractive timeout 600 "${as_root[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null; } \
        || broken "could not install ${missing[*]} from Debian"
fi
command -v qemu-system-x86_64 >/dev/null || broken "qemu-system-x86_64 is not on PATH after installing ${harness#$repo/}/debian-packages.txt"
timing[installs]=$(elapsed "$step")

# 2. Tether's binaries. static (default): release builds with --static-swift-stdlib, as shipped (the toolchain is
#    not in the guest). shared: the debug build scripts/test.sh already made, with the toolchain's runtime
#    shared into the guest at the same path (no second compile of the whole package in CI).
step=$(now)
scratch=${TETHER_VM_SCRATCH:-$repo/.build}
link=${TETHER_VM_LINK:-static}
case $link in
    static) build_flags=(-c "${TETHER_VM_CONFIGURATION:-release}" --static-swift-stdlib) ;;
    shared) build_flags=(-c "${TETHER_VM_CONFIGURATION:-debug}") ;;
    *) echo "real-bluez: TETHER_VM_LINK must be static or shared, not '$link'" >&2; exit 2 ;;
esac
# A scenario names the products it runs on a "# needs:" line.
# TETHER_VM_PRODUCTS overrides it (the power-cut rig, which brings its own stage 2).
read -r -a products <<< "${TETHER_VM_PRODUCTS:-$(sed -n 's/^# needs: *//p' "$harness/scenarios/$scenario.sh" | head -1)}"
# TETHER_VM_BIN=DIR takes the products already built in DIR (another worktree's debug build, with
# TETHER_VM_LINK=shared) and builds nothing.
if [ -n "${TETHER_VM_BIN:-}" ]; then
    bin=$TETHER_VM_BIN
    for product in "${products[@]+"${products[@]}"}"; do
        [ -x "$bin/$product" ] || { echo "real-bluez: TETHER_VM_BIN has no $product ($bin)" >&2; exit 1; }
    done
else
    for product in "${products[@]+"${products[@]}"}"; do
        echo "== swift build ${build_flags[*]} --product $product"
        timeout 1800 swift build "${build_flags[@]}" --scratch-path "$scratch" --product "$product"
    done
    bin=$(swift build "${build_flags[@]}" --scratch-path "$scratch" --show-bin-path)
fi
swiftlib=
if [ "$link" = shared ] && ((${#products[@]})); then
    swiftlib=$(ldd "$bin/${products[0]}" | awk '/libswiftCore\.so/ { print $3 }' | xargs -r dirname)
    [ -d "$swiftlib" ] || { echo "real-bluez: cannot find the Swift runtime ${products[0]} links against" >&2; exit 1; }
fi
# A scenario whose "# controllers: bumble" line asks for Bumble's controllers (and a Bumble device) gets the pinned
# Bumble directory (scripts/setup/bumble-pylib.sh) shared into the guest as "pylib" (stage2.sh mounts it).
pylib=
if grep -q '^# controllers: *bumble' "$harness/scenarios/$scenario.sh"; then
    pylib=$(scripts/setup/bumble-pylib.sh) || broken "could not install Bumble (scripts/setup/bumble-pylib.sh)"
fi
timing[build]=$(elapsed "$step")

# 3. Debian 12's kernel, unpacked (never installed on this machine), and an initramfs that mounts the host's
#    /usr and /etc over 9p.
step=$(now)
cache=${TETHER_VM_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/tether-real-bluez}
mkdir -p "$cache"
kernel_package=${TETHER_VM_KERNEL:-$(apt-cache search --names-only '^linux-image-6\.1\.0-[0-9]+-amd64$' | cut -d' ' -f1 | sort -V | tail -1)}
if [ -z "$kernel_package" ]; then
    # Debian 12 has the package: its absence there is stale apt lists, a harness failure. Elsewhere the harness
    # cannot boot the kernel it is written for.
    grep -q '^12' /etc/debian_version 2>/dev/null \
        && broken "apt has no linux-image-6.1.0-*-amd64 package on Debian 12 (apt-get update?)" \
        || skip "apt has no linux-image-6.1.0-*-amd64 package (not Debian 12)"
fi
release=${kernel_package#linux-image-}
kernel_root=$cache/$release
if [ ! -f "$kernel_root/boot/vmlinuz-$release" ]; then
    rm -rf "$kernel_root.tmp" && mkdir -p "$kernel_root.tmp"
    (cd "$kernel_root.tmp" && timeout 300 apt-get download "$kernel_package" 2>&1 | grep -v '^W: Download is performed unsandboxed' || true)
    deb=$(find "$kernel_root.tmp" -maxdepth 1 -name "*.deb" | head -1)
    [ -n "$deb" ] || broken "could not download $kernel_package"
    dpkg-deb -x "$deb" "$kernel_root.tmp/root"
    depmod -b "$kernel_root.tmp/root" "$release"
    rm -rf "$kernel_root" && mv "$kernel_root.tmp/root" "$kernel_root" && rm -rf "$kernel_root.tmp"
fi
timing[kernel]=$(elapsed "$step")

step=$(now)
initramfs=$cache/initramfs-$release-$(cat "$harness/initramfs-init" | sha256sum | cut -c1-12).cpio.gz
if [ ! -f "$initramfs" ]; then
    staging=$(mktemp -d)
    mkdir -p "$staging"/{bin,proc,sys,dev,modules,newroot}
    cp /bin/busybox "$staging/bin/busybox"
    file "$staging/bin/busybox" 2>/dev/null | grep -q static || ldd /bin/busybox 2>&1 | grep -q 'not a dynamic' \
        || broken "/bin/busybox is not static (busybox-static is in ${harness#$repo/}/debian-packages.txt)"
    cp "$harness/initramfs-init" "$staging/init"
    : > "$staging/modules.order"
    for module in virtio_pci virtio_console 9pnet_virtio 9p overlay; do
        modprobe -d "$kernel_root" -S "$release" --show-depends "$module" | awk '$1 == "insmod" { print $2 }'
    done | awk '!seen[$0]++' | while read -r path; do
        cp "$path" "$staging/modules/"
        basename "$path" >> "$staging/modules.order"
    done
    (cd "$staging" && find . | cpio -o -H newc --quiet | gzip -1) > "$initramfs.tmp" && mv "$initramfs.tmp" "$initramfs"
    rm -rf "$staging"
fi
timing[initramfs]=$(elapsed "$step")

# 4. The run folder: guest scripts, the scenario and the binaries; the guest writes its results here.
run=${TETHER_VM_RUN:-$repo/.build/real-bluez/$(date -u +%Y%m%dT%H%M%SZ)-$scenario}
rm -rf "$run" && mkdir -p "$run/guest" "$run/bin"
cp "$harness/stage2.sh" "$harness/main.conf" "$run/guest/"
cp "$harness/scenarios/$scenario.sh" "$run/guest/scenario.sh"
cp "$harness"/check-*.py "$harness"/glucose-meter.py "$harness"/mcumgr_device.py "$harness"/scenarios/lib*.sh "$run/guest/" 2>/dev/null || true
# The control API's bus policy, for scenarios that run tetherd on the guest's system bus.
cp "$repo/deploy/dbus/io.tether.Gateway.conf" "$run/guest/"
for product in "${products[@]+"${products[@]}"}"; do cp "$bin/$product" "$run/bin/"; done
# A scenario whose "# firmware: imgtool" line updates its peripheral's firmware gets imgtool-signed images in
# run/firmware (made here: imgtool is not in the guest).
if grep -q '^# firmware: *imgtool' "$harness/scenarios/$scenario.sh"; then
    "$harness/make-firmware-images.sh" "$run/firmware" > "$run/firmware-images.log" 2>&1 \
        || broken "could not make the firmware images (deploy/real-bluez/make-firmware-images.sh; $run/firmware-images.log)"
fi

qemu_common=(
    -m 1024 -smp 2 -display none -monitor none -no-reboot -nic none
    -kernel "$kernel_root/boot/vmlinuz-$release" -initrd "$initramfs"
    -virtfs local,path=/usr,mount_tag=usr,security_model=none,readonly=on,multidevs=remap
    -virtfs local,path=/etc,mount_tag=etc,security_model=none,readonly=on,multidevs=remap
    -virtfs "local,path=$kernel_root,mount_tag=kernel,security_model=none,readonly=on,multidevs=remap"
    -virtfs "local,path=$run,mount_tag=work,security_model=none,multidevs=remap"
)
kernel_args="console=ttyS0 panic=-1 loglevel=4"
[ -n "$pylib" ] && qemu_common+=(-virtfs "local,path=$pylib,mount_tag=pylib,security_model=none,readonly=on,multidevs=remap")
if [ -n "$swiftlib" ]; then
    qemu_common+=(-virtfs "local,path=$swiftlib,mount_tag=swiftlib,security_model=none,readonly=on,multidevs=remap")
    kernel_args+=" tether.swiftlib=$swiftlib"
fi

# 5. KVM where it really works (here /dev/kvm exists but a stock kernel hangs under it): a short probe boot.
step=$(now)
accel=${TETHER_VM_ACCEL:-}
if [ -z "$accel" ]; then
    accel=tcg
    if [ -r /dev/kvm ] && [ -w /dev/kvm ]; then
        probe_log=$run/kvm-probe.console
        # In a subshell so the shell's "Aborted" notice for a qemu that aborts under KVM stays out of the log.
        (timeout -s KILL 20 qemu-system-x86_64 -accel kvm -cpu host "${qemu_common[@]}" \
            -serial "file:$probe_log" -append "$kernel_args tether.probe=1" >/dev/null 2>&1) 2>/dev/null || true
        grep -q 'tether-vm: PROBE-OK' "$probe_log" 2>/dev/null && accel=kvm
    fi
fi
case $accel in
    kvm) accel_args=(-accel kvm -cpu host) ;;
    tcg) accel_args=(-accel tcg,thread=multi -cpu max) ;;
    *) echo "real-bluez: TETHER_VM_ACCEL must be kvm or tcg, not '$accel'" >&2; exit 2 ;;
esac
timing[kvm_probe]=$(elapsed "$step")
[ "$accel" = tcg ] && echo "== KVM not usable here (probe did not reach the guest); software emulation (TCG)"

# TETHER_VM_PREPARE_ONLY=FILE: stop here and leave the qemu arguments in FILE (bash, to source) for a harness
# that boots the VM itself (scripts/durability/power-cut.sh: many boots of one disk, each cut by SIGKILL).
if [ -n "${TETHER_VM_PREPARE_ONLY:-}" ]; then
    declare -p accel_args qemu_common kernel_args run > "$TETHER_VM_PREPARE_ONLY"
    exit 0
fi

# 6. Boot, run, power off: bounded as a whole.
step=$(now)
echo "== booting $release under $accel; run folder $run"
set +e
timeout -s KILL "${TETHER_VM_BOOT_SECONDS:-660}" qemu-system-x86_64 "${accel_args[@]}" "${qemu_common[@]}" \
    -serial "file:$run/console.log" \
    -append "$kernel_args TETHER_SCENARIO_SECONDS=${TETHER_SCENARIO_SECONDS:-480}${TETHER_VM_FAULT:+ TETHER_VM_FAULT=$TETHER_VM_FAULT}" \
    > "$run/qemu.log" 2>&1
qemu_status=$?
set -e
timing[vm]=$(elapsed "$step")

phases() {
    [ -f "$run/phases" ] || return 0
    awk 'BEGIN { last = 0 } { printf "  guest %-10s at %6.1f s (+%.1f s)\n", $1, $2, $2 - last; last = $2 }' "$run/phases"
}
echo "== timings (s): installs ${timing[installs]}, build ${timing[build]}, kernel ${timing[kernel]}," \
    "initramfs ${timing[initramfs]}, kvm probe ${timing[kvm_probe]} ($accel), vm ${timing[vm]}, total $(elapsed "$started")"
phases
result=$(cat "$run/result" 2>/dev/null || echo "FAIL no result: qemu exited with status $qemu_status (timeout or crash; see console.log)")
if [ "$result" = PASS ]; then
    rm -rf "$run/bin"  # copies of the build (up to ~200 MB for debug binaries); a failed run keeps them
    echo "== real-bluez scenario '$scenario': PASS ($run)"
    cat "$run/summary.txt" 2>/dev/null || true
    exit 0
fi
echo "== real-bluez scenario '$scenario': $result"
echo "-- kept in $run: console.log, guest.log, scenario.log, bluetoothd.log, btmon.snoop (btmon -r), dmesg.txt"
for file in guest.log scenario.log; do
    [ -f "$run/$file" ] && { echo "-- tail $file"; tail -n 40 "$run/$file"; }
done
[ -f "$run/bluetoothd.log" ] && { echo "-- bluetoothd errors"; grep -iE 'error|fail' "$run/bluetoothd.log" | tail -n 20; }
[ -f "$run/guest.log" ] || { echo "-- tail console.log"; tail -n 40 "$run/console.log" 2>/dev/null; }
exit 1
