#!/usr/bin/env bash
# Whole-daemon kills (issue 17, item 2; docs/design/durability.md). Runs the system as scripts/demo.sh does
# (scripts/demo/system.sh: a private dbus-daemon, tether-sim, tether-server on SQLite, tetherd), pairs the devices and
# the demo's three standard health devices, lets their users take hits while tetherd syncs to the server, and then, --kills times: waits a seeded random
# moment (0 to --max-delay ms after the previous restart: in startup, recovery, reconnection or steady streaming),
# SIGKILLs tetherd's whole process group, checks with the daemon dead that every event a device saw ACKed (and
# forgot) is in the gateway's database, that no stored health record was read twice or skipped (check.py health),
# samples the gateway's feed and health cursors, and starts tetherd again.
# Then it stops the devices' users, lets the devices deliver and sync drain, and verifies:
#   0 ACKed events lost (each one in the gateway's database and on the server), 0 duplicates (gateway and server),
#   every created event delivered, 0 dead letters, both databases pass `PRAGMA integrity_check`, no cursor
#   sample ever moved back, and every health sample on the server once with every stored glucose record read.
# The exit status is 0 only if all of that held.
#
# Usage: scripts/durability/kill-loop.sh [--kills N] [--seed S] [--devices N] [--max-delay MS] [--keep] [--no-build]
#   --kills N       SIGKILLs of tetherd (default 500, the long run; scripts/test.sh runs 3)
#   --seed S        seeds the kill moments (bash's RANDOM; default 1)
#   --devices N     simulated devices, 1 to 10 (default 4), and the 3 health devices besides
#   --max-delay MS  longest wait from a restart to the next kill (default 3000)
#   --keep          keep the temporary directory (logs, databases, config)
#   --no-build      use what `swift build` last built
#   TETHER_SCRATCH_PATH  build with `swift build --scratch-path` (default .build)
#   TETHER_BIN_PATH      run the binaries in this directory instead (with --no-build): a long run from a copy
#                        survives rebuilds of the working tree
set -euo pipefail
cd "$(dirname "$0")/../.."

kills=500
seed=1
device_count=4
max_delay_ms=3000
keep=false
build=true
while (($#)); do
    case "$1" in
    --kills) kills=${2:?--kills needs a number}; shift 2 ;;
    --seed) seed=${2:?--seed needs a number}; shift 2 ;;
    --devices) device_count=${2:?--devices needs a number}; shift 2 ;;
    --max-delay) max_delay_ms=${2:?--max-delay needs milliseconds}; shift 2 ;;
    --keep) keep=true; shift ;;
    --no-build) build=false; shift ;;
    -h | --help) sed -n '2,23p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "kill-loop: unknown argument '$1' (see --help)" >&2; exit 2 ;;
    esac
done
[[ "$kills" =~ ^[0-9]+$ && "$kills" -ge 1 ]] || { echo "kill-loop: --kills must be at least 1" >&2; exit 2; }
[[ "$seed" =~ ^[0-9]+$ ]] || { echo "kill-loop: --seed must be a whole number" >&2; exit 2; }
[[ "$device_count" =~ ^[0-9]+$ && "$device_count" -ge 1 && "$device_count" -le 10 ]] || { echo "kill-loop: --devices must be 1 to 10" >&2; exit 2; }
[[ "$max_delay_ms" =~ ^[0-9]+$ && "$max_delay_ms" -ge 1 && "$max_delay_ms" -le 32767 ]] || { echo "kill-loop: --max-delay must be 1 to 32767 ms" >&2; exit 2; }

source scripts/demo/system.sh
source scripts/durability/drain.sh
scratch=(${TETHER_SCRATCH_PATH:+--scratch-path "$TETHER_SCRATCH_PATH"})
if $build; then build_system_programs "${scratch[@]}"; fi
bin=${TETHER_BIN_PATH:-$(swift build "${scratch[@]}" --show-bin-path)}
# Debian's interpreter: python3-dbus is installed for it (`python3` on PATH may be another one).
python=/usr/bin/python3

tool=kill-loop
system_init tether-kill-loop
trap system_cleanup EXIT
trap 'echo "kill-loop: interrupted" >&2; exit 130' INT
trap 'echo "kill-loop: SIGTERM: stopping" >&2; exit 143' TERM

echo "== starting the system in $work"
start_bus
start_sim "$device_count" health
start_server
start_gateway $((device_count + ${#health_addresses[@]}))
start_users
echo "== $device_count devices and ${#health_addresses[@]} health devices paired and streaming; $kills SIGKILLs of tetherd, seed $seed, 0-$max_delay_ms ms apart"

declare -A cursor_last=()
cursor_samples=0
# Samples the gateway's feed cursors (the daemon is dead: the database is still): none may be behind its last sample.
sample_cursors() {
    local name position
    while read -r name position; do
        [ -n "$name" ] || continue
        cursor_samples=$((cursor_samples + 1))
        if [ -n "${cursor_last[$name]:-}" ] && ((position < cursor_last[$name])); then
            fail "cursor $name moved back from ${cursor_last[$name]} to $position after kill $1"
        fi
        cursor_last[$name]=$position
    done < <("$python" "$check" cursors "$work/gateway.sqlite")
}

loop_start=$SECONDS
RANDOM=$seed
acked=0
for ((kill_number = 1; kill_number <= kills; kill_number++)); do
    delay_ms=$((RANDOM % (max_delay_ms + 1)))
    pause "$(printf '%d.%03d' $((delay_ms / 1000)) $((delay_ms % 1000)))"
    kill -KILL -- "-$tetherd_pid" 2>/dev/null || fail "tetherd (process group $tetherd_pid) was not running at kill $kill_number; see $work/tetherd.log"
    # tetherd is this shell's child (setsid execs it): wait reaps it, quietly (no "Killed" line).
    wait "$tetherd_pid" 2>/dev/null || true
    kill -0 -- "-$tetherd_pid" 2>/dev/null && fail "tetherd's process group $tetherd_pid survived SIGKILL"
    forget "$tetherd_pid"
    # §8.2: the device forgets an event only after the gateway's ACK, which follows a durable commit. With the
    # daemon dead, every event a device has forgotten must be in the gateway's database.
    if ! result=$("$python" "$check" acked "$bus" "$work/sim.json" "$work/gateway.sqlite"); then
        fail "after kill $kill_number: $result"
    fi
    acked=$(echo "$result" | cut -d' ' -f2)
    if ! result=$("$python" "$check" health "$work/gateway.sqlite"); then
        fail "after kill $kill_number: $result"
    fi
    sample_cursors "$kill_number"
    start_tetherd
    if ((kill_number % 25 == 0 || kill_number == kills)); then
        printf '%6ss  kill %4s/%s  events ACKed so far %6s  cursor samples %s\n' $((SECONDS - loop_start)) "$kill_number" "$kills" "$acked" "$cursor_samples"
    fi
done
loop_seconds=$((SECONDS - loop_start))

wait_for "tetherd's control API after the last restart" 60 tetherd_ready
drain
sample_cursors final
verify "tetherd SIGKILLs" "$kills" "seconds of the kill loop" "$loop_seconds" "cursor samples (none moved back)" "$cursor_samples"
