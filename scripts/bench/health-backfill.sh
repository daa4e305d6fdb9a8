#!/usr/bin/env bash
# A RACP backfill of a glucose meter's stored records through tether-sim's link model (issue 14, item 8), against
# the model's own bound. Runs the system as scripts/demo.sh does (scripts/demo/system.sh: a private dbus-daemon,
# tether-sim, tether-server on SQLite, tetherd) with one glucose meter holding --records stored records and no other
# device, pairs it, and waits until tetherd's cold lane has committed the last record's cursor. The meter sends
# through tether-sim's link model (LinkModel: at most `notificationsPerEvent` values every
# `connectionIntervalMilliseconds`; one Glucose Measurement notification a record, one Glucose Context more every
# --context-every records), so the model bounds the backfill at
#   notificationsPerEvent / connectionInterval / (1 + 1/context-every)   records per second.
# Measured with tetherd's own clock from its database: the first record's receipt (healthSample.receivedAt) to the
# commit of the cursor at the last one (healthIngestCursor.updatedAt), and tetherd's CPU time (/proc/PID/stat) from
# pairing to that commit. Then checks that every record is stored once and the cursor is not ahead of its samples
# (scripts/durability/check.py health). Prints the figures; exits 0 when the backfill completed and checked out
# (the ratio to the bound is reported, not required: speed lives in benchmarks, not tests).
#
# Usage: scripts/bench/health-backfill.sh [--records N] [--context-every K] [--debug] [--keep] [--no-build]
#   --records N        stored records in the meter (default 10000; at most 65535, its sequence numbers are uint16)
#   --context-every K  a Glucose Context every K records (default 4, as the demo's meter; 0 for none)
#   --debug            the debug build (default: release)
#   --keep             keep the temporary directory
#   --no-build         use what `swift build` last built
set -euo pipefail
cd "$(dirname "$0")/../.."

records=10000
context_every=4
configuration=release
keep=false
build=true
while (($#)); do
    case "$1" in
    --records) records=${2:?--records needs a number}; shift 2 ;;
    --context-every) context_every=${2:?--context-every needs a number}; shift 2 ;;
    --debug) configuration=debug; shift ;;
    --keep) keep=true; shift ;;
    --no-build) build=false; shift ;;
    -h | --help) sed -n '2,22p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "health-backfill: unknown argument '$1' (see --help)" >&2; exit 2 ;;
    esac
done
[[ "$records" =~ ^[0-9]+$ && "$records" -ge 2 && "$records" -le 65535 ]] || { echo "health-backfill: --records must be 2 to 65535" >&2; exit 2; }
[[ "$context_every" =~ ^[0-9]+$ ]] || { echo "health-backfill: --context-every must be a whole number" >&2; exit 2; }

source scripts/demo/system.sh
source scripts/durability/drain.sh
if $build; then build_system_programs -c "$configuration"; fi
bin=$(swift build -c "$configuration" --show-bin-path)
python=/usr/bin/python3
tool=health-backfill
system_init tether-health-backfill
trap system_cleanup EXIT

# The link model, written out so that the bound below is computed from what the simulator runs with.
interval_ms=15
per_event=6
echo "== starting the system in $work (a glucose meter with $records stored records)"
start_bus
"$python" - "$records" "$context_every" "$interval_ms" "$per_event" >"$work/sim.json" <<'EOF'
import json, sys
records, context_every, interval_ms, per_event = (int(value) for value in sys.argv[1:5])
meter = {"address": "C0:48:45:00:00:01", "name": "Sim-Glucose", "serial": "HS00000001",
         "health": {"kind": "glucose", "storedRecords": records, "measurementIntervalSeconds": 1,
                    "contextEvery": context_every, "seed": 21}}
print(json.dumps({"seed": 11, "devices": [meter],
                  "link": {"connectionIntervalMilliseconds": interval_ms, "notificationsPerEvent": per_event}}, indent=1))
EOF
start tether-sim "$work/sim.log" "$bin/tether-sim" --bus "$bus" --config "$work/sim.json"
wait_for "tether-sim" 20 grep -q '^DBUS_SYSTEM_BUS_ADDRESS=' "$work/sim.log"
addresses=()
health_addresses=(C0:48:45:00:00:01)
start_server
write_tetherd_config 1
start_tetherd
wait_for "tetherd's control API" 30 tetherd_ready

