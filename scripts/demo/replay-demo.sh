#!/usr/bin/env bash
# The link-protocol part of the demo (scripts/demo.sh is the end-to-end one). It:
#   1. records a fresh session from the firmware model against the real gateway session, with every fault on
#      (drops, duplicates, corruption, truncation, split/merged notifications, a reboot, a full store),
#   2. replays every recorded firmware transcript in Firmware-fixtures/ through the gateway session, prints
#      what the gateway stored and answered, and checks each against its expected outcome.
#   3. stores every transcript through the real store into an SQLite file (events + outbox commands in one
#      transaction each), replays them all again, and checks that the second pass added nothing.
# It exits 0 only if every check holds.
set -euo pipefail
cd "$(dirname "$0")/../.."
scripts/setup/install-deps.sh
for product in tether tether-fixtures; do swift build -c release --product "$product" 2>&1 | tail -1; done
bin=$(swift build -c release --show-bin-path)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

echo
echo "== 1. Live run: firmware model vs gateway session, faults on (seeded, simulated time)"
"$bin/tether-fixtures" "$work" --only fw1.4-reboot-midstream
"$bin/tether-fixtures" "$work" --only fw1.0-bad-crc
"$bin/tether" replay "$work/fw1.4-reboot-midstream.transcript" | head -12

echo
echo "== 2. Replay every recorded firmware transcript (firmware 1.0, 1.4, 2.0, 3.0) against its expected outcome"
for transcript in Firmware-fixtures/*.transcript; do
    "$bin/tether" replay --json "$transcript" >/dev/null
done
"$bin/tether" replay --expect Firmware-fixtures Firmware-fixtures/*.transcript | grep -E '^(==|device|connections)' 
echo
if "$bin/tether" replay --json --expect Firmware-fixtures Firmware-fixtures/*.transcript >/dev/null; then
    echo "demo: every transcript replayed to its expected outcome"
else
    echo "demo: FAILED: a transcript no longer replays to its expected outcome" >&2
    exit 1
fi

echo
echo "== 3. Store everything in a real database (durable commits), then replay it all again"
first=$("$bin/tether" replay --json --db "$work/gateway.sqlite" Firmware-fixtures/*.transcript 2>&1 >/dev/null | grep '^database')
second=$("$bin/tether" replay --json --db "$work/gateway.sqlite" Firmware-fixtures/*.transcript 2>&1 >/dev/null | grep '^database')
echo "after the first pass:  ${first#database *: }"
echo "after the second pass: ${second#database *: }"
if [ "${first#database *: }" = "${second#database *: }" ]; then
    echo "demo: replaying again added nothing (events are unique by identity; no duplicate outbox commands)"
else
    echo "demo: FAILED: the second pass changed the database" >&2
    exit 1
fi
