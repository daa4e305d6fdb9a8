#!/usr/bin/env bash
# Runs the LinkCodec benchmark suite in release mode and prints its table (see README.md for how to read it).
# Extra arguments go to the benchmark tool, e.g.  ./run.sh --filter 'decode.*'  or  ./run.sh --allocation-stacks
# The first run builds ordo-one/benchmark and its dependencies (a few minutes).
set -euo pipefail
cd "$(dirname "$0")"
# --disable-sandbox: the plugin runs the benchmark executables, which the SwiftPM sandbox forbids on Linux.
exec swift package --disable-sandbox benchmark --no-progress "$@"
