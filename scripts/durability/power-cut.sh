#!/usr/bin/env bash
# Power cuts (issue 17, item 1; docs/design/durability.md, "Power cuts"). tetherd, tether-sim and tether-server run
# in a qemu VM (the real-BlueZ harness's kernel and initramfs, scripts/vm/real-bluez.sh) whose state directory is an
# ext4 filesystem on a virtual disk. Each cut: boot, check what the last cut left, start everything, let the devices
# stream, and at a seeded random moment SIGKILL the qemu process: every write the guest had not flushed to its
# disk is gone, as with a pulled plug (the guest's page cache dies with it; what it flushed, qemu had written to
# the disk image). The checks, made in the next boot before anything opens the databases
# (deploy/power-cut/stage2.sh): every event a device saw ACKed is in the gateway's database; both databases pass
# `PRAGMA integrity_check`; no feed cursor moved back. The devices' record of what was ACKed is tether-sim's
# released-event log, on the 9p share: qemu writes it through to this machine, so the cut does not touch it.
# A last boot drains and checks that the gateway and the server hold the same events with no dead letters.
#
# Usage: scripts/durability/power-cut.sh [--cuts N] [--seed S] [--devices N] [--max-delay S] [--control] [--keep]
#        scripts/durability/power-cut.sh --resume RUN_FOLDER [--keep]
#   --cuts N       power cuts (default 200, the long run; scripts/test.sh runs 3)
#   --seed S       seeds the cut moments (default 1)
#   --devices N    simulated devices (default 3)
#   --max-delay S  longest wait, in seconds, from "streaming" to the cut (default 20; the shortest is 1)
#   --control      the control run: tetherd and tether-server under eatmydata (fsync does nothing). It must lose
#                  ACKed events; the script exits 0 only if a check caught a loss, and says after how many cuts.
#   --keep         keep the run folder (logs, checks, disk image) when it passes
#   --resume RUN   go on with a run this script was interrupted in (the host rebooted, or the run was stopped to free
#                  the machine): the same disk, VM, binaries, settings and devices' log, from the boot after the
#                  last one started. The interrupted boot ended as a cut does (qemu died with it) and counts as one;
#                  the next boot checks what it left like any other. The cut moments after a resume are seeded by
#                  the seed and the boot number the run resumed at.
#   Environment: the real-BlueZ harness's (TETHER_VM_LINK=shared uses the debug build, as scripts/test.sh does;
#   default static release binaries), TETHER_POWER_CUT_DISK_MB (default 256).
# Exit status: 0 passed (or, with --control, the loss was caught); 1 failed; 77 this machine cannot run the VM
# (as scripts/vm/real-bluez.sh; TETHER_REQUIRE_REAL_BLUEZ=1 makes it 1).
set -euo pipefail
cd "$(dirname "$0")/../.."
repo=$(pwd)

cuts=200
seed=1
devices=3
max_delay=20
control=false
keep=false
resume=
given=()
while (($#)); do
    case "$1" in
    --cuts) cuts=${2:?--cuts needs a number}; given+=(--cuts); shift 2 ;;
    --seed) seed=${2:?--seed needs a number}; given+=(--seed); shift 2 ;;
    --devices) devices=${2:?--devices needs a number}; given+=(--devices); shift 2 ;;
    --max-delay) max_delay=${2:?--max-delay needs seconds}; given+=(--max-delay); shift 2 ;;
    --control) control=true; given+=(--control); shift ;;
    --keep) keep=true; shift ;;
    --resume) resume=${2:?--resume needs a run folder}; shift 2 ;;
    -h | --help) sed -n '2,34p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "power-cut: unknown argument '$1' (see --help)" >&2; exit 2 ;;
    esac
done
[[ "$cuts" =~ ^[0-9]+$ && "$cuts" -ge 1 && "$cuts" -le 1000 ]] || { echo "power-cut: --cuts must be 1 to 1000" >&2; exit 2; }
[[ "$seed" =~ ^[0-9]+$ ]] || { echo "power-cut: --seed must be a whole number" >&2; exit 2; }
[[ "$devices" =~ ^[0-9]+$ && "$devices" -ge 1 && "$devices" -le 10 ]] || { echo "power-cut: --devices must be 1 to 10" >&2; exit 2; }
[[ "$max_delay" =~ ^[0-9]+$ && "$max_delay" -ge 1 && "$max_delay" -le 32 ]] || { echo "power-cut: --max-delay must be 1 to 32 s" >&2; exit 2; }

