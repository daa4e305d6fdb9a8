#!/usr/bin/env bash
# Notifications/s and CPU per notification: Tether over StartNotify and AcquireNotify vs a PINNED bleak, the same
# tether-sim stream (--unthrottled) on the same private bus, in one run. Release build.
#
#   scripts/bench/gateway-bench.sh [--devices N] [--start-notify-per-device K] [--acquire-per-device K]
#
# The bleak venv is shared with scripts/ci/bleak-fidelity.sh: ${TETHER_BLEAK_VENV:-<repo>/.build-bleak/venv-bleak-3.1.0}.
set -euo pipefail

BLEAK_VERSION=3.1.0
DBUS_FAST_VERSION=5.2.0
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
VENV="${TETHER_BLEAK_VENV:-$ROOT/.build-bleak/venv-bleak-$BLEAK_VERSION}"
SCRATCH="${SCRATCH:-$ROOT/.build}"

source "$ROOT/scripts/setup/pinned-venv.sh"
pinned_venv gateway-bench "$VENV" "import bleak, importlib.metadata as m; assert m.version('bleak') == '$BLEAK_VERSION'" \
    "bleak==$BLEAK_VERSION" "dbus-fast==$DBUS_FAST_VERSION" || exit 1

cd "$ROOT"
swift build -c release --scratch-path "$SCRATCH" --product tether-sim >&2
# The benchmark itself lives in the Benchmarks/ package (its own scratch folder); tether-sim comes from this one.
swift build -c release --package-path Benchmarks --scratch-path "$SCRATCH-benchmarks" --product tether-gateway-bench >&2
BIN="$(swift build -c release --scratch-path "$SCRATCH" --show-bin-path)"
BENCH_BIN="$(swift build -c release --package-path Benchmarks --scratch-path "$SCRATCH-benchmarks" --show-bin-path)"
exec "$BENCH_BIN/tether-gateway-bench" --simulator "$BIN/tether-sim" \
    --bleak-python "$VENV/bin/python" --bleak-script "$ROOT/scripts/bench/bleak_receive.py" "$@"
