#!/usr/bin/env bash
# tetherd's footprint, release build (issue 17, item 5), against the targets for a Raspberry Pi gateway: resident
# memory with its devices streaming (25 MB), CPU while its devices are connected and idle (0.5 % of one core), and
# the time from exec to READY=1 (150 ms). Runs the system as scripts/demo.sh does (scripts/demo/system.sh), pairs
# the devices, lets them stream (--stream seconds), samples tetherd's RSS, stops the devices' users, waits 20 s,
# measures CPU over --idle seconds, then stops tetherd and starts it --runs times against the same database with a
# NOTIFY_SOCKET of its own (scripts/bench/footprint.py), timing exec to READY=1. Prints the figures, and where the
# resident memory is: by mapping, by the program's own ELF sections, and what of it tetherd touched in 10 s of
# streaming (the sections and the working set need root). Exits 0 when the figures were measured (meeting the
# targets is reported, not required).
#
# Usage: scripts/bench/footprint.sh [--debug | --static] [--devices N] [--stream S] [--idle S] [--runs N] [--keep]
#                                    [--no-build]
#   --debug      the debug build instead (a baseline to compare the release build with)
#   --static     tetherd as the .deb ships it (release, --static-swift-stdlib, scratch path .build-static); the
#                other programs, which are not measured, from the debug build
#   --devices N  simulated devices, 1 to 32 (default 20, the issue's load; bluetooth.max_connections is set to N)
#   --stream S   seconds of streaming before the RSS sample (default 60)
#   --idle S     seconds of the idle CPU measurement (default 60)
#   --runs N     starts timed to READY=1 (default 5; the median is reported)
#   --keep       keep the temporary directory
#   --no-build   use what `swift build -c release` last built
set -euo pipefail
cd "$(dirname "$0")/../.."

device_count=20
stream=60
idle=60
runs=5
keep=false
build=true
configuration=release
while (($#)); do
    case "$1" in
    --debug) configuration=debug; shift ;;
    --static) configuration=static; shift ;;
    --devices) device_count=${2:?}; shift 2 ;;
    --stream) stream=${2:?}; shift 2 ;;
    --idle) idle=${2:?}; shift 2 ;;
    --runs) runs=${2:?}; shift 2 ;;
    --keep) keep=true; shift ;;
    --no-build) build=false; shift ;;
    -h | --help) sed -n '2,20p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "footprint: unknown argument '$1' (see --help)" >&2; exit 2 ;;
    esac
done
[[ "$device_count" =~ ^[0-9]+$ && "$device_count" -ge 1 && "$device_count" -le 32 ]] || { echo "footprint: --devices must be 1 to 32" >&2; exit 2; }

source scripts/demo/system.sh
source scripts/durability/drain.sh
# The build each program comes from: all four from one, except with --static, where only tetherd is built the .deb's
# way (deploy/build-deb.sh) and the rest, which are not measured, come from the debug build.
if [ "$configuration" = static ]; then
    if $build; then
        echo "== building tether, tether-sim, tether-server (debug) and tetherd (release, --static-swift-stdlib)"
        for product in tether tether-sim tether-server; do swift build --product "$product" 2>&1 | tail -1; done
        swift build -c release --static-swift-stdlib --scratch-path .build-static --product tetherd 2>&1 | tail -1
    fi
    bin=$(swift build --show-bin-path)
    tetherd_bin=$(swift build -c release --static-swift-stdlib --scratch-path .build-static --show-bin-path)/tetherd
else
    if $build; then build_system_programs -c "$configuration"; fi
    bin=$(swift build -c "$configuration" --show-bin-path)
fi
python=/usr/bin/python3
footprint=scripts/bench/footprint.py

tool=footprint
system_init tether-footprint
trap system_cleanup EXIT

echo "== starting the system in $work ($device_count devices)"
start_bus
start_sim "$device_count"
start_server
start_gateway "$device_count"
start_users
pause "$stream"
read -r rss anon file threads < <("$python" "$footprint" rss "$tetherd_pid")
"$python" "$footprint" mappings "$tetherd_pid" 16 > "$work/mappings.txt"
"$python" "$footprint" sections "$tetherd_pid" > "$work/sections.txt" 2>&1 || true
"$python" "$footprint" working-set "$tetherd_pid" 10 > "$work/working-set.txt" 2>&1 || true
read -r streaming_cpu < <("$python" "$footprint" cpu "$tetherd_pid" 10)
created=$("$python" "$helper" field "$work/load.json" created)
kill -TERM -- "-$load_pid" 2>/dev/null || true
pause 20
read -r idle_cpu < <("$python" "$footprint" cpu "$tetherd_pid" "$idle")
read -r idle_rss _ _ _ < <("$python" "$footprint" rss "$tetherd_pid")
kill -TERM -- "-$tetherd_pid"
wait "$tetherd_pid" 2>/dev/null || true
forget "$tetherd_pid"
mapfile -t ready_ms < <("$python" "$footprint" ready "${tetherd_bin:-$bin/tetherd}" "$work/tether.toml" "$runs")
((${#ready_ms[@]} == runs)) || fail "tetherd did not signal READY=1 in every run"
median=$(printf '%s\n' "${ready_ms[@]}" | sort -n | sed -n "$(((runs + 1) / 2))p")

echo
echo "== tetherd's footprint ($configuration build, $device_count devices)"
printf '  %-58s %12s %10s\n' "" "measured" "target" \
    "resident memory, devices streaming (KiB)" "$rss" "25000" \
    "  of which anonymous / file-backed (KiB)" "$anon / $file" "" \
    "resident memory, devices idle (KiB)" "$idle_rss" "" \
    "threads" "$threads" "" \
    "CPU, devices streaming (% of one core, 10 s)" "$streaming_cpu" "" \
    "CPU, devices connected and idle (% of one core, ${idle} s)" "$idle_cpu" "0.5" \
    "exec to READY=1 (ms, median of $runs: ${ready_ms[*]})" "$median" "150" \
    "events the devices created while streaming" "$created" ""
echo
echo "== where the resident memory was, devices streaming (/proc/PID/smaps, largest first)"
sed 's/^/  /' "$work/mappings.txt"
echo
echo "== tetherd's own resident pages by ELF section, devices streaming (/proc/PID/pagemap)"
head -n 12 "$work/sections.txt" | sed 's/^/  /'
echo
echo "== what tetherd touched in 10 s of streaming, beside what is resident (clear_refs, then smaps' Referenced)"
sed 's/^/  /' "$work/working-set.txt"
