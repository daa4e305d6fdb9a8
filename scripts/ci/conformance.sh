#!/usr/bin/env bash
# Conformance: tether-server's answers validated against docs/specs/sync-api.yaml by schemathesis (pinned), against a
# live server on loopback with the SQLite backend. Starts the server, seeds one device and a health sample the
# operator deleted (a healthSample change in the feed), runs every check, stops
# the server; exits with schemathesis's status.
#
#   scripts/ci/conformance.sh                 # the default budget: 100 examples per operation
#   MAX_EXAMPLES=20 scripts/ci/conformance.sh # quicker
#
# Needs python3 with venv (Debian: python3-venv) and network access to PyPI the first time; the virtualenv is
# cached in ${TETHER_CONFORMANCE_VENV:-$HOME/.cache/tether-conformance-venv}.
set -euo pipefail
cd "$(dirname "$0")/../.."

SCHEMATHESIS_VERSION=4.32.5
MAX_EXAMPLES=${MAX_EXAMPLES:-100}
VENV=${TETHER_CONFORMANCE_VENV:-$HOME/.cache/tether-conformance-venv}
SCRATCH=${SCRATCH_PATH:-.build}

source scripts/setup/pinned-venv.sh
pinned_venv conformance "$VENV" "import importlib.metadata as m, sys; sys.exit(m.version('schemathesis') != '$SCHEMATHESIS_VERSION')" \
    "schemathesis==$SCHEMATHESIS_VERSION" || exit 1

SERVER=${TETHER_SERVER_BINARY:-}
if [[ -z "$SERVER" ]]; then
    swift build --scratch-path "$SCRATCH" --product tether-server >/dev/null
    SERVER="$(swift build --scratch-path "$SCRATCH" --show-bin-path)/tether-server"
fi

WORK=$(mktemp -d /tmp/tether-conformance-XXXXXX)
SERVER_PID=""
cleanup() {
    if [[ -n "$SERVER_PID" ]]; then kill "$SERVER_PID" 2>/dev/null || true; wait "$SERVER_PID" 2>/dev/null || true; fi
    rm -rf "$WORK"
}
trap cleanup EXIT

"$SERVER" token create --db "$WORK/server.sqlite" --tenant conformance --gateway gw-1 --output "$WORK/token" >/dev/null
TOKEN=$(cat "$WORK/token")
"$SERVER" serve --db "$WORK/server.sqlite" --listen 127.0.0.1:0 --log-level error >"$WORK/server.log" 2>&1 &
SERVER_PID=$!
for _ in $(seq 1 200); do
    PORT=$(sed -n 's/^listening on 127\.0\.0\.1:\([0-9]*\)$/\1/p' "$WORK/server.log")
    [[ -n "$PORT" ]] && break
    kill -0 "$SERVER_PID" 2>/dev/null || { cat "$WORK/server.log"; exit 1; }
    sleep 0.05
done
[[ -n "${PORT:-}" ]] || { echo "tether-server did not start"; cat "$WORK/server.log"; exit 1; }
BASE="http://127.0.0.1:$PORT"

# A device, so settings operations have something to find besides 404s.
curl -fsS -X POST "$BASE/v1/commands" -H "Authorization: Bearer $TOKEN" -H 'Content-Type: application/json' \
    -d '{"commands":[{"id":"01890a5d-ac96-774b-bcce-b302099a8057","entity_type":"device","entity_id":"TH-1","operation":"update","payload":{"serial":"TH-1","hardwareRevision":3,"firmwareVersion":"1.4.2","protocolVersion":1,"capabilities":3,"pairingState":"paired"}}]}' >/dev/null
# The spec's example health sample, then the operator's deletion of it: the change feed then holds a healthSample
# change (no serial, a backend tombstone) for schemathesis to check GET /v1/changes against.
"$VENV/bin/python" - docs/specs/sync-api.yaml >"$WORK/samples.json" <<'PY'
import json, sys, yaml
spec = yaml.safe_load(open(sys.argv[1]))
print(json.dumps(spec["paths"]["/v1/health/samples"]["post"]["requestBody"]["content"]["application/json"]["example"]))
PY
curl -fsS -X POST "$BASE/v1/health/samples" -H "Authorization: Bearer $TOKEN" -H 'Content-Type: application/json' -d @"$WORK/samples.json" >/dev/null
SAMPLE_UID=$("$VENV/bin/python" -c 'import json, sys; print(json.load(open(sys.argv[1]))["samples"][0]["uid"])' "$WORK/samples.json")
"$SERVER" health delete --db "$WORK/server.sqlite" --tenant conformance --sample "$SAMPLE_UID" --note "conformance: withdrawn" >/dev/null
curl -fsS "$BASE/v1/changes" -H "Authorization: Bearer $TOKEN" | grep -q '"kind":"healthSample"' ||
    { echo "conformance: the seeded healthSample change is not in the feed"; exit 1; }

START=$(date +%s)
status=0
REPO=$(pwd)
# From the scratch directory, so schemathesis's own files (.schemathesis/, .hypothesis/) stay out of the repository.
(cd "$WORK" && "$VENV/bin/st" --config-file "$REPO/scripts/ci/schemathesis.toml" run "$REPO/docs/specs/sync-api.yaml" --url "$BASE" -H "Authorization: Bearer $TOKEN" \
    --checks all \
    --max-examples "$MAX_EXAMPLES" --workers 1 --request-timeout 10 --seed 1 \
    --suppress-health-check too_slow,filter_too_much) \
    || status=$?
echo "conformance: schemathesis $SCHEMATHESIS_VERSION finished in $(( $(date +%s) - START )) s with status $status"
exit $status
