#!/usr/bin/env bash
# The test command: installs what the tests need, builds, runs every test suite, then a short libFuzzer smoke run
# of the frame decoder. Exits non-zero if anything fails. `.ci/run` calls this script.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
echo "== swift build --build-tests"
swift build --build-tests
echo "== swift test (full log: .build/test-output.txt)"
set +e
swift test 2>&1 | tee .build/test-output.txt | grep -vE '^(◇|↳|✔ Test case|Test Suite|Test Case)'
status=${PIPESTATUS[0]}
set -e
if [ "$status" -ne 0 ]; then
    echo "swift test failed with status $status" >&2
    exit "$status"
fi
if [ -x Fuzz/run-smoke.sh ] && [ "${TETHER_FUZZ_SECONDS:-20}" != 0 ]; then
    echo "== libFuzzer smoke run (${TETHER_FUZZ_SECONDS:-20} s per target)"
    FUZZ_SECONDS="${TETHER_FUZZ_SECONDS:-20}" Fuzz/run-smoke.sh
fi
# Real BlueZ: the kernel's Bluetooth stack, btvirt and bluetoothd 5.66 in a qemu VM, with the debug build above
# (TETHER_VM_LINK=shared: no second compile). About 2.5-3 min under software emulation. Exit 77 means this machine
# cannot run the VM: the harness prints a loud SKIP banner and the run goes on; any other failure fails the run.
# TETHER_REAL_BLUEZ=0 leaves it out (and says so).
if [ "${TETHER_REAL_BLUEZ:-1}" = 0 ]; then
    echo "== real-BlueZ VM scenario NOT RUN (TETHER_REAL_BLUEZ=0)"
else
    echo "== real-BlueZ VM scenario (scripts/real-bluez.sh tether)"
    set +e
    TETHER_VM_LINK=shared scripts/real-bluez.sh tether
    status=$?
    set -e
    if [ "$status" = 77 ]; then
        echo "== real-BlueZ VM scenario SKIPPED on this machine (see the banner above)"
    elif [ "$status" != 0 ]; then
        echo "real-BlueZ VM scenario failed with status $status" >&2
        exit "$status"
    fi
fi
