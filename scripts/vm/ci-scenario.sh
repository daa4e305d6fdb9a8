#!/usr/bin/env bash
# The real-BlueZ VM scenario as CI runs it (scripts/test.sh): scripts/vm/real-bluez.sh SCENARIO, with one retry
# and only for a known emulation flake.
#
#   scripts/vm/ci-scenario.sh [scenario]     # default: tetherd
#
# Software-emulated controllers under TCG sometimes lose a whole run to the emulator (btvirt missing its reset
# window, an advertisement lost before discovery, a kernel GPF in hci_chan_del, an LE connection that never
# completes). When the first attempt fails, scripts/vm/flake-signature.py reads its logs; only a matched signature
# earns a second attempt, and only a PASS of that attempt passes. Any other failure, a second failure or a second
# attempt that cannot run (77) fails. With TETHER_REQUIRE_REAL_BLUEZ=1 a 77 ("this machine cannot run the VM")
# fails too; without it, 77 is passed on for the caller to report. Every attempt keeps its own run folder.
# Environment: as real-bluez.sh (TETHER_VM_LINK etc.); TETHER_VM_RUN_BASE (run folders, default .build/real-bluez).
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
cd "$here/../.."
scenario=${1:-tetherd}
base=${TETHER_VM_RUN_BASE:-$(pwd)/.build/real-bluez}
stamp=$(date -u +%Y%m%dT%H%M%SZ)
required=${TETHER_REQUIRE_REAL_BLUEZ:-0}

attempt() {
    TETHER_VM_RUN="$base/$stamp-$scenario-attempt$1" "$here/real-bluez.sh" "$scenario"
}

attempt 1
status=$?
if [ "$status" = 77 ]; then
    if [ "$required" = 1 ]; then
        echo "real-BlueZ VM scenario: exit 77 (cannot run here) but TETHER_REQUIRE_REAL_BLUEZ=1: FAIL" >&2
        exit 1
    fi
    exit 77
fi
[ "$status" = 0 ] && exit 0
first="$base/$stamp-$scenario-attempt1"
if ! signature=$(python3 "$here/flake-signature.py" "$first"); then
    echo "$signature" >&2
    echo "real-BlueZ VM scenario FAILED (status $status) with no known emulation-flake signature: no retry (logs: $first)" >&2
    exit 1
fi
echo "###############################################################################" >&2
echo "### real-BlueZ VM scenario: FIRST ATTEMPT FAILED (status $status) on a known emulation flake:" >&2
echo "### $signature" >&2
echo "### retrying once; the first attempt's logs stay in $first" >&2
echo "###############################################################################" >&2
attempt 2
status=$?
if [ "$status" = 0 ]; then
    echo "== real-BlueZ VM scenario passed on the SECOND attempt (the first failed on: $signature)"
    exit 0
fi
echo "real-BlueZ VM scenario FAILED: the first attempt failed ($signature), the second exited $status" >&2
exit 1
