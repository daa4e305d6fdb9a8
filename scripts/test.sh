#!/usr/bin/env bash
# The test command: installs what the tests need, builds, runs every test suite, checks the sync server against its
# OpenAPI contract (schemathesis), a short libFuzzer smoke run of the frame decoder, then a short end-to-end demo
# (TETHER_DEMO_SECONDS, default 20; 0 skips it), a check that the demo cleans up when interrupted, and the .deb
# installed into a throwaway root; the real-BlueZ VM scenario runs before the .deb test. Exits non-zero if anything
# fails. `.ci/run` calls this script.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup/install-deps.sh
# The sync suites run against a real PostgreSQL (initdb in a temporary directory, as the postgres user when run as
# root). Without one they would only skip with a warning; here a missing PostgreSQL fails the run.
export TETHER_REQUIRE_POSTGRES=1
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
# Conformance (issue 5): schemathesis (pinned, in a venv) checks the live server's answers against docs/sync-api.yaml.
echo "== conformance: tether-server against docs/sync-api.yaml (scripts/ci/conformance.sh)"
if ! TETHER_SERVER_BINARY="$(swift build --show-bin-path)/tether-server" scripts/ci/conformance.sh; then
    echo "conformance FAILED: tether-server's answers do not match docs/sync-api.yaml (see above)" >&2
    exit 1
fi
if [ -x Fuzz/run-smoke.sh ] && [ "${TETHER_FUZZ_SECONDS:-20}" != 0 ]; then
    echo "== libFuzzer smoke run (${TETHER_FUZZ_SECONDS:-20} s per target)"
    FUZZ_SECONDS="${TETHER_FUZZ_SECONDS:-20}" Fuzz/run-smoke.sh
fi
if [ "${TETHER_DEMO_SECONDS:-20}" != 0 ]; then
    echo "== short end-to-end demo (${TETHER_DEMO_SECONDS:-20} s)"
    scripts/demo.sh --no-install --duration "${TETHER_DEMO_SECONDS:-20}"
    echo "== the demo cleans up when interrupted (SIGINT, SIGTERM)"
    scripts/demo/interrupt-check.sh
fi
# Real BlueZ: the kernel's Bluetooth stack, btvirt and bluetoothd 5.66 in a qemu VM running the real gateway
# (tetherd + the tether CLI + tether-server sync; scenario tetherd), with the debug build above (TETHER_VM_LINK=shared:
# no second compile). About 3 min under software emulation. The stand-in central's scenario stays available
# (scripts/vm/real-bluez.sh tether). Exit 77 means this machine
# cannot run the VM: the harness prints a loud SKIP banner and the run goes on; any other failure fails the run.
# TETHER_REAL_BLUEZ=0 leaves it out (and says so).
if [ "${TETHER_REAL_BLUEZ:-1}" = 0 ]; then
    echo "== real-BlueZ VM scenario NOT RUN (TETHER_REAL_BLUEZ=0)"
else
    echo "== real-BlueZ VM scenario (scripts/vm/real-bluez.sh tetherd)"
    set +e
    TETHER_VM_LINK=shared scripts/vm/real-bluez.sh tetherd
    status=$?
    if [ "$status" != 0 ] && [ "$status" != 77 ]; then
        # One more attempt, never silently: software-emulated controllers under TCG sometimes lose a whole run to
        # timing (btvirt missing its reset window, an advertisement report lost before discovery starts). The
        # first attempt's logs stay where the harness printed them; a second failure fails the run.
        echo "###############################################################################" >&2
        echo "### real-BlueZ VM scenario: FIRST ATTEMPT FAILED (status $status); retrying once" >&2
        echo "###############################################################################" >&2
        TETHER_VM_LINK=shared scripts/vm/real-bluez.sh tetherd
        status=$?
        [ "$status" = 0 ] && echo "== real-BlueZ VM scenario passed on the SECOND attempt (the first failed; see above)"
    fi
    set -e
    if [ "$status" = 77 ]; then
        echo "== real-BlueZ VM scenario SKIPPED on this machine (see the banner above)"
    elif [ "$status" != 0 ]; then
        echo "real-BlueZ VM scenario failed with status $status" >&2
        exit "$status"
    fi
fi
# deploy/ (issue 6): build the .deb (release, --static-swift-stdlib) and install it into a throwaway root.
if [ "${TETHER_DEB_TEST:-1}" != 0 ]; then
    echo "== the .deb installs into a throwaway root (deploy/test-deb.sh)"
    deploy/test-deb.sh
else
    echo "== SKIPPED: the .deb test (TETHER_DEB_TEST=0)"
fi
