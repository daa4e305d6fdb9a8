# The tetherd scenario's body (sourced by scenarios/tetherd*.sh, which set NOTIFY_METHOD): the real gateway on the
# guest's real system bus. tether-server on SQLite on 127.0.0.1 with a 0600 token; tetherd on hci1 with sync and
# the io.tether.Gateway bus policy; the firmware model as a passkey peripheral on hci0. The `tether` CLI scans,
# pairs (the device shows the passkey, the technician types it at the CLI's prompt), changes settings; tetherd
# connects, subscribes, stores hits and ACKs after commit, time-syncs, reconnects after the device's power cycle
# and syncs everything to the server. With FIRMWARE=1 (scenarios/tetherd-firmware.sh) the device also serves MCUmgr's
# SMP service and `tether firmware update` then installs a new imgtool-signed image through tetherd and bluetoothd
# (upload, test, reset, the device back on the new image, confirm). check-tetherd.py then compares device, gateway
# database, CLI and server.
set -euo pipefail
passkey=246810   # the peripheral requires an authenticated bond; with --shows-passkey its kernel picks the number
hits=20
hits_after_reboot=10
serial=TTH-VM-0001
FIRMWARE=${FIRMWARE:-0}
state=/tmp/tetherd
mkdir -p $state
source /work/guest/lib-guest.sh

# Loopback: tetherd reaches tether-server on 127.0.0.1 (the guest has no other network).
ip link set lo up

# 1. The control API's bus policy (lib-guest.sh).
install_bus_policy

# 2. tether-server on SQLite, loopback only; the gateway's token file must be 0600.
/work/bin/tether-server token create --db $state/server.sqlite --tenant vm --gateway vm-gateway --output $state/sync.token > /dev/null
stat -c %a $state/sync.token > /work/token-mode
/work/bin/tether-server serve --db $state/server.sqlite --listen 127.0.0.1:0 --log-level info > /work/server.log 2>&1 &
pids+=($!)
wait_for "tether-server listening" 60 grep -q '^listening on ' /work/server.log
server=$(grep -m1 '^listening on ' /work/server.log | sed 's/^listening on //')

# 3. tetherd on the system bus, adapter hci1. It starts before the peripheral: both register an agent with the
#    one bluetoothd and ask to be the default; the responder side (hci0) asks the default agent, which must be
#    the device's (the last to ask), while tetherd's Pair() uses tetherd's own agent (device.c agent_get(sender)).
cat > $state/tether.toml <<TOML
[gateway]
database = "$state/gateway.sqlite"
state_directory = "$state"

[bluetooth]
bus = "system"
adapter = "hci1"
max_connections = 2
backoff_initial = "500ms"
backoff_max = "4s"
notify_method = "$NOTIFY_METHOD"

[sync]
server_url = "http://$server"
token_file = "$state/sync.token"
interval = "2s"

[firmware]
# The key that signed the images the host made (make-firmware-images.sh; FIRMWARE=1 only).
trusted_keys = "/work/firmware/trusted"

[control]
bus = "system"

[metrics]
enabled = false

[log]
# debug: SET_CONFIG and CONFIG_DATA with versions (tetherd.settings), so a settings mismatch explains itself.
level = "debug"
TOML
cp $state/tether.toml /work/tether.toml
/work/bin/tetherd --check-config --config $state/tether.toml
/work/bin/tetherd --config $state/tether.toml > /work/tetherd.log 2>&1 &
pids+=($!)
wait_for "tetherd's control API answers on the system bus" 90 tether status --json

# 4. The device (firmware model) on hci0.
firmware_options=()
if [ "$FIRMWARE" = 1 ]; then
    # It leaves (radio off, not an exit with the link up) once step 8 has listed its slots through tetherd.
    firmware_options=(--smp-image /work/firmware/factory.img --awaits-firmware-update --leaves-after /tmp/firmware-listed)
    touch /work/firmware-expected   # check-tetherd.py judges the firmware step only then
fi
/work/bin/tether-peripheral --adapter /org/bluez/hci0 --serial $serial --passkey $passkey --shows-passkey \
    --awaits-settings-change "${firmware_options[@]}" \
    --hits $hits --hits-after-reboot $hits_after_reboot --reboot-after 10 --hit-interval-milliseconds 300 \
    --event-log /work/peripheral-events.jsonl > /work/peripheral.log 2>&1 &
peripheral=$!
pids+=($peripheral)
address=$(dbus-send --system --print-reply --dest=org.bluez /org/bluez/hci0 org.freedesktop.DBus.Properties.Get \
    string:org.bluez.Adapter1 string:Address | sed -n 's/.*string "\(.*\)"/\1/p')
echo "$address" > /work/peripheral-address
say "peripheral $serial at $address"

# 5. tether scan until the device shows up (the emulator sends one report per advertisement registration).
for attempt in 1 2 3 4 5 6; do
    tether scan --duration 5 > /work/scan-$attempt.txt 2>&1 || true
    grep -qi "$address" /work/scan-$attempt.txt && break
done
grep -qi "$address" /work/scan-*.txt && say "tether scan saw $address" || say "tether scan did not list $address"

