#!/usr/bin/bash
# The health scenario's steps (tetherd-health.sh, and with FIRMWARE=1 tetherd-health-firmware.sh): see those files.
set -euo pipefail
FIRMWARE=${FIRMWARE:-0}
records=10
# The reading deleted on the meter in step 5c (from the middle of its memory: the audit's to find).
deleted_reading=7
# A static random address (two top bits set): the meter advertises and connects from it, and bonds with it as its
# identity, so it is the address BlueZ, tetherd and `tether pair` use. (The gateway's own controller reports
# 00:00:00:00:00:00 as its public address and uses a static random one: nothing here depends on that.)
address=F3:A1:18:08:00:01
state=/tmp/tetherd
mkdir -p $state
source /work/guest/lib-guest.sh
# The meter's facts (meter-events.jsonl) and the gateway's database, read while tetherd runs (WAL: readers do not
# block it).
fact_seen() { grep -q "\"fact\": \"$1\"" /work/meter-events.jsonl; }
meter_connected() { tether health devices --json | grep -q '"connected" *: *true'; }
# Exit 0 once tetherd holds a vanished-from-device tombstone for the sample of reading $1.
vanished_tombstoned() {
    python3 - "$state/gateway.sqlite" "$1" <<'PY'
import sqlite3, sys
db = sqlite3.connect(sys.argv[1], timeout=10)
rows = db.execute("SELECT s.recordSequence FROM healthDeletion d JOIN healthSample s ON s.id = d.sampleId "
                  "WHERE d.reason = 'vanished-from-device'").fetchall()
sys.exit(0 if (int(sys.argv[2]),) in rows else 1)
PY
}
cursor_at() {
    python3 - "$state/gateway.sqlite" "$1" <<'PY'
import sqlite3, sys
db = sqlite3.connect(sys.argv[1], timeout=10)
row = db.execute("SELECT max(position) FROM healthIngestCursor WHERE characteristic = '00002a18-0000-1000-8000-00805f9b34fb'").fetchone()
sys.exit(0 if row and row[0] == int(sys.argv[2]) else 1)
PY
}

# 1. The control API's bus policy (lib-guest.sh).
install_bus_policy

# 2. tetherd on the system bus, on Bumble's vhci controller (hci0); health on (the default), no sync server.
cat > $state/tether.toml <<TOML
[gateway]
database = "$state/gateway.sqlite"
state_directory = "$state"

[bluetooth]
bus = "system"
adapter = "hci0"
max_connections = 2
backoff_initial = "500ms"
backoff_max = "4s"
notify_method = "auto"

[health]
enabled = true
# Step 5c: look for readings that vanished from this meter (RACP counts within ranges on each connection).
audit_vanished_records = ["$address"]

[control]
bus = "system"

[metrics]
enabled = false

[log]
level = "debug"
TOML
if [ "$FIRMWARE" = 1 ]; then
    # The key that signed the images the host made (make-firmware-images.sh).
    printf '\n[firmware]\ntrusted_keys = "/work/firmware/trusted"\n' >> $state/tether.toml
fi
cp $state/tether.toml /work/tether.toml
/work/bin/tetherd --check-config --config $state/tether.toml
/work/bin/tetherd --config $state/tether.toml > /work/tetherd.log 2>&1 &
pids+=($!)
wait_for "tetherd's control API answers on the system bus" 90 tether status --json

# 3. The meter: a Bumble host on controller C1 of Bumble's radio (stage2.sh started the controllers).
#    TETHER_VM_FAULT (real-bluez.sh) plants a defect on purpose: the check must then fail.
#    With FIRMWARE=1 it also serves MCUmgr's SMP service, running the host's imgtool-signed factory image.
firmware_options=()
if [ "$FIRMWARE" = 1 ]; then
    firmware_options=(--smp-image /work/firmware/factory.img)
    touch /work/firmware-expected   # check-tetherd-health.py judges the firmware step only then
fi
PYTHONPATH=/opt/pylib PYTHONDONTWRITEBYTECODE=1 python3 /work/guest/glucose-meter.py \
    --transport tcp-client:127.0.0.1:9000 --address $address --records $records --delete-on-usr2 $deleted_reading \
    "${firmware_options[@]}" \
    --event-log /work/meter-events.jsonl ${TETHER_VM_FAULT:+--fault "$TETHER_VM_FAULT"} > /work/meter.log 2>&1 &
