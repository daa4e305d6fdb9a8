#!/usr/bin/env bash
# Checks that the demo cleans up when interrupted: starts scripts/demo.sh, waits for its first progress line, sends
# it SIGINT (Ctrl-C: it must stop the devices, drain, verify and exit 0) and then, in a second run, SIGTERM (it
# must exit 143). After each, no process that mentions the demo's temporary directory may be left, and the
# directory must be gone. Run by scripts/test.sh after the short demo.
set -euo pipefail
cd "$(dirname "$0")/../.."
log=$(mktemp)
trap 'rm -f "$log"' EXIT

run() {
    local signal=$1 expected=$2
    : >"$log"
    # Without job control bash starts background commands with SIGINT ignored, and a signal ignored on entry cannot
    # be trapped, so Ctrl-C would not reach the demo's handler. `set -m` is not enough where there is no terminal
    # (a CI runner, setsid): job control is then off. `env --default-signal` restores SIGINT before the demo starts.
    set -m
    env --default-signal=INT,QUIT scripts/demo.sh --no-install --duration 600 >"$log" 2>&1 &
    set +m
    local pid=$! waited
    for ((waited = 0; waited < 600; waited++)); do
        grep -q 'devices .* connected' "$log" && break
        if ! kill -0 "$pid" 2>/dev/null; then
            cat "$log" >&2
            echo "interrupt-check: the demo ended before its first progress line" >&2
            return 1
        fi
        sleep 1
    done
    local directory
    directory=$(grep -o '/tmp/tether-demo\.[A-Za-z0-9]*' "$log" | head -1)
    kill "-$signal" "$pid"
    local status=0
    wait "$pid" || status=$?
    if [ "$status" != "$expected" ]; then
        cat "$log" >&2
        echo "interrupt-check: the demo exited $status after SIG$signal, expected $expected" >&2
        return 1
    fi
    if [ -n "$directory" ] && pgrep -f "$directory" >/dev/null; then
        pgrep -fa "$directory" >&2
        echo "interrupt-check: processes left over after SIG$signal" >&2
        return 1
    fi
    if [ -n "$directory" ] && [ -e "$directory" ]; then
        echo "interrupt-check: $directory left behind after SIG$signal" >&2
        return 1
    fi
    tail -2 "$log"
    echo "interrupt-check: SIG$signal: exit $status, nothing left over, $directory removed"
}
run INT 0
run TERM 143
