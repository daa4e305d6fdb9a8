#!/usr/bin/bash
# Stage 2 (PID 1 in the guest root): bring up dbus, btvirt with two LE controllers and bluetoothd, run the scenario,
# leave everything in /work (the host's run folder) and power off. Every wait is bounded; nothing here polls with
# sleep where an event can be awaited, because each process start costs ~0.3 s under software emulation.
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

# Read btvirt and bluetoothd into the page cache now: a cold start over 9p is what makes btvirt miss the 2 s
# HCI_Reset bound.
cat /usr/bin/btvirt /usr/libexec/bluetooth/bluetoothd > /dev/null

# btmon trace of everything (kept when something fails).
btmon -w /tmp/btmon.snoop > /dev/null 2>&1 &
echo $! > /run/btmon.pid

# btvirt: two LE controllers on one emulated radio. Each must answer the kernel's first HCI_Reset within 2 s;
# under TCG on a busy host it often misses ("Opcode 0x0c03 failed: -110") and that controller is never announced
# to bluetoothd (pitfall 2). A controller whose setup failed stays registered, so `hciconfig hciN up` runs the
# setup again against the now warm btvirt; only if that fails three times is btvirt itself restarted.
controller_up() { hciconfig "$1" 2>/dev/null | grep -q 'UP RUNNING'; }
start_btvirt() {
    btvirt -L -l2 > "/work/btvirt-$1.log" 2>&1 &
    btvirt_pid=$!
    for _ in $(seq 150); do
        [ -e /sys/class/bluetooth/hci0 ] && [ -e /sys/class/bluetooth/hci1 ] && break
        sleep 0.1
    done
    [ -e /sys/class/bluetooth/hci1 ] || return 1
    # The first setup runs right after registration; give it its 2 s bound to pass or fail, then bring both up
    # (HCIDEVUP runs the setup again where it failed). bluetoothd takes over powered controllers as they are.
    sleep 2.5
    for hci in hci0 hci1; do
        for retry in 1 2 3; do
            controller_up "$hci" && break
            timeout 15 hciconfig "$hci" up >> /work/guest.log 2>&1 && controller_up "$hci" && break
            log "$hci did not come up ($(dmesg | grep "$hci: Opcode" | tail -1)); retry $retry"
            setup_retries=$((setup_retries + 1))
        done
        controller_up "$hci" || return 1
    done
    # Set up, now down again: bluetoothd configures a controller (privacy, LE settings) only while it is off
    # ("Failed to set privacy: Rejected" and no adapter object otherwise).
    hciconfig hci0 down && hciconfig hci1 down
}
setup_retries=0
attempt=1
until start_btvirt $attempt; do
    log "btvirt attempt $attempt failed"
    kill -KILL "$btvirt_pid" 2>/dev/null; wait "$btvirt_pid" 2>/dev/null
    for _ in $(seq 50); do [ -e /sys/class/bluetooth/hci0 ] || break; sleep 0.1; done
    attempt=$((attempt + 1))
    [ $attempt -le 5 ] || { finish "FAIL btvirt never brought up two controllers"; exit 1; }
done
echo "btvirt starts $attempt, controller setup retries $setup_retries" > /work/btvirt-attempts
phase btvirt

/usr/libexec/bluetooth/bluetoothd -n -d -f /work/guest/main.conf > /tmp/bluetoothd.log 2>&1 &
echo $! > /run/bluetoothd.pid
for _ in $(seq 200); do
    dbus-send --system --print-reply --dest=org.bluez /org/bluez/hci1 org.freedesktop.DBus.Properties.Get \
        string:org.bluez.Adapter1 string:Address > /dev/null 2>&1 && break
    sleep 0.1
done
dbus-send --system --print-reply --dest=org.bluez /org/bluez/hci1 org.freedesktop.DBus.Properties.Get \
    string:org.bluez.Adapter1 string:Address > /dev/null 2>&1 || { finish "FAIL bluetoothd did not publish hci0 and hci1"; exit 1; }
phase bluetoothd
log "stack up: btvirt starts $attempt, setup retries $setup_retries, bluetoothd $(bluetoothd -v)"

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