cpu_seconds() { awk '{ printf "%.2f\n", ($14 + $15) / 100 }' "/proc/$1/stat"; }
# The meter's cursor position, and when it was committed (ns), once it reached the last record; nothing before.
cursor_at_end() {
    "$python" - "$work/gateway.sqlite" "$records" <<'EOF'
import sqlite3, sys
try:
    row = sqlite3.connect("file:%s?mode=ro" % sys.argv[1], uri=True, timeout=10).execute(
        "SELECT position, updatedAt FROM healthIngestCursor WHERE characteristic LIKE '00002a18-%'"
        " ORDER BY epoch DESC LIMIT 1").fetchone()
except sqlite3.Error:
    row = None
if row and row[0] is not None and row[0] >= int(sys.argv[2]):
    print(row[0], row[1])
EOF
}

cpu_before=$(cpu_seconds "$tetherd_pid")
pair_started=$SECONDS
pair_health_devices >/dev/null
echo "== paired; waiting for the backfill of $records records"
end=
for ((i = 0; i < 6000; i++)); do
    end=$(cursor_at_end)
    [ -n "$end" ] && break
    kill -0 "$tetherd_pid" 2>/dev/null || fail "tetherd exited; see $work/tetherd.log"
    pause 0.1
done
[ -n "$end" ] || fail "the cursor did not reach record $records within 600 s (see $work/tetherd.log)"
cpu_after=$(cpu_seconds "$tetherd_pid")
read -r position committed_ns <<<"$end"
first_ns=$("$python" -c '
import sqlite3, sys
print(sqlite3.connect("file:%s?mode=ro" % sys.argv[1], uri=True).execute(
    "SELECT min(receivedAt) FROM healthSample WHERE characteristic LIKE ?", ("00002a18-%",)).fetchone()[0])' "$work/gateway.sqlite")
stored=$("$python" -c '
import sqlite3, sys
print(sqlite3.connect("file:%s?mode=ro" % sys.argv[1], uri=True).execute(
    "SELECT count(DISTINCT recordSequence) FROM healthSample WHERE characteristic LIKE ?", ("00002a18-%",)).fetchone()[0])' "$work/gateway.sqlite")
lanes=$("$python" scripts/durability/check.py health "$work/gateway.sqlite") || fail "the backfill broke a cold-lane rule: $lanes"
((stored == records)) || fail "$stored of $records records stored"

read -r seconds rate bound ratio per_record cpu < <("$python" - "$records" "$context_every" "$interval_ms" "$per_event" \
    "$first_ns" "$committed_ns" "$cpu_before" "$cpu_after" <<'EOF'
import sys
records, context_every, interval_ms, per_event = (int(value) for value in sys.argv[1:5])
first_ns, committed_ns = int(sys.argv[5]), int(sys.argv[6])
cpu = float(sys.argv[8]) - float(sys.argv[7])
seconds = (committed_ns - first_ns) / 1e9
notifications_per_record = 1 + (1 / context_every if context_every else 0)
bound = per_event / (interval_ms / 1000) / notifications_per_record
# The first record's receipt starts the clock, so the records after it are what the interval carried.
rate = (records - 1) / seconds if seconds > 0 else float("inf")
print("%.2f %.1f %.1f %.3f %.1f %.2f" % (seconds, rate, bound, rate / bound, cpu / records * 1e6, cpu))
EOF
)
echo
echo "== a $records-record RACP backfill through tether-sim's link model ($configuration build)"
printf '  %-62s %12s\n' \
    "link model: values per connection event / interval" "$per_event / ${interval_ms} ms" \
    "Glucose Context every (records)" "$context_every" \
    "model bound (records/s)" "$bound" \
    "first record received -> cursor at record $records committed (s)" "$seconds" \
    "measured (records/s)" "$rate" \
    "measured / bound" "$ratio" \
    "tetherd CPU from pairing to the commit (s)" "$cpu" \
    "tetherd CPU per record (µs)" "$per_record" \
    "records stored (distinct sequence numbers)" "$stored" \
    "cold-lane check (check.py health)" "$lanes" \
    "seconds from pairing to the commit" "$((SECONDS - pair_started))"
echo "health-backfill: PASSED: $records records backfilled, each stored once"
