#!/usr/bin/bash
# Stage 2 (PID 1 in the guest root): bring up dbus, btvirt with two LE controllers (or, for a scenario with a
# "# controllers: bumble" line, Bumble's vhci controller) and bluetoothd, run the scenario, leave everything in
# /work (the host's run folder) and power off. Every wait is bounded; nothing here polls with sleep where an event
# can be awaited, because each process start costs ~0.3 s under software emulation.
set -u
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin HOME=/root LANG=C.UTF-8
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t tmpfs tmp /tmp
mount -t tmpfs run /run
mount -t tmpfs var /var && mkdir -p /var/lib/bluetooth /var/lib/dbus /var/log /root && ln -s /run /var/run
mkdir -p /dev/pts && mount -t devpts devpts /dev/pts
echo 1 > /proc/sys/kernel/sysrq
log() { echo "tether-vm: [$(cut -d' ' -f1 /proc/uptime)] $*" | tee -a /work/guest.log > /dev/console; }
finish() {
    log "result: $1"
    echo "$1" > /work/result
    dmesg > /work/dmesg.txt 2>/dev/null
    kill -INT "$(cat /run/btmon.pid 2>/dev/null)" 2>/dev/null
    kill -TERM "$(cat /run/bluetoothd.pid 2>/dev/null)" 2>/dev/null
    for _ in $(seq 30); do kill -0 "$(cat /run/btmon.pid 2>/dev/null)" 2>/dev/null || break; sleep 0.1; done
    # Logs were written to the guest's tmpfs (bluetoothd -d over 9p slowed the whole stack down).
    cp /tmp/bluetoothd.log /tmp/btmon.snoop /work/ 2>/dev/null
    sync
    echo o > /proc/sysrq-trigger
    sleep 10
}
trap 'finish "FAIL stage 2 exited unexpectedly"' EXIT
phase() { echo "$1 $(cut -d' ' -f1 /proc/uptime)" >> /work/phases; }
phase userspace

# Modules: the host's /usr has none for this kernel; point the kernel's autoloader at the unpacked package.
kernel_release=$(uname -r)
printf '#!/bin/sh\nexec /usr/sbin/modprobe -d /kernel "$@"\n' > /run/modprobe && chmod +x /run/modprobe
echo /run/modprobe > /proc/sys/kernel/modprobe
# AF_ALG for btvirt's crypto; ecdh/drbg/cmac/ccm for LE Secure Connections (real-bluez-vm.md, pitfall 1).
/run/modprobe -a bluetooth hci_vhci af_alg algif_hash algif_skcipher ecdh_generic cmac ccm drbg aes_generic \
    || { finish "FAIL could not load the Bluetooth modules for $kernel_release"; exit 1; }

# D-Bus system bus (the host's configuration, machine id made up here).
dbus-uuidgen > /etc/machine-id && cp /etc/machine-id /var/lib/dbus/machine-id
mkdir -p /run/dbus
dbus-daemon --system --nopidfile --nofork --nosyslog > /work/dbus-daemon.log 2>&1 &
for _ in $(seq 100); do [ -S /run/dbus/system_bus_socket ] && break; sleep 0.1; done
[ -S /run/dbus/system_bus_socket ] || { finish "FAIL dbus-daemon did not start"; exit 1; }
phase dbus

# The controllers: btvirt's two (hci0, hci1) unless the scenario's "# controllers: bumble" line asks for Bumble's
# (one vhci controller, hci0, linked to a Bumble host's controller on Bumble's own emulated radio).
controllers=$(sed -n 's/^# controllers: *//p' /work/guest/scenario.sh | head -1)
controllers=${controllers:-btvirt}

# btmon trace of everything (kept when something fails).
btmon -w /tmp/btmon.snoop > /dev/null 2>&1 &
echo $! > /run/btmon.pid

