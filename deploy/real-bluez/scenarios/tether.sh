#!/usr/bin/bash
# Tether end to end on real BlueZ: the firmware model as a passkey-protected peripheral on hci0, Tether's central
# on hci1. Scan, pair (passkey), connect, AcquireNotify, hits stored with ACK after commit, time sync, a settings
# round trip; the device power-cycles; reconnect with StartNotify; the rest stored. Then check-tether.py compares
# what the device produced with what the gateway stored.
# needs: tether-peripheral tether-vm-central
set -euo pipefail
passkey=246810
hits=20
hits_after_reboot=10

/work/bin/tether-peripheral --adapter /org/bluez/hci0 --passkey $passkey --hits $hits \
    --hits-after-reboot $hits_after_reboot --reboot-after 10 --hit-interval-milliseconds 300 \
    --event-log /work/peripheral-events.jsonl > /work/peripheral.log 2>&1 &
peripheral=$!
echo "peripheral started (pid $peripheral)"

set +e
timeout 200 /work/bin/tether-vm-central --adapter /org/bluez/hci1 --passkey $passkey \
    --database /tmp/gateway.sqlite --expect-hits $((hits + hits_after_reboot)) \
    --summary /work/central-summary.json --timeout-seconds 170 > /work/central.log 2>&1
central_status=$?
set -e
echo "central exited with $central_status"

# The device leaves once every hit was acknowledged; give it a bounded moment.
for _ in $(seq 100); do kill -0 $peripheral 2>/dev/null || break; sleep 0.1; done
if kill -0 $peripheral 2>/dev/null; then
    echo "peripheral still running: not every hit was acknowledged"
    kill -KILL $peripheral
    peripheral_status=1
else
    wait $peripheral && peripheral_status=0 || peripheral_status=$?
fi
echo "peripheral exited with $peripheral_status"
cp /tmp/gateway.sqlite /work/gateway.sqlite 2>/dev/null || true

# bluetoothd's log lives in the guest's tmpfs until the end; the checks read a copy.
cp /tmp/bluetoothd.log /work/bluetoothd.log
python3 /work/guest/check-tether.py /work
[ $central_status = 0 ] && [ $peripheral_status = 0 ]
