#!/usr/bin/bash
# The power-cut rig's guest (scripts/durability/power-cut.sh; docs/design/durability.md, "Power cuts"). PID 1 in
# the VM's root (stage 1 is deploy/real-bluez/initramfs-init). The state directory /state is an ext4 filesystem on
# the VM's virtual disk: tetherd's database, tether-server's database and its token live there and nowhere else.
# The host writes `/work/cycle` (the 9p run folder) before each boot: "<number> <mode>".
#
#   setup  an empty disk: format-free start of the whole system (a private dbus-daemon, tether-sim, tether-server
#          on SQLite, tetherd), pair the devices, stream a little, stop cleanly, power off.
#   cut    first CHECK what the last cut left (nothing started yet): every event a device saw ACKed, in any earlier
#          boot, is in the gateway's database (tether-sim's released-event log is on the 9p share, which the cut
#          does not touch); both databases pass integrity_check; no feed or health cursor is behind its last sample;
#          no stored health record is there twice or missing below its cursor (check.py health). Then
#          start the system and let the devices stream until the host kills qemu (SIGKILL: every write the guest
#          had not flushed to its disk is gone, as with a pulled plug).
#   final  the same check, then start, stop the users, let the devices deliver and sync drain, and check the
#          gateway and the server hold the same events, every ACKed one among them, and no dead letters; and that
#          every record in the glucose meter's memory was read once and its sample is on the server once.
#
# Besides the consumption devices, a glucose meter (the cold lane: stored records read over RACP from the saved
# cursor, samples and cursor in one transaction). A meter's memory outlives a gateway's power cut, but tether-sim
# restarts with every boot, so the meter's history is fixed (`historyStartsAt`, from /work/health-history-start,
# and one seed for the whole run) and grows by 50 records a boot: each boot the gateway has new records to read,
# and a cut can land while it reads them.
#
# Results go to /work: check-<n>.txt, result-<n> (PASS/FAIL ...), guest-<n>.log. With /work/control present every
# daemon runs under eatmydata (fsync and fdatasync do nothing): the control run, which must lose ACKed events.
set -u
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin HOME=/root LANG=C.UTF-8
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t tmpfs tmp /tmp
mount -t tmpfs run /run
mount -t tmpfs var /var && mkdir -p /var/lib/dbus /var/log /root && ln -s /run /var/run
mkdir -p /dev/pts && mount -t devpts devpts /dev/pts
ln -sf /proc/self/fd /dev/fd  # process substitution
echo 1 > /proc/sys/kernel/sysrq
read -r cycle mode devices < /work/cycle
log() { echo "power-cut: [$(cut -d' ' -f1 /proc/uptime)] boot $cycle: $*" | tee -a "/work/guest-$cycle.log" > /dev/console; }
finish() {
    log "result: $1"
    [ -n "${work:-}" ] && mkdir -p "/work/logs-$cycle" && cp "$work"/*.log "$work"/*.json "/work/logs-$cycle/" 2>/dev/null
    sync
    umount /state 2>/dev/null
    echo "$1" > "/work/result-$cycle"
    echo o > /proc/sysrq-trigger
    sleep 10
}
trap 'finish "FAIL stage 2 exited unexpectedly"' EXIT

printf '#!/bin/sh\nexec /usr/sbin/modprobe -d /kernel "$@"\n' > /run/modprobe && chmod +x /run/modprobe
echo /run/modprobe > /proc/sys/kernel/modprobe
/run/modprobe -a virtio_blk ext4 || { finish "FAIL could not load virtio_blk and ext4"; exit 1; }
for _ in $(seq 100); do [ -b /dev/vda ] && [ -b /dev/vdb ] && break; sleep 0.1; done
mkdir -p /state /binaries
# The second disk: the binaries, and the Swift runtime of a shared-link build, mounted over the 9p copy stage 1
# mounted (power-cut.sh: from a disk the page cache keeps them between process starts).
mount -t ext4 -o ro /dev/vdb /binaries || { finish "FAIL could not mount the binaries disk"; exit 1; }
swiftlib=$(sed -n 's/.*tether\.swiftlib=\([^ ]*\).*/\1/p' /proc/cmdline)
if [ -n "$swiftlib" ] && [ -d /binaries/swiftlib ]; then mount --bind /binaries/swiftlib "$swiftlib"; fi
# data=ordered (ext4's default) and barriers on: what a Debian install on an SD card or SSD runs with.
mount -t ext4 /dev/vda /state || { finish "FAIL could not mount the state disk"; exit 1; }
log "mode $mode, $devices devices, state disk mounted (journal recovery, if any, in dmesg)"
dmesg | grep -E 'EXT4-fs.*(recover|orphan|error)' >> "/work/guest-$cycle.log"

ip link set lo up  # tetherd syncs to tether-server on 127.0.0.1
dbus-uuidgen > /etc/machine-id && cp /etc/machine-id /var/lib/dbus/machine-id
cd /work/guest
bin=/binaries/bin
python=/usr/bin/python3
tool=power-cut
keep=true
source scripts/demo/system.sh
source scripts/durability/drain.sh
# Runtime files (the bus socket, logs, the simulator's config) on tmpfs; what must survive on /state.
work=/run/rig
mkdir -p "$work" /state/gateway /state/server
pids=()
declare -A names=()
released=/work/released.log
# Under software emulation beside a busy host a `tether status` can take more than drain.sh's 10 s: a lane once saw
# every call of two minutes time out (an empty status.json, nothing in tether-status.log) and failed a boot whose
# check had passed, as "devices did not reconnect". The bound here stops a hung CLI, not a slow one.
status_timeout=45
wrap=()
[ -f /work/control ] && wrap=(eatmydata)

# What the last cut left, checked before anything opens the databases.
check_state() {
    [ -f /state/gateway/gateway.sqlite ] || { echo "no gateway database" > "/work/check-$cycle.txt"; return 1; }
    "$python" scripts/durability/check.py after-cut "$released" /state/gateway/gateway.sqlite \
        /state/server/server.sqlite /work/cursors.txt > "/work/check-$cycle.txt" 2>&1
}

# tether-sim: every device bonded after setup, its boot counter above every earlier boot's (64 per boot: no
# reboots happen within one, see `load` below), its released events appended to the 9p log; and the glucose meter
# with 50 records more than in the boot before. One seed for every boot: a device's seed derives from it, and the
# meter's records must be the same readings each time (the users' hits differ by boot through `load`'s seed).
glucose_records_per_boot=50
glucose_records=$((glucose_records_per_boot * (cycle + 1)))
health_addresses=(C0:48:45:00:00:01)
start_rig_sim() {
    "$python" - "$devices" "$cycle" "$released" "$glucose_records" "$(cat /work/health-history-start)" > "$work/sim.json" <<'EOF'
import json, sys
count, cycle, log, records, history_start = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], int(sys.argv[4]), int(sys.argv[5])
devices = [{"address": "C0:54:45:00:00:%02X" % n, "name": "Tether-%04d" % n, "serial": "TS%08d" % n,
            "rssi": -45 - 4 * n, "pairing": "justWorks", "firmware": ["1.4", "2.0", "1.0"][(n - 1) % 3],
            "bootCounter": cycle * 64 + 1, "bonded": cycle > 0} for n in range(1, count + 1)]
devices.append({"address": "C0:48:45:00:00:01", "name": "Sim-Glucose", "serial": "HS00000001", "bonded": cycle > 0,
                "health": {"kind": "glucose", "storedRecords": records, "measurementIntervalSeconds": 1,
                           "historyStartsAt": history_start, "contextEvery": 4, "seed": 21}})
print(json.dumps({"seed": 11, "devices": devices, "releasedLog": log}, indent=1))
EOF
    start tether-sim "$work/sim.log" "$bin/tether-sim" --bus "$bus" --config "$work/sim.json"
    wait_for "tether-sim" 60 grep -q '^DBUS_SYSTEM_BUS_ADDRESS=' "$work/sim.log"
    addresses=()
    for ((n = 1; n <= devices; n++)); do addresses+=("$(printf 'C0:54:45:00:00:%02X' "$n")"); done
}

