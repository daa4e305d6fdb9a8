# The whole system on one machine, as shell functions sourced by scripts/demo.sh and
# scripts/durability/kill-loop.sh: a private dbus-daemon, tether-sim with a mix of devices, tether-server on SQLite
# with a minted token, and tetherd with its config in a temporary directory. Every process runs in its own session
# and process group, and `system_cleanup` stops them all, newest first.
#
# The sourcing script sets `tool` (its name, for messages) and `keep` (true/false: keep the temporary directory),
# then calls `system_init PREFIX` and `trap system_cleanup EXIT`. Needs `bin` (swift build --show-bin-path) and
# `python` (Debian's python3, which has python3-dbus); `tetherd_bin`, when set, is the tetherd to run instead of
# `$bin/tetherd` (scripts/bench/footprint.sh --static).

# Builds the four programs the system runs with `swift build "$@"` (the caller's -c and --scratch-path), one
# product at a time, printing each build's last line. The caller then sets `bin`.
build_system_programs() {
    echo "== building tether, tether-sim, tether-server, tetherd"
    local product
    for product in tether tether-sim tether-server tetherd; do
        swift build "$@" --product "$product" 2>&1 | tail -1
    done
}

# Creates the temporary directory ($work) and the process table.
system_init() {
    work=$(mktemp -d "/tmp/$1.XXXXXX")
    pids=()
    declare -gA names=()
}

# Starts a command in its own session and process group (setsid), so stopping it stops everything it started.
# Its output is appended to the log (a restarted daemon keeps the earlier runs' lines).
start() {
    local name=$1 log=$2
    shift 2
    setsid "$@" >>"$log" 2>&1 </dev/null &
    pids+=("$!")
    names[$!]=$name
}

# Drops a process group that has ended (a daemon killed on purpose) from the table, so that cleanup never signals
# its pid, which the system may have given to someone else's process by then.
forget() {
    local kept=() pid
    for pid in "${pids[@]}"; do [ "$pid" = "$1" ] || kept+=("$pid"); done
    pids=("${kept[@]}")
    unset "names[$1]"
}

