#!/usr/bin/env bash
# A gateway whose disk really fills (issue 17, item 3, daemon level; docs/design/durability.md). Runs the system as
# scripts/demo.sh does, with tetherd's state directory (its database and WAL) on a tmpfs of --size MiB and the
# free-disk floor off (`min_free_disk = "0B"`), so that SQLite itself meets ENOSPC. The devices' users take hits
# while tetherd syncs; then a file beside the database fills the tmpfs to the last byte, and the script checks that
# tetherd says its storage is full, that the devices keep events (they hold more than before), and that, with the
# daemon still running, every event a device saw ACKed is in the database. Then the file is deleted and everything
# must flow again: the drain and the verification of scripts/durability/drain.sh (0 lost, 0 duplicates, every
# created event on the server, integrity ok).
#
# Mounting needs root. Usage: scripts/durability/full-disk.sh [--size MIB] [--full-seconds S] [--keep] [--no-build]
#   --size MIB        the tmpfs (default 16)
#   --full-seconds S  how long the disk stays full while the users take hits (default 10)
set -euo pipefail
cd "$(dirname "$0")/../.."

size_mib=16
full_seconds=10
device_count=4
keep=false
build=true
while (($#)); do
    case "$1" in
    --size) size_mib=${2:?--size needs MiB}; shift 2 ;;
    --full-seconds) full_seconds=${2:?--full-seconds needs seconds}; shift 2 ;;
    --keep) keep=true; shift ;;
    --no-build) build=false; shift ;;
    -h | --help) sed -n '2,15p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "full-disk: unknown argument '$1' (see --help)" >&2; exit 2 ;;
    esac
done
[ "$(id -u)" = 0 ] || { echo "full-disk: FAILED: mounting a tmpfs needs root (uid $(id -u))" >&2; exit 1; }

source scripts/demo/system.sh
source scripts/durability/drain.sh
scratch=(${TETHER_SCRATCH_PATH:+--scratch-path "$TETHER_SCRATCH_PATH"})
if $build; then build_system_programs "${scratch[@]}"; fi
bin=$(swift build "${scratch[@]}" --show-bin-path)
python=/usr/bin/python3

tool=full-disk
system_init tether-full-disk
state=$work/state
mkdir "$state"
# The processes first (tetherd holds the database open), then the mount, then the directory.
on_exit() {
    local status=$?
    trap - EXIT
    if mountpoint -q "$state"; then
        for pid in "${pids[@]}"; do kill -KILL -- "-$pid" 2>/dev/null || true; done
        umount --lazy "$state" || true
    fi
    system_cleanup "$status"
}
trap on_exit EXIT
trap 'echo "full-disk: interrupted" >&2; exit 130' INT
trap 'echo "full-disk: SIGTERM: stopping" >&2; exit 143' TERM
mount -t tmpfs -o "size=$((size_mib << 20)),mode=0700" tmpfs "$state" || fail "cannot mount a tmpfs on $state"

echo "== starting the system in $work (tetherd's state on a ${size_mib} MiB tmpfs, free-disk floor off)"
start_bus
start_sim "$device_count"
start_server
start_gateway "$device_count" "$state" $'[storage]\nmin_free_disk = "0B"'
start_users
acked_once() { read -r released _ < <("$python" "$helper" device-stats "$bus" "$(device_list)"); ((released > 0)); }
wait_for "the first ACKed events" 60 acked_once

echo "== filling the tmpfs to the last byte"
dd if=/dev/zero of="$state/filler" bs=64k 2>/dev/null || true
storage_full() { read_status; [ "$(status_field storage)" = full ]; }
wait_for "tetherd to report its storage full" 60 storage_full
read -r released_full held_full < <("$python" "$helper" device-stats "$bus" "$(device_list)")
echo "   tetherd refuses new data: $(status_field storage); devices: $released_full ACKed, $held_full held"
pause "$full_seconds"
read -r released_later held_later < <("$python" "$helper" device-stats "$bus" "$(device_list)")
((held_later > held_full)) || fail "the devices did not keep events while the disk was full ($held_full held, then $held_later)"
# §8.2 with the daemon running and the disk full: every event a device forgot is in the database.
result=$("$python" "$check" acked "$bus" "$work/sim.json" "$state/gateway.sqlite") || fail "while full: $result"
echo "   after $full_seconds s full: $released_later ACKed (+$((released_later - released_full))), $held_later held; $result"

echo "== space returns (the filler is deleted)"
rm -f "$state/filler"
accepting() { read_status; [ "$(status_field storage)" = ok ]; }
wait_for "tetherd to accept data again" 120 accepting
# drain.sh reads the gateway's database at $work/gateway.sqlite.
ln -s "$state/gateway.sqlite" "$work/gateway.sqlite"
drain
verify "tmpfs size (MiB)" "$size_mib" "ACKed while the disk was full (at the start, after ${full_seconds} s)" "$released_full, $released_later" \
    "held by the devices while full (at the start, after ${full_seconds} s)" "$held_full, $held_later"
