#!/usr/bin/env bash
# The long soak (issue 17, item 4; docs/design/durability.md). Runs the system as scripts/demo.sh does
# (scripts/demo/system.sh: a private dbus-daemon, tether-sim, tether-server on SQLite, tetherd), pairs the devices and
# the demo's three standard health devices (a glucose meter's stored records, a cuff, a heart rate strap notifying
# every 0.5 s), lets their users take hits (a device reboot every 15 s) with the demo's faults on (links dropping at random, 2 % of
# notifications lost, 1 % doubled) for --minutes, and on a seeded schedule about every --fault-every seconds one
# of: a bluetoothd restart (tether-sim), every link dropped at once, or a backend outage (tether-server stopped for
# 10 to 40 s, then started again on the same port). Every --sample seconds it samples tetherd: resident memory,
# threads, descriptors, database and WAL size, the pending outbox and its oldest command (scripts/durability/soak.py;
# the samples are kept in the work directory as samples.csv).
# At the end: the samples after the warm-up must show memory flat and the floors of descriptors and threads not rising
# (soak.py says how they are judged) and the WAL checkpointed; then the devices' users stop, sync drains, and the
# demo's verification must hold: every created event on the server once, 0 ACKed events lost, 0 duplicates, 0 dead
# letters, both databases sound, and every health sample on the server once (scripts/durability/drain.sh). The verification is printed even when the resources' verdict failed.
# The exit status is 0 only if all of that held.
#
# Usage: scripts/durability/soak.sh [--minutes M] [--devices N] [--seed S] [--sample S] [--warmup S]
#                                   [--fault-every S] [--keep] [--no-build]
#   --minutes M      how long the devices stream (default 120, the long run; scripts/test.sh runs 5)
#   --devices N      simulated devices, 1 to 32 (default 20, the issue's load), and the 3 health devices besides
#                    (bluetooth.max_connections is set to N + 3)
#   --seed S         seeds the fault schedule (default 1)
#   --sample S       seconds between samples (default 10)
#   --warmup S       samples before this many seconds are not judged (default: a fifth of the run, at least 60)
#   --fault-every S  mean seconds between injected faults (default 60)
#   --keep           keep the temporary directory (logs, databases, config, samples.csv)
#   --no-build       use what `swift build` last built
#   TETHER_SCRATCH_PATH  build with `swift build --scratch-path` (default .build)
#   TETHER_BIN_PATH      run the binaries in this directory instead (with --no-build): a long run from a copy
#                        survives rebuilds of the working tree
set -euo pipefail
cd "$(dirname "$0")/../.."

minutes=120
device_count=20
seed=1
sample_seconds=10
warmup=
fault_every=60
keep=false
build=true
while (($#)); do
    case "$1" in
    --minutes) minutes=${2:?--minutes needs a number}; shift 2 ;;
    --devices) device_count=${2:?--devices needs a number}; shift 2 ;;
    --seed) seed=${2:?--seed needs a number}; shift 2 ;;
    --sample) sample_seconds=${2:?--sample needs seconds}; shift 2 ;;
    --warmup) warmup=${2:?--warmup needs seconds}; shift 2 ;;
    --fault-every) fault_every=${2:?--fault-every needs seconds}; shift 2 ;;
    --keep) keep=true; shift ;;
    --no-build) build=false; shift ;;
    -h | --help) sed -n '2,28p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "soak: unknown argument '$1' (see --help)" >&2; exit 2 ;;
    esac
done
[[ "$minutes" =~ ^[0-9]+$ && "$minutes" -ge 1 ]] || { echo "soak: --minutes must be at least 1" >&2; exit 2; }
[[ "$device_count" =~ ^[0-9]+$ && "$device_count" -ge 1 && "$device_count" -le 32 ]] || { echo "soak: --devices must be 1 to 32" >&2; exit 2; }
[[ "$seed" =~ ^[0-9]+$ ]] || { echo "soak: --seed must be a whole number" >&2; exit 2; }
[[ "$sample_seconds" =~ ^[0-9]+$ && "$sample_seconds" -ge 1 ]] || { echo "soak: --sample must be at least 1 s" >&2; exit 2; }
[[ "$fault_every" =~ ^[0-9]+$ && "$fault_every" -ge 10 ]] || { echo "soak: --fault-every must be at least 10 s" >&2; exit 2; }
duration=$((minutes * 60))
if [ -z "$warmup" ]; then warmup=$((duration / 5 > 60 ? duration / 5 : 60)); fi
[[ "$warmup" =~ ^[0-9]+$ && "$warmup" -lt "$duration" ]] || { echo "soak: --warmup must be shorter than the run" >&2; exit 2; }

