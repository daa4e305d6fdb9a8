#!/usr/bin/env bash
# Crash soak for the local-first store: a gateway child ingests seeded device streams into a real database
# file and is SIGKILLed at random moments, again and again; after every kill and at the end the driver checks
# that every event a device saw ACKed is stored exactly once, and that the devices deliver everything else.
#
#   scripts/bench/crash-soak.sh [KILLS] [ROUNDS] [FIRST_SEED]
#
# KILLS kills per round (default 500), ROUNDS rounds with consecutive seeds (default 4), each on a fresh
# database. Exits non-zero on the first round with a violation and keeps its database and gateway log.
# The test suite runs one round of 50 kills (Tests/TetherStoreTests/CrashTests.swift).
set -euo pipefail

kills="${1:-500}"
rounds="${2:-4}"
first_seed="${3:-$(date +%s)}"
scratch="${SCRATCH_PATH:-/work/.build-store}"
root="$(cd "$(dirname "$0")/../.." && pwd)"

swift build -c release --package-path "$root" --scratch-path "$scratch" --product tether-store-crashtest
binary="$scratch/release/tether-store-crashtest"

work="$(mktemp -d -t tether-crash-soak.XXXXXX)"
echo "databases and logs in $work"
for ((round = 0; round < rounds; round++)); do
    seed=$((first_seed + round))
    database="$work/seed-$seed.sqlite"
    echo "== round $((round + 1))/$rounds: seed $seed, $kills kills"
    if ! "$binary" soak --db "$database" --kills "$kills" --seed "$seed" --devices 3; then
        echo "FAILED with seed $seed; database $database, gateway log $database.gateway.log" >&2
        exit 1
    fi
    rm -f "$database" "$database-wal" "$database-shm" "$database.gateway.log"
done
rmdir "$work"
echo "all $rounds rounds passed"