meter=$!
pids+=($meter)
echo "$address" > /work/meter-address
wait_for "the meter advertises as $address" 150 fact_seen advertising

# 4. tether scan until the meter shows up, then tether pair: just-works, so no prompt (stdin closed).
for attempt in 1 2 3 4; do
    tether scan --duration 5 > /work/scan-$attempt.txt 2>&1 || true
    grep -qi "$address" /work/scan-$attempt.txt && break
done
grep -qi "$address" /work/scan-*.txt && say "tether scan saw $address" || say "tether scan did not list $address"
pair_status=0
timeout 150 /work/bin/tether pair "$address" --timeout 120 < /dev/null > /work/pair.out 2> /work/pair.err || pair_status=$?
echo "$pair_status" > /work/pair-status
say "tether pair exited with $pair_status: $(cat /work/pair.out) $(tail -c 300 /work/pair.err)"
[ "$pair_status" = 0 ] || exit 1

# 5. The cold lane on connection: every stored record over RACP, the cursor at the highest sequence.
wait_for "tetherd stored the meter's $records records (cursor $records)" 120 cursor_at $records || true
tether health devices --json > /work/health-devices-before.json 2>&1 || true

# 5b. FIRMWARE=1: `tether firmware update` through tetherd installs the host's update image over the real stack
#     (upload, test, the meter's reset and swap, back on the new image, 3 s proving itself, confirm); the health
#     session gets the meter back afterwards, which step 6's backfill then needs.
if [ "$FIRMWARE" = 1 ]; then
    update_started=$SECONDS
    firmware_status=0
    timeout 300 /work/bin/tether firmware update "$address" /work/firmware/update.img --prove-for 3 --json \
        > /work/firmware-update.jsonl 2> /work/firmware-update.err || firmware_status=$?
    echo "$firmware_status" > /work/firmware-update-status
    say "tether firmware update exited with $firmware_status after $((SECONDS - update_started)) s: $(tail -1 /work/firmware-update.jsonl) $(tail -c 300 /work/firmware-update.err)"
    timeout 120 /work/bin/tether firmware list "$address" --json > /work/firmware-list.json 2> /work/firmware-list.err || true
    tether firmware updates --json > /work/firmware-updates.json 2>&1 || true
    wait_for "the health session has the meter again" 90 meter_connected || true
fi

# 5c. A person deletes reading $deleted_reading in the meter's menu (the meter drops the link): on the next connection
#     tetherd counts the meter's records within ranges (RACP Report Number of Stored Records, operator "within range
#     of", GLS §3.3.x), finds that one gone, and tombstones its sample "vanished-from-device"; nothing else.
kill -USR2 $meter
wait_for "the meter deleted reading $deleted_reading" 30 fact_seen reading-deleted
wait_for "tetherd tombstoned reading $deleted_reading as vanished from the meter" 120 vanished_tombstoned $deleted_reading || true
wait_for "the health session has the meter again" 90 meter_connected || true

# 6. One more reading on the meter while connected (stored, not sent), then a backfill: exactly that one.
kill -USR1 $meter
wait_for "the meter took reading $((records + 1))" 30 fact_seen reading-taken
backfill_status=0
timeout 200 /work/bin/tether health backfill "$address" --json > /work/backfill.json 2> /work/backfill.err || backfill_status=$?
echo "$backfill_status" > /work/backfill-status
say "tether health backfill exited with $backfill_status: $(tr -d '\n' < /work/backfill.json) $(tail -c 300 /work/backfill.err)"
wait_for "cursor at $((records + 1))" 10 cursor_at $((records + 1)) || true

# 7. What the CLI shows; stop tetherd, then the meter; copy the database; check.
tether health devices --json > /work/health-devices.json 2>&1 || true
tether health samples "$address" --json --limit 100 > /work/health-samples.json 2>&1 || true
tether status --json > /work/status.json 2>&1 || true
stop_all
trap - EXIT
python3 - $state/gateway.sqlite /work/gateway.sqlite <<'PY'
import sqlite3, sys
source = sqlite3.connect(sys.argv[1]); target = sqlite3.connect(sys.argv[2]); source.backup(target)
PY
cp /tmp/bluetoothd.log /work/bluetoothd.log
python3 /work/guest/check-tetherd-health.py /work
