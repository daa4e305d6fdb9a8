#!/usr/bin/env bash
# Cross-check of Tether's SMP codec against the independent `smp` package (PyPI, PINNED, in a venv): runs
# Tests/SMPTests/smp_crosscheck.py on the JSON file of Tether's encodings named by $1 and prints its JSON answer.
# Called by Tests/SMPTests/PythonCrossCheckTests.swift.
#
# The venv is cached in ${TETHER_SMP_VENV:-<repo>/.build-smp/venv-smp-<version>} (ignored by git). Needs python3 with
# venv/pip (Debian: python3-venv python3-pip, see scripts/setup/debian-packages.txt) and PyPI access on the first run.
set -euo pipefail

SMP_VERSION=4.2.0
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
VENV="${TETHER_SMP_VENV:-$ROOT/.build-smp/venv-smp-$SMP_VERSION}"

source "$ROOT/scripts/setup/pinned-venv.sh"
# smp's own dependencies pinned too, so that the package decodes the same way on every machine.
pinned_venv smp-crosscheck "$VENV" "import smp, importlib.metadata as m; assert m.version('smp') == '$SMP_VERSION'" \
    "smp==$SMP_VERSION" "cbor2==6.3.0" "pydantic==2.14.4" || exit 1
exec "$VENV/bin/python" "$ROOT/Tests/SMPTests/smp_crosscheck.py" "$1"