# A resumed run takes everything from its folder: the settings and the VM's arguments the run started with.
if [ -n "$resume" ]; then
    ((${#given[@]} == 0)) || { echo "power-cut: ${given[*]} cannot go with --resume: a resumed run keeps the settings it started with" >&2; exit 2; }
    run=$(cd "$resume" 2>/dev/null && pwd) || { echo "power-cut: no run folder $resume" >&2; exit 2; }
    for file in settings vm-args.sh state.img binaries.img released.log cycle; do
        [ -f "$run/$file" ] || { echo "power-cut: $run cannot be resumed: it has no $file" >&2; exit 2; }
    done
    read -r cuts seed devices max_delay control < "$run/settings"
    # shellcheck disable=SC1091
    source "$run/vm-args.sh"
    for file in "${qemu_common[@]}"; do
        case $file in /*) [ -e "$file" ] || { echo "power-cut: the VM's $file is gone; $run cannot be resumed" >&2; exit 1; } ;; esac
    done
    read -r last_number last_mode _ < "$run/cycle"
    [[ "$last_number" =~ ^[0-9]+$ ]] || { echo "power-cut: $run/cycle is not a boot record" >&2; exit 2; }
    [ "$last_mode" != setup ] || { echo "power-cut: $run stopped in its setup boot; start a new run" >&2; exit 2; }
    # The interrupted boot was a cut; a final boot interrupted runs again.
    first=$((last_number + 1))
    [ "$last_mode" = final ] && first=$last_number
fi

# The kernel, the initramfs, the binaries and the qemu arguments come from the real-BlueZ harness (its steps 1-5).
if [ -z "$resume" ]; then
    run=${TETHER_VM_RUN:-$repo/.build/power-cut/$(date -u +%Y%m%dT%H%M%SZ)$($control && echo -control || true)}
    prepared=$(mktemp)
    trap 'rm -f "$prepared"' EXIT
    status=0
    TETHER_VM_RUN=$run TETHER_VM_PRODUCTS="tetherd tether-sim tether-server tether" TETHER_VM_PREPARE_ONLY=$prepared \
        scripts/vm/real-bluez.sh smoke || status=$?
    ((status == 0)) || exit "$status"
    # shellcheck disable=SC1090
    source "$prepared"
    if $control && ! command -v eatmydata >/dev/null; then
        echo "power-cut: the control run needs eatmydata (Debian package eatmydata)" >&2
        exit 1
    fi

    $control && touch "$run/control"
    : > "$run/released.log"
    # The glucose meter's history starts a day ago and grows by 50 one-second records a boot (deploy/power-cut/stage2.sh).
    echo $(($(date +%s) - 86400)) > "$run/health-history-start"

    truncate -s "${TETHER_POWER_CUT_DISK_MB:-256}M" "$run/state.img"
    mkfs.ext4 -q -F "$run/state.img"

    # The binaries (and, for a shared-link build, the Swift runtime they load) on a read-only disk of their own: over
    # the 9p share every process start read them again (~20 s each for debug builds under emulation); from a disk the
    # guest's page cache keeps them. Debug sections are stripped from the copies.
    staging=$run/binaries
    mkdir -p "$staging/bin"
    for product in "$run"/bin/*; do strip --strip-debug -o "$staging/bin/$(basename "$product")" "$product"; done
    swiftlib=$(sed -n 's/.*tether\.swiftlib=\([^ ]*\).*/\1/p' <<< "$kernel_args")
    if [ -n "$swiftlib" ]; then
        mkdir -p "$staging/swiftlib"
        ldd "$run"/bin/* | awk -v dir="$swiftlib/" 'index($3, dir) == 1 { print $3 }' | sort -u | xargs -r cp -t "$staging/swiftlib"
    fi
    truncate -s "$(( $(du -sm "$staging" | cut -f1) * 12 / 10 + 32 ))M" "$run/binaries.img"
    mkfs.ext4 -q -F -d "$staging" "$run/binaries.img"
    rm -rf "$staging"
    # What --resume needs to go on with this run.
    echo "$cuts $seed $devices $max_delay $control" > "$run/settings"
    declare -p accel_args qemu_common kernel_args > "$run/vm-args.sh"
fi

# The guest's side: its stage 2 and the scripts it sources, copied again on a resume too, so that a fix to them
# reaches a run already under way (its binaries, settings and disks stay the run's own).
cp deploy/power-cut/stage2.sh "$run/guest/stage2.sh"
mkdir -p "$run/guest/scripts/demo" "$run/guest/scripts/durability"
cp scripts/demo/system.sh scripts/demo/devices.py "$run/guest/scripts/demo/"
cp scripts/durability/check.py scripts/durability/drain.sh "$run/guest/scripts/durability/"
disk=$run/state.img
binaries=$run/binaries.img

# One boot of the VM with the state disk. cache=writeback: a guest flush reaches this machine's page cache (which
# no cut touches); what the guest never flushed is lost with qemu. Sets `qemu_pid`.
boot() {
    local number=$1 mode=$2
    echo "$number $mode $devices" > "$run/cycle"
    rm -f "$run/result-$number" "$run/streaming-$number"
    qemu-system-x86_64 "${accel_args[@]}" "${qemu_common[@]}" \
        -drive "file=$disk,format=raw,if=virtio,cache=writeback" \
        -drive "file=$binaries,format=raw,if=virtio,readonly=on" \
        -serial "file:$run/console-$number.log" -append "$kernel_args" > "$run/qemu-$number.log" 2>&1 &
    qemu_pid=$!
}

# Waits (bounded) for `file` to appear while qemu runs; 0 when it did.
await() {
    local file=$1 seconds=$2 waited
    for ((waited = 0; waited < seconds * 10; waited++)); do
        [ -e "$file" ] && return 0
        kill -0 "$qemu_pid" 2>/dev/null || { [ -e "$file" ]; return; }
        sleep 0.1
    done
    return 1
}

result_of() { cat "$run/result-$1" 2>/dev/null || echo "FAIL no result (see $run/console-$1.log, guest-$1.log)"; }

finish_boot() {
    local waited
    for ((waited = 0; waited < 1200; waited++)); do kill -0 "$qemu_pid" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$qemu_pid" 2>/dev/null || true
    wait "$qemu_pid" 2>/dev/null || true
}

failed() {
    echo "power-cut: FAILED: $*" >&2
    echo "power-cut: run folder kept: $run" >&2
    for file in "$run/guest-$number.log" "$run/check-$number.txt"; do
        [ -f "$file" ] && { echo "-- $file" >&2; tail -n 20 "$file" >&2; }
    done
    exit 1
}

started=$SECONDS
if [ -n "$resume" ]; then
    echo "== power-cut rig: resuming $run at boot $first of $((cuts + 1)) ($cuts cuts, $devices devices, seed $seed$($control && echo ', CONTROL RUN (eatmydata)'))"
    RANDOM=$((seed * 1000 + first))
else
    echo "== power-cut rig: $cuts cuts, $devices devices, seed $seed, cut 1-$max_delay s after streaming$($control && echo ', CONTROL RUN (eatmydata)'); run folder $run"
    number=0
    boot 0 setup
    await "$run/result-0" 600 || { kill -KILL "$qemu_pid" 2>/dev/null; failed "the setup boot did not finish within 600 s"; }
    finish_boot
    [[ "$(result_of 0)" == PASS* ]] || failed "setup: $(result_of 0)"
    echo "   setup: devices paired, $(wc -l < "$run/released.log") events ACKed ($((SECONDS - started)) s)"
    RANDOM=$seed
    first=1
fi

caught=
for ((number = first; number <= cuts + 1; number++)); do
    mode=cut
    ((number == cuts + 1)) && mode=final
    boot "$number" "$mode"
    if [ "$mode" = final ]; then
        await "$run/result-$number" 900 || { kill -KILL "$qemu_pid" 2>/dev/null; failed "the final boot did not finish within 900 s"; }
        finish_boot
    elif await "$run/streaming-$number" 900; then
        delay_ms=$((1000 + RANDOM % (max_delay * 1000 - 999)))
        sleep "$(printf '%d.%03d' $((delay_ms / 1000)) $((delay_ms % 1000)))"
        kill -KILL "$qemu_pid"
        wait "$qemu_pid" 2>/dev/null || true
    else
        kill -KILL "$qemu_pid" 2>/dev/null || true
        wait "$qemu_pid" 2>/dev/null || true
    fi
    result=$(cat "$run/result-$number" 2>/dev/null || true)
    if [[ "$result" == FAIL* ]]; then
        if $control && grep -q 'missing_gateway [1-9]' "$run/check-$number.txt" 2>/dev/null; then
            caught="after $((number - 1)) cuts: $(grep -m1 '^acked ' "$run/check-$number.txt")"
            break
        fi
        failed "boot $number: $result"
    fi
    if [ "$mode" = cut ] && [ ! -e "$run/streaming-$number" ]; then
        failed "boot $number never started streaming: $(result_of "$number")"
    fi
    if ((number % 10 == 0 || number <= 3 || number == first)); then
        printf '%6ss  cut %4s/%s  events ACKed so far %6s  last check: %s\n' $((SECONDS - started)) "$((number < cuts ? number : cuts))" "$cuts" \
            "$(wc -l < "$run/released.log")" "$(head -1 "$run/check-$number.txt" 2>/dev/null)"
    fi
done

echo
echo "== verification ($((SECONDS - started)) s)"
if $control; then
    if [ -n "$caught" ]; then
        echo "power-cut: CONTROL RUN: the weakened durability lost ACKed events, and the rig caught it $caught"
        $keep || rm -rf "$run"
        exit 0
    fi
    failed "CONTROL RUN: $cuts cuts with fsync disabled lost nothing the rig could see; the rig cannot fail"
fi
sed 's/^/  /' "$run/check-final.txt"
echo "  cursor samples: $(wc -l < "$run/cursors.txt" 2>/dev/null || echo 0) (none moved back)"
glucose=$(sed -n 's/^health .*"glucose_records_read": \([0-9]*\).*/\1/p' "$run/check-final.txt")
echo "power-cut: PASSED: $cuts power cuts, $(wc -l < "$run/released.log") ACKed events, 0 lost, 0 duplicates, integrity ok;" \
    "${glucose:-?} glucose records each read once, every health sample on the server once"
$keep || rm -rf "$run"
