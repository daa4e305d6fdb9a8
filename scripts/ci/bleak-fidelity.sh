#!/usr/bin/env bash
# Fidelity test of tether-sim with a third-party BlueZ client: a PINNED bleak in a venv, a private bus started
# by tether-sim --start-private-bus, and Tests/BlueZSimulatorTests/bleak_client.py with DBUS_SYSTEM_BUS_ADDRESS.
#
#   scripts/ci/bleak-fidelity.sh                 # builds tether-sim with --scratch-path ${SCRATCH:-.build}
#   TETHER_SIM=/path/to/tether-sim scripts/ci/bleak-fidelity.sh
#   scripts/ci/bleak-fidelity.sh --health       # the standard health devices of
#                                               # Tests/BlueZSimulatorTests/health-devices.json, bleak_health_client.py
#
# The venv is cached in ${TETHER_BLEAK_VENV:-<repo>/.build-bleak/venv-bleak-<version>} (ignored by git).
# Needs python3 with venv/pip (Debian: python3-venv python3-pip, see scripts/setup/debian-packages.txt) and PyPI access
# on the first run. Prints timings; exits non-zero on the first failed operation.
set -euo pipefail

SIM_ARGS=(--devices 3 --seed 1)
CLIENT=bleak_client.py
if [[ "${1:-}" == "--health" ]]; then
    SIM_ARGS=(--config "$(cd "$(dirname "$0")/../.." && pwd)/Tests/BlueZSimulatorTests/health-devices.json")
    CLIENT=bleak_health_client.py
fi

BLEAK_VERSION=3.1.0
DBUS_FAST_VERSION=5.2.0
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
VENV="${TETHER_BLEAK_VENV:-$ROOT/.build-bleak/venv-bleak-$BLEAK_VERSION}"
started=$(date +%s.%N)
elapsed() { python3 -c "import sys; print(f'{float(sys.argv[2]) - float(sys.argv[1]):.1f}s')" "$1" "$(date +%s.%N)"; }

source "$ROOT/scripts/setup/pinned-venv.sh"
# A venv that cannot be made fails the test (it is required in CI, TETHER_REQUIRE_BLEAK=1), with the reason.
pinned_venv bleak-fidelity "$VENV" "import bleak, importlib.metadata as m; assert m.version('bleak') == '$BLEAK_VERSION'" \
    "bleak==$BLEAK_VERSION" "dbus-fast==$DBUS_FAST_VERSION" || exit 1
echo "timing: venv ready (bleak $BLEAK_VERSION) after $(elapsed "$started")"

SIM="${TETHER_SIM:-}"
if [[ -z "$SIM" ]]; then
    SCRATCH="${SCRATCH:-$ROOT/.build}"
    (cd "$ROOT" && swift build --scratch-path "$SCRATCH" --product tether-sim >&2)
    SIM="$(cd "$ROOT" && swift build --scratch-path "$SCRATCH" --show-bin-path)/tether-sim"
fi

WORK="$(mktemp -d /tmp/tether-bleak-XXXXXX)"
SIM_PID=""
cleanup() {
    if [[ -n "$SIM_PID" ]]; then
        # SIGTERM lets tether-sim stop its dbus-daemon. A parent that blocked SIGTERM (Foundation.Process) may
        # have handed that mask down, so fall back to SIGKILL for tether-sim and its own children, by pid.
        children="$(ps -o pid= --ppid "$SIM_PID" 2>/dev/null || true)"
        kill "$SIM_PID" 2>/dev/null || true
        for _ in $(seq 1 40); do kill -0 "$SIM_PID" 2>/dev/null || break; sleep 0.05; done
        if kill -0 "$SIM_PID" 2>/dev/null; then
            kill -KILL "$SIM_PID" 2>/dev/null || true
            for child in $children; do kill -KILL "$child" 2>/dev/null || true; done
        fi
        wait "$SIM_PID" 2>/dev/null || true
    fi
    rm -rf "$WORK"
}
trap cleanup EXIT

sim_started=$(date +%s.%N)
"$SIM" --start-private-bus "${SIM_ARGS[@]}" >"$WORK/sim.out" 2>"$WORK/sim.err" &
SIM_PID=$!
ADDRESS=""
for _ in $(seq 1 200); do
    ADDRESS="$(sed -n 's/^DBUS_SYSTEM_BUS_ADDRESS=//p' "$WORK/sim.out")"
    [[ -n "$ADDRESS" ]] && break
    kill -0 "$SIM_PID" 2>/dev/null || { cat "$WORK/sim.err" >&2; echo "tether-sim exited" >&2; exit 1; }
    sleep 0.05
done
[[ -n "$ADDRESS" ]] || { echo "tether-sim printed no address" >&2; exit 1; }
echo "timing: tether-sim serving after $(elapsed "$sim_started")"

client_started=$(date +%s.%N)
status=0
DBUS_SYSTEM_BUS_ADDRESS="$ADDRESS" PYTHONWARNINGS=ignore timeout 120 \
    "$VENV/bin/python" "$ROOT/Tests/BlueZSimulatorTests/$CLIENT" || status=$?
echo "timing: bleak client $(elapsed "$client_started"), total $(elapsed "$started")"
if [[ $status -ne 0 ]]; then
    echo "--- tether-sim stderr ---" >&2
    cat "$WORK/sim.err" >&2
fi
exit $status
