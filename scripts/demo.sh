#!/usr/bin/env bash
# The end-to-end demo, the README's first command. On one machine it:
#   1. installs what it needs (scripts/setup/install-deps.sh) and builds tether, tether-sim, tether-server and tetherd,
#   2. starts a private dbus-daemon, tether-sim (BlueZ with a mix of simulated devices: three pairing methods,
#      firmware 1.0 / 1.4 / 2.0), tether-server on SQLite (a token minted with `tether-server token create`, file
#      mode 0600) and tetherd (its config written to a temporary directory),
#   3. pairs every device with the `tether` CLI (passkeys and confirmations answered by flags), switches faults on
#      (random disconnects, lost and duplicated notifications, a device reboot every 15 s) and lets the devices'
#      users take hits, showing live progress from `tether status --json`,
#   4. after --duration seconds or Ctrl-C: stops the devices, switches the faults off, lets the devices deliver and
#      sync drain, and verifies: events created by the devices = events stored by the gateway = events on the
#      server, 0 duplicates, 0 lost. The exit status is 0 only if that held.
# Every process it starts runs in its own process group and is stopped on exit, Ctrl-C or SIGTERM; a final check
# confirms none is left.
#
# Usage: scripts/demo.sh [--duration SECONDS] [--devices N] [--keep] [--no-install]
#   --keep        keep the temporary directory (logs, databases, config) for a look afterwards
#   TETHER_SCRATCH_PATH  build with `swift build --scratch-path` (default .build)
set -euo pipefail
cd "$(dirname "$0")/.."

duration=60
device_count=6
keep=false
install=true
while (($#)); do
    case "$1" in
    --duration) duration=${2:?--duration needs seconds}; shift 2 ;;
    --devices) device_count=${2:?--devices needs a number}; shift 2 ;;
    --keep) keep=true; shift ;;
    --no-install) install=false; shift ;;
    -h | --help) sed -n '2,20p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "demo: unknown argument '$1' (see --help)" >&2; exit 2 ;;
    esac
done
[[ "$duration" =~ ^[0-9]+$ && "$duration" -ge 5 ]] || { echo "demo: --duration must be a whole number of seconds, at least 5" >&2; exit 2; }
[[ "$device_count" =~ ^[0-9]+$ && "$device_count" -ge 1 && "$device_count" -le 10 ]] || { echo "demo: --devices must be 1 to 10" >&2; exit 2; }

$install && scripts/setup/install-deps.sh
scratch=(${TETHER_SCRATCH_PATH:+--scratch-path "$TETHER_SCRATCH_PATH"})
echo "== building tether, tether-sim, tether-server, tetherd"
for product in tether tether-sim tether-server tetherd; do
    swift build "${scratch[@]}" --product "$product" 2>&1 | tail -1
done
bin=$(swift build "${scratch[@]}" --show-bin-path)
helper=scripts/demo/devices.py
# Debian's interpreter: python3-dbus is installed for it (`python3` on PATH may be another one).
python=/usr/bin/python3

work=$(mktemp -d /tmp/tether-demo.XXXXXX)
pids=()
declare -A names=()

# Starts a command in its own session and process group (setsid), so stopping it stops everything it started.
start() {
    local name=$1 log=$2
    shift 2
    setsid "$@" >"$log" 2>&1 </dev/null &
    pids+=("$!")
    names[$!]=$name
}

