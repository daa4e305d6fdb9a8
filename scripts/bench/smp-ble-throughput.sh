#!/usr/bin/env bash
# MCUmgr image upload over BLE through tether-sim's link model (issue 16, item 8), against the link model's ceiling.
# For each link and device in the matrix below, a private dbus-daemon and tether-sim with one simulated MCUmgr device
# (SimulatedDevice+SMP: Zephyr's SMP GATT transport with reassembly, buf_size 2048, the given buf_count; flash
# "instant" by default so that the link is what is measured), then one upload of a freshly signed image by each
# client, timed from the first request to the last answer:
#   - Tether's own transport (SMPBluetoothSession driving ImageUploader; Benchmarks' tether-smp-ble-bench): requests up
#     to buf_size split into writes the device reassembles, up to buf_count - 1 of them in flight;
#   - smpclient 7.3.0 (PyPI, bleak underneath; scripts/setup/smpclient-venv.sh), the peer: one request in flight.
# The link model (LinkModel) carries `notificationsPerEvent` writes of MTU - 3 bytes each connection interval, so the
# ceiling for the upload's bytes on the air is
#   notificationsPerEvent * (MTU - 3) / interval   bytes per second
# (SMP's header and the CBOR around each chunk come out of that too; the ratio is of the image's bytes).
# Prints one line per client and configuration, and the ratios. Speed lives here, not in tests: exit 0 when every
# upload completed.
#
# Usage: scripts/bench/smp-ble-throughput.sh [--image-kib N] [--flash NAME] [--debug] [--keep] [--no-build]
#   --image-kib N   the image body's size (default 128)
#   --flash NAME    the device's flash timing: instant (default) or nrf52840 (adds the erase and write times)
#   --debug         the debug build of tether-sim (default: release)
#   --keep          keep the temporary directory
#   --no-build      use what `swift build` last built
set -euo pipefail
cd "$(dirname "$0")/../.."

image_kib=128
flash=instant
configuration=release
keep=false
build=true
while (($#)); do
    case "$1" in
    --image-kib) image_kib=${2:?--image-kib needs a number}; shift 2 ;;
    --flash) flash=${2:?--flash needs instant or nrf52840}; shift 2 ;;
    --debug) configuration=debug; shift ;;
    --keep) keep=true; shift ;;
    --no-build) build=false; shift ;;
    -h | --help) sed -n '2,21p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "smp-ble-throughput: unknown argument '$1' (see --help)" >&2; exit 2 ;;
    esac
done
[[ "$image_kib" =~ ^[0-9]+$ && "$image_kib" -ge 1 && "$image_kib" -le 320 ]] || { echo "smp-ble-throughput: --image-kib must be 1 to 320" >&2; exit 2; }
case "$flash" in instant | nrf52840) ;; *) echo "smp-ble-throughput: --flash must be instant or nrf52840" >&2; exit 2 ;; esac

source scripts/demo/system.sh
if $build; then
    echo "== swift build -c $configuration --product tether-sim, and Benchmarks' tether-smp-ble-bench"
    swift build -c "$configuration" --product tether-sim >/dev/null
    (cd Benchmarks && swift build -c "$configuration" --product tether-smp-ble-bench >/dev/null)
fi
bin=$(swift build -c "$configuration" --show-bin-path)
bench=$(cd Benchmarks && swift build -c "$configuration" --show-bin-path)/tether-smp-ble-bench
[ -x "$bench" ] || { echo "smp-ble-throughput: no $bench (build Benchmarks' tether-smp-ble-bench, or drop --no-build)" >&2; exit 1; }
python=/usr/bin/python3
smpclient_python=$(scripts/setup/smpclient-venv.sh)
imgtool=$(scripts/setup/imgtool-venv.sh)
tool=smp-ble-throughput
system_init tether-smp-ble-throughput
$keep && trap 'echo "kept $work"' EXIT || trap system_cleanup EXIT

