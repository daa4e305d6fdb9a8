#!/usr/bin/env bash
# Makes (once) a virtualenv with PINNED fhir.resources (PyPI; the FHIR resource models of nazrulworld/fhir.resources,
# pydantic-validated) and prints the path of its `python` on stdout. The FHIR export tests (Tests/TetherServerTests)
# parse tether-server's exported Bundle with its R4B models (fhir.resources.R4B: Bundle, Observation, Device), an
# oracle independent of Tether's own encoder (Tests/TetherServerTests/fhir_validate.py).
#
#   scripts/setup/fhir-venv.sh          # prints e.g. <repo>/.build-fhir/venv-fhir-8.3.0/bin/python
#
# The venv lives in ${TETHER_FHIR_VENV:-<repo>/.build-fhir/venv-fhir-<version>} (ignored by git). Needs python3 with
# venv/pip (Debian: python3-venv python3-pip, scripts/setup/debian-packages.txt) and PyPI the first time.
set -euo pipefail
FHIR_RESOURCES_VERSION=8.3.0
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
VENV="${TETHER_FHIR_VENV:-$ROOT/.build-fhir/venv-fhir-$FHIR_RESOURCES_VERSION}"
check="import fhir.resources.R4B.bundle, importlib.metadata as m; assert m.version('fhir.resources') == '$FHIR_RESOURCES_VERSION'"
source "$ROOT/scripts/setup/pinned-venv.sh"
pinned_venv fhir-venv "$VENV" "$check" "fhir.resources==$FHIR_RESOURCES_VERSION" || exit 1
echo "$VENV/bin/python"