# Stops every process group we started, newest first: SIGTERM, up to 15 s for a graceful stop, then SIGKILL.
# Exits with $1, or the status the script was exiting with.
system_cleanup() {
    local status=${1:-$?}
    trap - EXIT INT TERM
    local pid waited i
    for ((i = ${#pids[@]} - 1; i >= 0; i--)); do
        pid=${pids[i]}
        kill -TERM -- "-$pid" 2>/dev/null || continue
        for ((waited = 0; waited < 150; waited++)); do
            kill -0 -- "-$pid" 2>/dev/null || break
            sleep 0.1
        done
        if kill -0 -- "-$pid" 2>/dev/null; then
            echo "$tool: ${names[$pid]} did not stop within 15 s of SIGTERM; killing it" >&2
            kill -KILL -- "-$pid" 2>/dev/null || true
        fi
    done
    wait 2>/dev/null || true
    local leftovers=()
    for pid in "${pids[@]}"; do
        if pgrep -g "$pid" >/dev/null 2>&1; then leftovers+=("${names[$pid]}"); fi
    done
    if ((${#leftovers[@]})); then
        echo "$tool: processes left over: ${leftovers[*]}" >&2
        status=1
    elif ((${#pids[@]})); then
        echo "$tool: all ${#pids[@]} processes stopped (checked with pgrep: none left)"
    fi
    if $keep; then echo "$tool: logs, databases and config kept in $work"; else rm -rf "$work"; fi
    exit "$status"
}

# Waits up to $2 seconds for the command $3... to succeed; on failure names $1, shows the logs and keeps them.
wait_for() {
    local what=$1 seconds=$2
    shift 2
    local deadline=$((SECONDS + seconds))
    until "$@" >/dev/null 2>&1; do
        if ((SECONDS >= deadline)); then
            echo "$tool: FAILED: $what was not ready within $seconds s; the last lines of each log:" >&2
            for log in "$work"/*.log; do echo "--- $log" >&2; tail -5 "$log" >&2; done
            keep=true
            return 1
        fi
        sleep 0.2
    done
}

# Short sleeps that Ctrl-C cuts short (a trap runs only after a foreground command ends).
pause() { sleep "$1" & wait $! || true; }

# 1. A private system-type dbus-daemon (the same permissive policy as DBusPrivateBus: one user). Sets $bus.
start_bus() {
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
}

# 2. tether-sim with $1 devices: pairing justWorks / passkey / confirmation, firmware 1.4 / 2.0 / 1.0. Sets
# $addresses (device n is C0:54:45:00:00:n, its passkey 123456 + n). With $2 = health, three standard health devices
# too (Bluetooth SIG profiles, HealthDeviceModel): a glucose meter with $glucose_records stored records (read over
# RACP), a blood pressure cuff with 3, a heart rate sensor notifying every 0.5 s; sets $health_addresses.
glucose_records=12
health_addresses=()
start_sim() {
    local count=$1 health=${2:-} n
    "$python" - "$count" "$health" "$glucose_records" >"$work/sim.json" <<'EOF'
import json, sys
count, health, glucose_records = int(sys.argv[1]), sys.argv[2] == "health", int(sys.argv[3])
modes, firmwares = ["justWorks", "passkey", "confirmation"], ["1.4", "2.0", "1.0"]
devices = [{"address": "C0:54:45:00:00:%02X" % n, "name": "Tether-%04d" % n, "serial": "TS%08d" % n,
            "rssi": -45 - 4 * n, "pairing": modes[(n - 1) % 3], "passkey": 123456 + n,
            "firmware": firmwares[(n - 1) % 3]} for n in range(1, count + 1)]
if health:
    devices += [
        {"address": "C0:48:45:00:00:01", "name": "Sim-Glucose", "serial": "HS00000001",
         "health": {"kind": "glucose", "storedRecords": glucose_records, "contextEvery": 4, "seed": 21}},
        {"address": "C0:48:45:00:00:02", "name": "Sim-Cuff", "serial": "HS00000002",
         "health": {"kind": "blood-pressure", "storedRecords": 3, "seed": 22}},
        {"address": "C0:48:45:00:00:03", "name": "Sim-HeartRate", "serial": "HS00000003",
         "health": {"kind": "heart-rate", "measurementIntervalSeconds": 0.5, "seed": 23}},
    ]
print(json.dumps({"seed": 11, "devices": devices}, indent=1))
EOF
    start tether-sim "$work/sim.log" "$bin/tether-sim" --bus "$bus" --config "$work/sim.json"
    wait_for "tether-sim" 20 grep -q '^DBUS_SYSTEM_BUS_ADDRESS=' "$work/sim.log"
    addresses=()
    for ((n = 1; n <= count; n++)); do addresses+=("$(printf 'C0:54:45:00:00:%02X' "$n")"); done
    health_addresses=()
    [ "$health" = health ] && health_addresses=(C0:48:45:00:00:01 C0:48:45:00:00:02 C0:48:45:00:00:03)
    return 0
}

# 3. tether-server on SQLite with a freshly minted gateway token (tether-server writes the file with mode 0600).
# Sets $server (host:port).
start_server() {
    "$bin/tether-server" token create --db "$work/server.sqlite" --tenant demo --gateway demo-gateway --output "$work/sync.token" >/dev/null
    [ "$(stat -c %a "$work/sync.token")" = 600 ] || { echo "$tool: FAILED: the token file is not mode 0600" >&2; exit 1; }
    start tether-server "$work/server.log" "$bin/tether-server" serve --db "$work/server.sqlite" --listen 127.0.0.1:0 --log-level warning
    wait_for "tether-server" 30 grep -q '^listening on ' "$work/server.log"
    server=$(grep -m1 '^listening on ' "$work/server.log" | sed 's/^listening on //')
}

# 4. tetherd's config in the temporary directory, for $1 devices; BlueZ (tether-sim) and the control API on the
# private bus. $2: the state directory, where the database is too (default: the temporary directory); $3: more
# TOML, appended. Exports TETHER_BUS_ADDRESS for the tether CLI.
write_tetherd_config() {
    local state=${2:-$work}
    cat >"$work/tether.toml" <<EOF
[gateway]
database = "$state/gateway.sqlite"
state_directory = "$state"

[bluetooth]
bus = "$bus"
adapter = "hci0"
max_connections = $1
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
${3:-}
EOF
    "${tetherd_bin:-$bin/tetherd}" --check-config --config "$work/tether.toml" >/dev/null
    export TETHER_BUS_ADDRESS=$bus
}

# Starts tetherd with the environment its systemd unit gives it (deploy/systemd/tetherd.service's Environment=
# lines, such as the malloc arena cap, when that file is here); sets $tetherd_pid (its process group).
start_tetherd() {
    local unit=deploy/systemd/tetherd.service environment=()
    [ -f "$unit" ] && mapfile -t environment < <(sed -n 's/^Environment=//p' "$unit")
    start tetherd "$work/tetherd.log" env "${environment[@]}" "${tetherd_bin:-$bin/tetherd}" --config "$work/tether.toml"
    tetherd_pid=${pids[-1]}
}

# tetherd's control API answers.
tetherd_ready() { "$bin/tether" status --json; }

# Pairs every device with the `tether` CLI (passkeys and confirmations answered by flags).
pair_devices() {
    local n
    for ((n = 1; n <= ${#addresses[@]}; n++)); do
        "$bin/tether" pair "${addresses[n - 1]}" --passkey $((123456 + n)) --yes --timeout 60
    done
}

# Pairs the health devices (Just Works; their measurements need an encrypted link).
pair_health_devices() {
    local address
    for address in "${health_addresses[@]}"; do
        "$bin/tether" pair "$address" --yes --timeout 60
    done
}

# 5. tetherd for $1 devices ($2 and $3 as for write_tetherd_config) with its control API up and every device paired,
# the health devices too: the start the durability scripts and the footprint share (scripts/demo.sh shows each step
# instead). $1 counts the health devices as well (it is bluetooth.max_connections).
start_gateway() {
    write_tetherd_config "$@"
    start_tetherd
    wait_for "tetherd's control API" 30 tetherd_ready
    pair_devices >/dev/null
    pair_health_devices >/dev/null
}

# 6. The devices' users taking hits (scripts/demo/devices.py load, counts in $work/load.json; needs
# scripts/durability/drain.sh's `helper` and `device_list`). Sets $load_pid.
start_users() {
    start load "$work/load.log" "$python" "$helper" load "$bus" "$work/load.json" "$(device_list)"
    load_pid=${pids[-1]}
}