start_rig_server() {
    if [ "$mode" = setup ]; then
        "$bin/tether-server" token create --db /state/server/server.sqlite --tenant rig --gateway rig-gateway \
            --output /state/server/sync.token > /dev/null
    fi
    cp /state/server/sync.token "$work/sync.token"
    start tether-server "$work/server.log" "${wrap[@]}" "$bin/tether-server" serve --db /state/server/server.sqlite \
        --listen 127.0.0.1:0 --log-level warning
    wait_for "tether-server" 60 grep -q '^listening on ' "$work/server.log"
    server=$(grep -m1 '^listening on ' "$work/server.log" | sed 's/^listening on //')
}

start_system() {
    start_bus
    start_rig_sim
    log "tether-sim up"
    start_rig_server
    log "tether-server up"
    write_tetherd_config $((devices + ${#health_addresses[@]})) /state/gateway
    start tetherd "$work/tetherd.log" "${wrap[@]}" "$bin/tetherd" --config "$work/tether.toml"
    tetherd_pid=${pids[-1]}
    wait_for "tetherd's control API" 60 tetherd_ready
    log "tetherd up"
}

# The devices' users: hits at the demo's rate, no reboots inside a boot (the boot counter spacing above).
start_load() {
    start load "$work/load.log" "$python" -c "
import sys; sys.path.insert(0, 'scripts/demo'); import devices
devices.load(sys.argv[1], sys.argv[2], sys.argv[3].split(','), seed=$cycle, reboot_every=1e9)" "$bus" "$work/load.json" "$(device_list)"
    load_pid=${pids[-1]}
}

# Events ACKed in this boot: the released-event log grew past its length at the boot's start.
acked_at_boot=$(wc -l < "$released")
acking() { (($(wc -l < "$released") > acked_at_boot + 3 * devices)); }

connected() {
    read_status
    [ "$(status_field devices_connected)" = $((devices + ${#health_addresses[@]})) ]
}

stop_all() {
    local i pid
    for ((i = ${#pids[@]} - 1; i >= 0; i--)); do
        pid=${pids[i]}
        kill -TERM -- "-$pid" 2>/dev/null || continue
        for _ in $(seq 150); do kill -0 -- "-$pid" 2>/dev/null || break; sleep 0.1; done
        kill -KILL -- "-$pid" 2>/dev/null || true
    done
}

# After a cut: check what it left, start everything, and return once the devices are connected and ACKs flow in
# this boot (under emulation the users' first hits take seconds; a cut before that would test nothing new).
recover_and_stream() {
    if ! check_state; then trap - EXIT; finish "FAIL check after $1: $(tr '\n' ';' < "/work/check-$cycle.txt")"; exit 1; fi
    log "check passed: $(head -1 "/work/check-$cycle.txt")"
    start_system
    wait_for "every device connected" 300 connected || {
        tail -3 "$work/tether-status.log" >> "/work/guest-$cycle.log"
        finish "FAIL devices did not reconnect ($(status_field devices_connected 2>/dev/null || echo 'no status') connected)"
        exit 1
    }
    log "every device connected"
    start_load
    wait_for "events ACKed in this boot" 180 acking || { finish "FAIL no event was ACKed in this boot"; exit 1; }
}

case $mode in
setup)
    [ -f /work/control ] && log "CONTROL RUN: tetherd and tether-server under eatmydata (no fsync)"
    start_system
    "$bin/tether" pair "${addresses[@]:0:1}" --yes --timeout 120 > /dev/null || { finish "FAIL pairing ${addresses[0]}"; exit 1; }
    for address in "${addresses[@]:1}" "${health_addresses[@]}"; do
        "$bin/tether" pair "$address" --yes --timeout 120 > /dev/null || { finish "FAIL pairing $address"; exit 1; }
    done
    wait_for "every device connected" 120 connected || { finish "FAIL devices did not connect"; exit 1; }
    start_load
    wait_for "events ACKed in this boot" 180 acking || { finish "FAIL no event was ACKed in the setup boot"; exit 1; }
    stop_all
    log "setup done: $(wc -l < "$released") events ACKed so far"
    trap - EXIT
    finish "PASS setup"
    ;;
cut)
    recover_and_stream "cut $((cycle - 1))"
    echo streaming > "/work/streaming-$cycle"
    log "streaming; waiting for the cut"
    # The host cuts the power; this bound only stops a host that never does.
    sleep 600
    trap - EXIT
    finish "FAIL the host never cut the power"
    ;;
final)
    recover_and_stream "the last cut"
    kill -TERM -- "-$load_pid" 2>/dev/null
    # Drain: no device holds an event, the outbox is empty, the server has what the gateway has, and the meter's
    # memory is read and uploaded.
    drained=false
    for _ in $(seq 180); do
        read_status
        read -r pending in_flight failed < <(status_field outbox_pending outbox_in_flight outbox_failed)
        read -r _ held < <("$python" scripts/demo/devices.py device-stats "$bus" "$(device_list)")
        read -r _ health_waiting glucose_read _ < <("$python" scripts/demo/devices.py health-count /state/gateway/gateway.sqlite)
        if ((held == 0 && pending + in_flight + failed == 0 && glucose_read == glucose_records && health_waiting == 0)) \
            && "$python" scripts/durability/check.py same /state/gateway/gateway.sqlite /state/server/server.sqlite > /dev/null 2>&1; then
            drained=true
            break
        fi
        timeout 10 "$bin/tether" sync > /dev/null 2>&1 || true
        pause 1
    done
    read_status
    dead=$(status_field outbox_dead)
    out=/work/check-final.txt
    {
        "$python" scripts/durability/check.py released-file "$released" /state/gateway/gateway.sqlite /state/server/server.sqlite
        "$python" scripts/durability/check.py same /state/gateway/gateway.sqlite /state/server/server.sqlite
        echo "dead_letters $dead drained $drained"
        verdict=ok
        figures=$("$python" scripts/demo/devices.py health-verify /state/gateway/gateway.sqlite \
            /state/server/server.sqlite "$glucose_records" rig) || verdict=FAILED
        echo "health $figures $verdict"
        "$python" scripts/durability/check.py health /state/gateway/gateway.sqlite
    } > "$out" 2>&1
    stop_all
    "$python" scripts/durability/check.py totals /state/gateway/gateway.sqlite /state/server/server.sqlite >> "$out"
    trap - EXIT
    if $drained && ((dead == 0)) && grep -q ' missing_gateway 0 missing_server 0$' "$out" \
        && grep -q ' only_gateway 0 only_server 0$' "$out" && grep -qE ' ok ok$' "$out" \
        && grep -q '^health {.*} ok$' "$out" && grep -q '^health_records [0-9]* problems 0$' "$out"; then
        finish "PASS final"
    else
        finish "FAIL final check: $(tr '\n' ';' < "$out")"
    fi
    ;;
*)
    finish "FAIL unknown mode '$mode'"
    ;;
esac