# Stops every process group we started, newest first: SIGTERM, up to 15 s for a graceful stop, then SIGKILL.
cleanup() {
    local status=$?
    trap - EXIT INT TERM
    local pid waited
    for ((i = ${#pids[@]} - 1; i >= 0; i--)); do
        pid=${pids[i]}
        kill -TERM -- "-$pid" 2>/dev/null || continue
        for ((waited = 0; waited < 150; waited++)); do
            kill -0 -- "-$pid" 2>/dev/null || break
            sleep 0.1
        done
        if kill -0 -- "-$pid" 2>/dev/null; then
            echo "demo: ${names[$pid]} did not stop within 15 s of SIGTERM; killing it" >&2
            kill -KILL -- "-$pid" 2>/dev/null || true
        fi
    done
    wait 2>/dev/null || true
    local leftovers=()
    for pid in "${pids[@]}"; do
        if pgrep -g "$pid" >/dev/null 2>&1; then leftovers+=("${names[$pid]}"); fi
    done
    if ((${#leftovers[@]})); then
        echo "demo: processes left over: ${leftovers[*]}" >&2
        status=1
    elif ((${#pids[@]})); then
        echo "demo: all ${#pids[@]} processes stopped (checked with pgrep: none left)"
    fi
    if $keep; then echo "demo: logs, databases and config kept in $work"; else rm -rf "$work"; fi
    exit "$status"
}
trap cleanup EXIT
stop_requested=false
on_interrupt() {
    if $stop_requested; then
        echo; echo "demo: interrupted again; stopping without verification" >&2
        exit 130
    fi
    stop_requested=true
    echo; echo "demo: Ctrl-C: stopping the devices, then draining and verifying (Ctrl-C again to abort)"
}
trap on_interrupt INT
trap 'echo "demo: SIGTERM: stopping" >&2; exit 143' TERM

# Waits up to $2 seconds for the command $3... to succeed; on failure names $1, shows the logs and keeps them.
wait_for() {
    local what=$1 seconds=$2
    shift 2
    local deadline=$((SECONDS + seconds))
    until "$@" >/dev/null 2>&1; do
        if ((SECONDS >= deadline)); then
            echo "demo: FAILED: $what was not ready within $seconds s; the last lines of each log:" >&2
            for log in "$work"/*.log; do echo "--- $log" >&2; tail -5 "$log" >&2; done
            keep=true
            return 1
        fi
        sleep 0.2
    done
}
# Short sleeps that Ctrl-C cuts short (a trap runs only after a foreground command ends).
pause() { sleep "$1" & wait $! || true; }

echo
echo "== starting the system in $work"
# 1. A private system-type dbus-daemon (the same permissive policy as DBusPrivateBus: the demo is one user).
cat >"$work/bus.conf" <<EOF
<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig>
  <type>system</type>
  <listen>unix:path=$work/bus</listen>
  <auth>EXTERNAL</auth>
  <policy context="default">
    <allow user="*"/>
    <allow own="*"/>
    <allow send_destination="*" eavesdrop="true"/>
    <allow eavesdrop="true"/>
  </policy>
</busconfig>
EOF
start dbus-daemon "$work/dbus.log" dbus-daemon --config-file="$work/bus.conf" --nofork --print-address
wait_for "dbus-daemon" 10 grep -q '^unix:' "$work/dbus.log"
bus=$(grep -m1 '^unix:' "$work/dbus.log")
echo "dbus-daemon      $bus"

# 2. tether-sim with a mix of devices: pairing justWorks / passkey / confirmation, firmware 1.4 / 2.0 / 1.0.
"$python" - "$device_count" >"$work/sim.json" <<'EOF'
import json, sys
count = int(sys.argv[1])
modes, firmwares = ["justWorks", "passkey", "confirmation"], ["1.4", "2.0", "1.0"]
devices = [{"address": "C0:54:45:00:00:%02X" % n, "name": "Tether-%04d" % n, "serial": "TS%08d" % n,
            "rssi": -45 - 4 * n, "pairing": modes[(n - 1) % 3], "passkey": 123456 + n,
            "firmware": firmwares[(n - 1) % 3]} for n in range(1, count + 1)]
print(json.dumps({"seed": 11, "devices": devices}, indent=1))
EOF
start tether-sim "$work/sim.log" "$bin/tether-sim" --bus "$bus" --config "$work/sim.json"
wait_for "tether-sim" 20 grep -q '^DBUS_SYSTEM_BUS_ADDRESS=' "$work/sim.log"
echo "tether-sim       $device_count devices"

# 3. tether-server on SQLite with a freshly minted gateway token (tether-server writes the file with mode 0600).
"$bin/tether-server" token create --db "$work/server.sqlite" --tenant demo --gateway demo-gateway --output "$work/sync.token" >/dev/null
[ "$(stat -c %a "$work/sync.token")" = 600 ] || { echo "demo: FAILED: the token file is not mode 0600" >&2; exit 1; }
start tether-server "$work/server.log" "$bin/tether-server" serve --db "$work/server.sqlite" --listen 127.0.0.1:0 --log-level warning
wait_for "tether-server" 30 grep -q '^listening on ' "$work/server.log"
server=$(grep -m1 '^listening on ' "$work/server.log" | sed 's/^listening on //')
echo "tether-server    http://$server (SQLite $work/server.sqlite, token file mode 0600)"

# 4. tetherd with its config in the temporary directory; BlueZ (tether-sim) and the control API on the private bus.
cat >"$work/tether.toml" <<EOF
[gateway]
database = "$work/gateway.sqlite"
state_directory = "$work"

[bluetooth]
bus = "$bus"
adapter = "hci0"
max_connections = $device_count
backoff_initial = "250ms"
backoff_max = "2s"

[sync]
server_url = "http://$server"
token_file = "$work/sync.token"
interval = "2s"

[control]
bus = "$bus"

[metrics]
enabled = false

[log]
level = "warning"
EOF
"$bin/tetherd" --check-config --config "$work/tether.toml" >/dev/null
start tetherd "$work/tetherd.log" "$bin/tetherd" --config "$work/tether.toml"
export TETHER_BUS_ADDRESS=$bus
wait_for "tetherd's control API" 30 "$bin/tether" status --json
echo "tetherd          control API up on the private bus"

echo
echo "== tether scan (3 s)"
"$bin/tether" scan --duration 3
echo
echo "== pairing every device with tether pair (passkeys and confirmations answered by flags)"
addresses=()
for ((n = 1; n <= device_count; n++)); do
    address=$(printf 'C0:54:45:00:00:%02X' "$n")
    addresses+=("$address")
    "$bin/tether" pair "$address" --passkey $((123456 + n)) --yes --timeout 60
done

echo
echo "== running for $duration s with faults on: random disconnects, 2% lost / 1% duplicated notifications, a reboot every 15 s"
"$python" "$helper" faults "$bus" on
start load "$work/load.log" "$python" "$helper" load "$bus" "$work/load.json" "$(IFS=,; echo "${addresses[*]}")"
load_pid=${pids[-1]}

status_field() { "$python" "$helper" field "$work/status.json" "$@"; }
read_status() { timeout 10 "$bin/tether" status --json >"$work/status.json" 2>>"$work/tether-status.log" || true; }
progress() {
    local connected known stored pending in_flight failed dead created synced
    # Read downstream first, so each figure is at most the one before it: synced <= stored <= created.
    synced=$("$python" "$helper" server-count "$work/server.sqlite" | cut -d' ' -f2)
    read_status
    read -r connected known stored pending in_flight failed dead < <(status_field devices_connected devices_known \
        events_stored outbox_pending outbox_in_flight outbox_failed outbox_dead)
    created=$("$python" "$helper" field "$work/load.json" created)
    local now=$SECONDS rate=0
    ((now > last_time)) && rate=$(((stored - last_stored) / (now - last_time)))
    last_time=$now last_stored=$stored
    printf '%5ss  devices %s/%s connected  created %6s  stored %6s  %4s events/s  queue %5s  synced %6s  dead %s\n' \
        "$1" "$connected" "$known" "$created" "$stored" "$rate" "$((pending + in_flight + failed))" "$synced" "$dead"
}
last_time=$SECONDS last_stored=0
run_start=$SECONDS
while ! $stop_requested && ((SECONDS - run_start < duration)); do
    pause 2
    progress $((SECONDS - run_start))
done

echo
echo "== stopping the devices, switching faults off, letting the devices deliver and sync drain"
kill -TERM -- "-$load_pid" 2>/dev/null || true
for ((i = 0; i < 100; i++)); do
    [ "$("$python" "$helper" field "$work/load.json" running)" = False ] && break
    pause 0.1
done
"$python" "$helper" faults "$bus" off
created=$("$python" "$helper" field "$work/load.json" created)
drain_start=$SECONDS
drained=false
while ((SECONDS - drain_start < 180)); do
    progress "drain $((SECONDS - drain_start))"
    read -r stored pending in_flight failed < <(status_field events_stored outbox_pending outbox_in_flight outbox_failed)
    read -r rows distinct < <("$python" "$helper" server-count "$work/server.sqlite")
    read -r released held < <("$python" "$helper" device-stats "$bus" "$(IFS=,; echo "${addresses[*]}")")
    if ((stored == created && held == 0 && pending + in_flight + failed == 0 && distinct == stored)); then
        drained=true
        break
    fi
    ((stored == created)) && timeout 10 "$bin/tether" sync >/dev/null 2>&1 || true
    pause 2
done

read_status
read -r stored dead < <(status_field events_stored outbox_dead)
read -r rows distinct < <("$python" "$helper" server-count "$work/server.sqlite")
read -r reboots drops refused < <("$python" "$helper" field "$work/load.json" reboots drops refused)
read -r released held < <("$python" "$helper" device-stats "$bus" "$(IFS=,; echo "${addresses[*]}")")
duplicates=$((rows - distinct + (stored > created ? stored - created : 0) + (distinct > created ? distinct - created : 0)))
lost=$((created > distinct ? created - distinct : 0))
echo
echo "== verification"
printf '  %-48s %8s\n' "events created by the devices (tether-sim)" "$created" \
    "events the devices saw ACKed (and forgot)" "$released" \
    "events still held by the devices" "$held" \
    "events stored by the gateway (tetherd)" "$stored" \
    "events on the server (tether-server)" "$distinct" \
    "duplicates" "$duplicates" \
    "lost" "$lost" \
    "dead letters" "$dead" \
    "device reboots injected" "$reboots" \
    "link drops seen (reboots and random disconnects)" "$drops"
((refused > 0)) && echo "  (the firmware refused $refused hits because its memory was full; they were never created)"
if $drained && ((created > 0 && released == created && held == 0 && stored == created && distinct == created &&
    duplicates == 0 && lost == 0 && dead == 0)); then
    echo "demo: PASSED: every event the devices created reached the server exactly once"
    exit 0
fi
$drained || echo "demo: sync did not drain within 180 s; tetherd's log: $work/tetherd.log" >&2
echo "demo: FAILED: the counts above do not match" >&2
keep=true
exit 1