# The image: a body of pseudo-random bytes (no compression anywhere could flatter a client), signed by imgtool with
# the test fixtures' Ed25519 key; the device runs the committed fixture image.
fixtures=Tests/MCUbootImageTests/Fixtures
head -c $((image_kib * 1024)) /dev/urandom >"$work/body.bin"
"$imgtool" sign --slot-size 0x60000 -k "$fixtures/keys/ed25519.pem" -H 0x200 --pad-header -v 9.9.9+1 \
    "$work/body.bin" "$work/new.img" >/dev/null
image_bytes=$(stat -c %s "$work/new.img")
echo "== image: $image_bytes bytes ($image_kib KiB body, signed by imgtool); device flash: $flash"

# Stops one process group this script started (SIGTERM, then SIGKILL after 10 s) and forgets it.
stop_group() {
    local waited
    kill -TERM -- "-$1" 2>/dev/null || true
    for ((waited = 0; waited < 100; waited++)); do
        kill -0 -- "-$1" 2>/dev/null || break
        sleep 0.1
    done
    kill -KILL -- "-$1" 2>/dev/null || true
    forget "$1"
}

address=C0:54:45:00:00:07
results=()
failures=0
printf '%-10s %5s %8s %5s %12s %12s %7s\n' client mtu interval bufs "kB/s" "ceiling kB/s" ratio
for mtu in 247 498; do
    for interval in 7.5 30; do
        for buf_count in 1 4; do
            "$python" - "$address" "$PWD/$fixtures/ed25519-hash.img" "$mtu" "$interval" "$buf_count" "$flash" >"$work/sim.json" <<'PY'
import json, sys
address, image, mtu, interval, buf_count, flash = sys.argv[1:7]
device = {"address": address, "name": "Tether-SMP", "serial": "TS00000007",
          "smp": {"image": image, "bufSize": 2048, "bufCount": int(buf_count), "reassembly": True, "flash": flash}}
print(json.dumps({"seed": 5, "devices": [device],
                  "link": {"mtu": int(mtu), "connectionIntervalMilliseconds": float(interval), "notificationsPerEvent": 6}}))
PY
            ceiling=$("$python" -c "print(6 * ($mtu - 3) / ($interval / 1000) / 1000)")
            # Each client on a device of its own: a fresh bus and tether-sim, so that neither finds the other's
            # upload in the device (an upload with the same hash resumes at the device's offset).
            for client in tether smpclient; do
                rm -f "$work/dbus.log" "$work/sim.log" "$work/bus"
                start_bus
                bus_pid=${pids[-1]}
                start tether-sim "$work/sim.log" "$bin/tether-sim" --bus "$bus" --config "$work/sim.json"
                sim_pid=${pids[-1]}
                wait_for "tether-sim" 20 grep -q '^DBUS_SYSTEM_BUS_ADDRESS=' "$work/sim.log"
                if [ "$client" = tether ]; then
                    command=("$bench" "$bus" "$address" "$work/new.img" --reassembly)
                else
                    command=(env DBUS_SYSTEM_BUS_ADDRESS="$bus" PYTHONWARNINGS=ignore "$smpclient_python" scripts/bench/smp_ble_upload.py "$address" "$work/new.img")
                fi
                if out=$(timeout 600 "${command[@]}" 2>"$work/$client.err"); then
                    read -r rate ratio < <("$python" -c "
import json, sys
r = json.loads(sys.argv[1]); rate = r['bytes'] / r['seconds'] / 1000
print('%.1f %.3f' % (rate, rate / float(sys.argv[2])))" "$out" "$ceiling")
                    printf '%-10s %5s %8s %5s %12s %12.1f %7s\n' "$client" "$mtu" "$interval" "$buf_count" "$rate" "$ceiling" "$ratio"
                    results+=("$client mtu=$mtu interval=$interval buf_count=$buf_count rate=$rate ceiling=$ceiling ratio=$ratio")
                else
                    echo "$client mtu=$mtu interval=$interval buf_count=$buf_count: FAILED (see $work/$client.err)" >&2
                    tail -n 5 "$work/$client.err" >&2
                    failures=$((failures + 1))
                fi
                stop_group "$sim_pid"
                stop_group "$bus_pid"
            done
        done
    done
done
((failures == 0)) || { echo "smp-ble-throughput: FAILED: $failures uploads did not complete" >&2; exit 1; }
echo "smp-ble-throughput: done: ${#results[@]} uploads"