# 6. tether pair: the device displays a passkey (its agent's DisplayPasskey), the technician types it at the
#    CLI's prompt. The prompt reads stdin; fd 3 is a FIFO opened read-write so neither side blocks on open.
mkfifo /tmp/pair-input
exec 3<> /tmp/pair-input
timeout 150 /work/bin/tether pair "$address" --timeout 120 <&3 > /work/pair.out 2> /work/pair.err &
pair=$!
shown=
for _ in $(seq 1200); do
    shown=$(python3 -c 'import json,sys
for l in open(sys.argv[1]):
    f = json.loads(l)
    if f["fact"] == "agent-display-passkey": print("%06d" % f["passkey"])' /work/peripheral-events.jsonl 2>/dev/null | tail -1)
    [ -n "$shown" ] && break
    kill -0 $pair 2>/dev/null || break
    sleep 0.1
done
if [ -n "$shown" ]; then
    say "the device shows $shown; typing it at tether pair's prompt"
    echo "$shown" >&3
fi
pair_status=0
wait $pair || pair_status=$?
exec 3>&-
echo "$pair_status" > /work/pair-status
say "tether pair exited with $pair_status: $(cat /work/pair.out)"
[ "$pair_status" = 0 ] || exit 1

# 7. Settings round trip: desired on the gateway now, applied by the device on its link.
wait_for "tetherd knows $serial" 60 bash -c "timeout 30 /work/bin/tether devices --json | grep -q '$serial'"
tether settings set $serial sensitivity=8 led_brightness=25 > /work/settings-set.txt 2>&1
say "tether settings set: $(cat /work/settings-set.txt)"

# 8. Firmware: once the device's hits are all acknowledged and its settings applied (so its scheduled power cycle is
#    behind it), the technician updates it. tetherd verifies the image against its trusted keys, takes the device
#    from its session, uploads over SMP, marks the image for test and resets the device; the device reboots on it,
#    reconnects, and after running 3 s on test the image is confirmed. The device then leaves.
released_seen() {
    python3 -c 'import json,sys
sys.exit(0 if any(json.loads(l)["fact"] == "all-released" for l in open(sys.argv[1]) if l.strip()) else 1)' /work/peripheral-events.jsonl
}
[ "$FIRMWARE" = 1 ] && for _ in $(seq 1800); do released_seen && break; kill -0 $peripheral 2>/dev/null || break; sleep 0.1; done
if [ "$FIRMWARE" = 1 ] && released_seen; then
    say "every hit acknowledged; updating the firmware"
    update_started=$SECONDS
    firmware_status=0
    timeout 300 /work/bin/tether firmware update $serial /work/firmware/update.img --prove-for 3 --json \
        > /work/firmware-update.jsonl 2> /work/firmware-update.err || firmware_status=$?
    echo "$firmware_status" > /work/firmware-update-status
    say "tether firmware update exited with $firmware_status after $((SECONDS - update_started)) s: $(tail -1 /work/firmware-update.jsonl)"
    # The device is given back to its session after the update; list its slots once that link is up again.
    wait_for "the device's link is back after the update" 90 grep -q '"fact": *"link-back-after-update"' /work/peripheral-events.jsonl || true
    timeout 120 /work/bin/tether firmware list $serial --json > /work/firmware-list.json 2> /work/firmware-list.err || true
    tether firmware updates --json > /work/firmware-updates.json 2>&1 || true
    touch /tmp/firmware-listed
elif [ "$FIRMWARE" = 1 ]; then
    say "the device never had every hit acknowledged; no firmware update"
fi

# 9. The device leaves once every hit was acknowledged (after its power cycle and the reconnect), and with FIRMWARE=1
#    once it runs the new image, confirmed, and its link is back.
for _ in $(seq 600); do kill -0 $peripheral 2>/dev/null || break; sleep 0.1; done
if kill -0 $peripheral 2>/dev/null; then
    say "peripheral still running: not every hit was acknowledged"
    kill -KILL $peripheral
    peripheral_status=1
else
    wait $peripheral && peripheral_status=0 || peripheral_status=$?
fi
echo "$peripheral_status" > /work/peripheral-status
say "peripheral exited with $peripheral_status"

# 10. Sync drains: every stored hit on the server (tether sync nudges it).
server_events() {
    python3 -c 'import sqlite3,sys
c = sqlite3.connect("file:%s?mode=ro" % sys.argv[1], uri=True, timeout=10)
print(c.execute("select count(*) from consumption_event").fetchone()[0])' $state/server.sqlite 2>/dev/null || echo 0
}
produced=$(python3 -c 'import json,sys
print(sum(1 for l in open(sys.argv[1]) if l.strip() and json.loads(l)["fact"] == "hit"))' /work/peripheral-events.jsonl)
sync_deadline=$((SECONDS + 90))
while ((SECONDS < sync_deadline)) && [ "$(server_events)" -lt "$produced" ]; do
    timeout 15 /work/bin/tether sync >> /work/tether-sync.txt 2>&1 || true
    sleep 1
done
say "server holds $(server_events) events of $produced produced"
tether settings get $serial --json > /work/settings-get.json 2>&1 || tether settings get $serial > /work/settings-get.json 2>&1 || true
tether status --json > /work/status.json
tether devices --json > /work/devices.json

# 11. Stop tetherd and the server gracefully; copy both databases; check.
stop_all
trap - EXIT
python3 - $state/gateway.sqlite /work/gateway.sqlite <<'PY'
import sqlite3, sys
source = sqlite3.connect(sys.argv[1]); target = sqlite3.connect(sys.argv[2]); source.backup(target)
PY
python3 - $state/server.sqlite /work/server.sqlite <<'PY'
import sqlite3, sys
source = sqlite3.connect(sys.argv[1]); target = sqlite3.connect(sys.argv[2]); source.backup(target)
PY
cp /tmp/bluetoothd.log /work/bluetoothd.log
python3 /work/guest/check-tetherd.py /work
