#!/usr/bin/env bash
# The long power-cut run in parallel lanes (issue 17, item 1; docs/design/durability.md, "Power cuts"). Each lane is
# a whole scripts/durability/power-cut.sh run of its own: its own VM, state disk, devices' released-event log and
# seed (the lane's number added to --seed), so the lanes share nothing but the binaries. A VM under software
# emulation keeps one core busy; on this machine one lane takes about 45 s a cut, so 200 cuts in one lane take
# about 2.5 hours and two lanes on two free cores about half that.
#
# Usage: scripts/durability/power-cut-lanes.sh [--lanes L] [--cuts N] [--seed S] [power-cut.sh options...]
#        scripts/durability/power-cut-lanes.sh --resume STAMP
#   --lanes L  lanes run at the same time (default 2)
#   --cuts N   cuts in all (default 200), shared out as evenly as they go
#   --seed S   lane k (1...L) runs with seed S + k - 1 (default 1)
#   Any other option goes to every lane (--devices, --max-delay, --keep; not --control).
#   --resume STAMP  go on with the interrupted lanes .build/power-cut/STAMP-lane*: each lane resumes its own run
#                   (power-cut.sh --resume) with the cuts, seed and binaries it started with; its output is appended
#                   to its log
# Each lane's output goes to <its run folder>.log (kept when the run folder is removed after a pass), and its
# summary line is printed here as it ends.
# Exit status: 0 when every lane passed; 1 otherwise; 77 when this machine cannot run the VM.
set -euo pipefail
cd "$(dirname "$0")/../.."

lanes=2
cuts=200
seed=1
passthrough=()
resume=
while (($#)); do
    case "$1" in
    --lanes) lanes=${2:?--lanes needs a number}; shift 2 ;;
    --cuts) cuts=${2:?--cuts needs a number}; shift 2 ;;
    --seed) seed=${2:?--seed needs a number}; shift 2 ;;
    --control) echo "power-cut-lanes: a control run is one lane: scripts/durability/power-cut.sh --control" >&2; exit 2 ;;
    --resume) resume=${2:?--resume needs the stamp of the lanes run folders}; shift 2 ;;
    -h | --help) sed -n '2,18p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) passthrough+=("$1"); shift ;;
    esac
done
[[ "$lanes" =~ ^[0-9]+$ && "$lanes" -ge 1 && "$lanes" -le 8 ]] || { echo "power-cut-lanes: --lanes must be 1 to 8" >&2; exit 2; }
[[ "$cuts" =~ ^[0-9]+$ && "$cuts" -ge "$lanes" ]] || { echo "power-cut-lanes: --cuts must be at least --lanes" >&2; exit 2; }
[[ "$seed" =~ ^[0-9]+$ ]] || { echo "power-cut-lanes: --seed must be a whole number" >&2; exit 2; }

stamp=$(date -u +%Y%m%dT%H%M%SZ)
started=$SECONDS
pids=()
runs=()
if [ -n "$resume" ]; then
    for run in "$PWD/.build/power-cut/$resume"-lane*; do
        [ -d "$run" ] && runs+=("$run")
    done
    ((${#runs[@]})) || { echo "power-cut-lanes: no lanes .build/power-cut/$resume-lane*" >&2; exit 2; }
    lanes=${#runs[@]}
    for ((lane = 1; lane <= lanes; lane++)); do
        run=${runs[lane - 1]}
        echo "== lane $lane: resuming $run"
        scripts/durability/power-cut.sh --resume "$run" "${passthrough[@]}" >> "$run.log" 2>&1 &
        pids+=($!)
    done
else
    # The binaries first, once: the lanes' own builds then find nothing to do (two builds of one scratch path would wait
    # on each other's lock anyway), and the KVM probe once: the lanes are told which accelerator it found.
    probe=$(mktemp -d)
    prepared=$probe.sh
    status=0
    TETHER_VM_PREPARE_ONLY=$prepared TETHER_VM_RUN=$probe TETHER_VM_PRODUCTS="tetherd tether-sim tether-server tether" \
        scripts/vm/real-bluez.sh smoke > /dev/null || status=$?
    ((status == 0)) || { rm -rf "$probe" "$prepared"; exit "$status"; }
    # shellcheck disable=SC1090
    source "$prepared"
    rm -rf "$probe" "$prepared"
    case "${accel_args[1]}" in kvm) export TETHER_VM_ACCEL=kvm ;; *) export TETHER_VM_ACCEL=tcg ;; esac

    for ((lane = 1; lane <= lanes; lane++)); do
        share=$((cuts / lanes + (lane <= cuts % lanes ? 1 : 0)))
        run=$PWD/.build/power-cut/$stamp-lane$lane
        mkdir -p "$run"
        runs+=("$run")
        echo "== lane $lane: $share cuts, seed $((seed + lane - 1)), run folder $run"
        TETHER_VM_RUN=$run scripts/durability/power-cut.sh --cuts "$share" --seed $((seed + lane - 1)) "${passthrough[@]}" \
            > "$run.log" 2>&1 &
        pids+=($!)
    done
fi

failures=0
for ((lane = 1; lane <= lanes; lane++)); do
    status=0
    wait "${pids[lane - 1]}" || status=$?
    ((status == 77)) && { echo "power-cut-lanes: lane $lane: this machine cannot run the VM" >&2; exit 77; }
    echo "   lane $lane ($((SECONDS - started)) s, exit $status): $(grep -E '^power-cut: (PASSED|FAILED)' "${runs[lane - 1]}.log" | tail -1)"  # a resumed lane appends: its last verdict is the run's
    ((status == 0)) || { failures=$((failures + 1)); tail -n 30 "${runs[lane - 1]}.log" | sed 's/^/     /' >&2; }
done
acked=0
for run in "${runs[@]}"; do
    n=$(sed -n 's/^power-cut: PASSED: [0-9]* power cuts, \([0-9]*\) ACKed events.*/\1/p' "$run.log" | tail -1)
    acked=$((acked + ${n:-0}))
done
if ((failures == 0)); then
    echo "power-cut-lanes: PASSED: $cuts power cuts in $lanes lanes, $acked ACKed events, 0 lost, in $((SECONDS - started)) s"
else
    echo "power-cut-lanes: FAILED: $failures of $lanes lanes (logs: ${runs[*]/%/.log})" >&2
    exit 1
fi
