#!/usr/bin/env bash
# One `swift test` step of scripts/test.sh, with nothing hidden:
#
#   scripts/ci/swift-test.sh NAME [swift test arguments...]
#
# Runs `swift test ARGS...` with its console log in .build/NAME-output.txt and Swift Testing's event stream in
# .build/NAME-events.jsonl, then lists every skipped or cancelled test (scripts/ci/test-skips.py). Under CI
# (CI=true) a skip or cancellation that scripts/ci/allowed-skips.txt does not name fails the step. Exit status:
# swift test's when it failed, 1 for an unallowed skip, else 0.
set -euo pipefail
cd "$(dirname "$0")/../.."
name=$1
shift
mkdir -p .build
events="$PWD/.build/$name-events.jsonl"
rm -f "$events"
set +e
swift test --event-stream-output-path "$events" --event-stream-version 0 "$@" 2>&1 \
    | tee ".build/$name-output.txt" | grep -vE '^(◇|↳|✔ Test case|Test Suite|Test Case)'
status=${PIPESTATUS[0]}
set -e
if [ "$status" -ne 0 ]; then
    # CI keeps only the tail of a long log: repeat every failure, with the lines that say why, at the end.
    echo "== failures (from .build/$name-output.txt)" >&2
    grep -E -A3 '^✘ (Test|Suite).*(recorded an issue|failed)' ".build/$name-output.txt" \
        | grep -vE '^(◇|✔|--$)' | cut -c1-600 | head -150 >&2 || true
    echo "swift test $* failed with status $status" >&2
    exit "$status"
fi
strict=()
[ "${CI:-}" = true ] && strict=(--strict)
scripts/ci/test-skips.py --events "$events" --log ".build/$name-output.txt" --allow scripts/ci/allowed-skips.txt \
    "${strict[@]+"${strict[@]}"}"