# btvirt: two LE controllers on one emulated radio. Each must answer the kernel's first HCI_Reset within 2 s;
# btvirt -l2 creates both before it serves either, and under TCG on a busy host the first one often misses
# ("Opcode 0x0c03 failed: -110"): that controller is then never announced to bluetoothd (pitfall 2; HCIDEVUP
# runs the setup again but the kernel still does not announce the index). Detect it and restart btvirt.
start_btvirt() {
    dmesg -C
    btvirt -L -l2 > "/work/btvirt-$1.log" 2>&1 &
    btvirt_pid=$!
    for _ in $(seq 150); do
        if dmesg | grep -q 'failed: -110'; then return 1; fi
        if [ -e /sys/class/bluetooth/hci0 ] && [ -e /sys/class/bluetooth/hci1 ]; then break; fi
        sleep 0.1
    done
    [ -e /sys/class/bluetooth/hci1 ] || return 1
    # The reset runs right after registration; give it its 2 s bound to fail before calling this a success.
    for _ in $(seq 25); do
        if dmesg | grep -q 'failed: -110'; then return 1; fi
        sleep 0.1
    done
    return 0
}
case $controllers in
btvirt)
    # Read btvirt and bluetoothd into the page cache now: a cold start over 9p is what makes btvirt miss the 2 s
    # HCI_Reset bound.
    cat /usr/bin/btvirt /usr/libexec/bluetooth/bluetoothd > /dev/null
    setup_retries=0
    attempt=1
    until start_btvirt $attempt; do
        log "btvirt attempt $attempt failed: $(dmesg | grep -m1 -E 'failed|error' || echo 'controllers did not appear')"
        kill -KILL "$btvirt_pid" 2>/dev/null; wait "$btvirt_pid" 2>/dev/null
        for _ in $(seq 50); do [ -e /sys/class/bluetooth/hci0 ] || break; sleep 0.1; done
        attempt=$((attempt + 1))
        [ $attempt -le 8 ] || { finish "FAIL btvirt never brought up two controllers"; exit 1; }
    done
    echo "$attempt" > /work/btvirt-attempts
    phase btvirt
    last_adapter=hci1
    ;;
bumble)
    # Bumble (pinned, scripts/setup/bumble-pylib.sh) from the host's directory shared as "pylib" (real-bluez.sh),
    # for the host's own /usr/bin/python3. Its controllers app attaches controller C0 to this kernel through
    # /dev/vhci (hci0) and serves C1, on the same emulated radio, to a Bumble host at tcp-client:127.0.0.1:9000.
    mkdir -p /opt/pylib
    mount -t 9p -o trans=virtio,version=9p2000.L,msize=262144,ro pylib /opt/pylib \
        || { finish "FAIL could not mount the Bumble directory (pylib share)"; exit 1; }
    ip link set lo up
    PYTHONPATH=/opt/pylib PYTHONDONTWRITEBYTECODE=1 python3 -m bumble.apps.controllers vhci tcp-server:_:9000 \
        > /work/bumble-controllers.log 2>&1 &
    echo $! > /run/bumble-controllers.pid
    # Python and Bumble's imports over 9p under TCG: 52 s on a loaded host (2 cores, load 6-7); bounded at 150 s.
    deadline=$((SECONDS + 150))
    until [ -e /sys/class/bluetooth/hci0 ] || ((SECONDS >= deadline)); do sleep 0.2; done
    [ -e /sys/class/bluetooth/hci0 ] || { finish "FAIL Bumble's vhci controller did not appear within 150 s"; exit 1; }
    attempt=bumble
    phase bumble
    last_adapter=hci0
    ;;
*)
    finish "FAIL unknown controllers '$controllers' on the scenario's '# controllers:' line"; exit 1 ;;
esac

/usr/libexec/bluetooth/bluetoothd -n -d -f /work/guest/main.conf > /tmp/bluetoothd.log 2>&1 &
echo $! > /run/bluetoothd.pid
for _ in $(seq 200); do
    dbus-send --system --print-reply --dest=org.bluez /org/bluez/$last_adapter org.freedesktop.DBus.Properties.Get \
        string:org.bluez.Adapter1 string:Address > /dev/null 2>&1 && break
    sleep 0.1
done
dbus-send --system --print-reply --dest=org.bluez /org/bluez/$last_adapter org.freedesktop.DBus.Properties.Get \
    string:org.bluez.Adapter1 string:Address > /dev/null 2>&1 || { finish "FAIL bluetoothd did not publish hci0..$last_adapter"; exit 1; }
phase bluetoothd
log "stack up: controllers $controllers (btvirt starts: $attempt), bluetoothd $(bluetoothd -v)"

cd /work
if timeout "${TETHER_SCENARIO_SECONDS:-240}" bash /work/guest/scenario.sh > /work/scenario.log 2>&1; then
    phase scenario
    trap - EXIT
    finish "PASS"
else
    status=$?
    phase scenario
    trap - EXIT
    finish "FAIL scenario exited with status $status (see scenario.log)"
fi
