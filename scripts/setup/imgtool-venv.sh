#!/usr/bin/env bash
# Makes (once) a virtualenv with a PINNED imgtool, MCUboot's image signing tool from PyPI, and prints the path of
# its `imgtool` on stdout. The MCUbootImage tests use it as an independent oracle (`imgtool verify`) and to sign
# fresh images, and Tests/MCUbootImageTests/make-images.sh uses it to make the committed fixtures.
#
#   scripts/setup/imgtool-venv.sh            # prints e.g. <repo>/.build-imgtool/venv-imgtool-2.5.0/bin/imgtool
#
# The venv lives in ${TETHER_IMGTOOL_VENV:-<repo>/.build-imgtool/venv-imgtool-<version>} (ignored by git). Needs
# python3 with venv/pip (Debian: python3-venv python3-pip, scripts/setup/debian-packages.txt) and PyPI the first time.
set -euo pipefail
IMGTOOL_VERSION=2.5.0
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
VENV="${TETHER_IMGTOOL_VENV:-$ROOT/.build-imgtool/venv-imgtool-$IMGTOOL_VERSION}"
source "$ROOT/scripts/setup/pinned-venv.sh"
pinned_venv imgtool-venv "$VENV" "import imgtool, importlib.metadata as m; assert m.version('imgtool') == '$IMGTOOL_VERSION'" \
    "imgtool==$IMGTOOL_VERSION" || exit 1
echo "$VENV/bin/imgtool"