source scripts/demo/system.sh
source scripts/durability/drain.sh
scratch=(${TETHER_SCRATCH_PATH:+--scratch-path "$TETHER_SCRATCH_PATH"})
if $build; then build_system_programs "${scratch[@]}"; fi
bin=${TETHER_BIN_PATH:-$(swift build "${scratch[@]}" --show-bin-path)}
# Debian's interpreter: python3-dbus is installed for it (`python3` on PATH may be another one).
python=/usr/bin/python3
soak=scripts/durability/soak.py

tool=soak
system_init tether-soak
trap system_cleanup EXIT
trap 'echo "soak: interrupted" >&2; exit 130' INT
trap 'echo "soak: SIGTERM: stopping" >&2; exit 143' TERM

# tether-server on a fixed port, so that it comes back where tetherd's config points after an outage.
port=$("$python" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
server_up() {
    start tether-server "$work/server.log" "$bin/tether-server" serve --db "$work/server.sqlite" --listen "127.0.0.1:$port" --log-level warning
    server_pid=${pids[-1]}
    wait_for "tether-server on port $port" 30 server_answers
}
server_answers() { "$python" -c 'import socket, sys; socket.create_connection(("127.0.0.1", int(sys.argv[1])), 1).close()' "$port"; }
server_down() {
    kill -TERM -- "-$server_pid" 2>/dev/null || true
    wait "$server_pid" 2>/dev/null || true
    forget "$server_pid"
}

echo "== starting the system in $work"
start_bus
start_sim "$device_count" health
"$bin/tether-server" token create --db "$work/server.sqlite" --tenant demo --gateway demo-gateway --output "$work/sync.token" >/dev/null
server_up
server="127.0.0.1:$port"
start_gateway $((device_count + ${#health_addresses[@]}))
"$python" "$helper" faults "$bus" on
start_users
echo "== $device_count devices and ${#health_addresses[@]} health devices paired and streaming for $minutes min; a fault about every $fault_every s (seed $seed);" \
    "a sample every $sample_seconds s, judged after $warmup s"

"$python" "$soak" header >"$work/samples.csv"
RANDOM=$seed
start_time=$(date +%s.%N)
deadline=$((SECONDS + duration))
next_sample=$SECONDS
next_fault=$((SECONDS + fault_every / 2 + RANDOM % fault_every))
server_back=
faults_done=0
declare -A fault_counts=([bluetoothd-restart]=0 [disconnect-all]=0 [backend-outage]=0)
while ((SECONDS < deadline)); do
    if ((SECONDS >= next_sample)); then
        "$python" "$soak" sample "$tetherd_pid" "$start_time" "$work/gateway.sqlite" "$bin/tether" >>"$work/samples.csv" ||
            fail "tetherd (pid $tetherd_pid) is gone; see $work/tetherd.log"
        next_sample=$((next_sample + sample_seconds))
        if ((SECONDS / 600 != (SECONDS - sample_seconds) / 600)); then
            printf '%6ss  %s\n' $((SECONDS - deadline + duration)) "$(tail -n 1 "$work/samples.csv")"
        fi
    fi
    if [ -n "$server_back" ] && ((SECONDS >= server_back)); then
        server_up
        server_back=
    fi
    if ((SECONDS >= next_fault)) && [ -z "$server_back" ]; then
        case $((RANDOM % 3)) in
        0) fault=bluetoothd-restart; "$python" "$soak" inject "$bus" bluetoothd-restart ;;
        1) fault=disconnect-all; "$python" "$soak" inject "$bus" disconnect-all ;;
        2) fault=backend-outage; server_down; server_back=$((SECONDS + 10 + RANDOM % 31)) ;;
        esac
        fault_counts[$fault]=$((fault_counts[$fault] + 1))
        faults_done=$((faults_done + 1))
        next_fault=$((SECONDS + fault_every / 2 + RANDOM % fault_every))
    fi
    pause 1
done
if [ -n "$server_back" ]; then server_up; fi
"$python" "$helper" faults "$bus" off

echo
echo "== samples after the warm-up ($work/samples.csv)"
soak_ok=true
"$python" "$soak" analyze "$work/samples.csv" "$warmup" | sed 's/^/  /' || soak_ok=false
# The data's verification runs whatever the resources' verdict said: a run that grew still says whether it lost
# anything (verify exits; in a subshell it only prints, and the run fails after it).
drain
figures=("minutes of streaming" "$minutes" "faults: bluetoothd restarts" "${fault_counts[bluetoothd-restart]}"
    "faults: every link dropped" "${fault_counts[disconnect-all]}" "faults: backend outages" "${fault_counts[backend-outage]}")
$soak_ok && verify "${figures[@]}"
(verify "${figures[@]}") || true
fail "tetherd's resources did not stay flat (see the verdict above)"
