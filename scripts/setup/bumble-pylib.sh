#!/usr/bin/env bash
# Installs (once) PINNED Bumble (PyPI `bumble`, Google's Python Bluetooth stack) and its dependencies with
# `pip install --target` for Debian's /usr/bin/python3, and prints the directory on stdout. The real-BlueZ VM
# scenario `tetherd-health` runs its standard Glucose meter (deploy/real-bluez/glucose-meter.py) and Bumble's
# controllers app in the guest, whose only Python is the host's /usr/bin/python3 shared over 9p: not a venv (its
# python would be a symlink into the host's pyenv or the like), but a plain directory on PYTHONPATH, shared into the
# guest read-only (scripts/vm/real-bluez.sh; deploy/real-bluez/README.md).
#
#   scripts/setup/bumble-pylib.sh          # prints e.g. <repo>/.build-bumble/pylib-bumble-0.0.236-<hash>
#
# Every package is pinned (the whole resolved set), so that a new release of a dependency cannot change the VM run.
# The directory lives in ${TETHER_BUMBLE_PYLIB:-<repo>/.build-bumble/pylib-bumble-<version>-<requirements hash>} (ignored by git). Made
# under an exclusive lock on <dir>.lock (as scripts/setup/pinned-venv.sh: two installs into one directory break each
# other), into <dir>.tmp first and moved into place only when the check passes. Needs Debian's python3-pip
# (scripts/setup/debian-packages.txt) and PyPI the first time.
set -euo pipefail
BUMBLE_VERSION=0.0.236
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
PYTHON=/usr/bin/python3
requirements=(
    "bumble==$BUMBLE_VERSION"
    cffi==2.1.1 click==8.5.1 cryptography==50.0.2 importlib_resources==7.1.0 libusb1==3.4.0
    libusb_package==1.0.26.4 platformdirs==4.14.8 prompt_toolkit==3.0.53 pycparser==3.12 pyee==13.0.1
    pyserial==3.5 pyserial_asyncio==0.6 pyusb==1.3.1 typing_extensions==4.16.0 wcwidth==0.9.4 websockets==17.4
    # The CBOR codec of the meter's MCUmgr SMP server (deploy/real-bluez/mcumgr_device.py): a third party's, not Tether's.
    cbor2==6.2.1
)
# Named by the whole requirement set: changing it makes a new folder, never deletes one a running VM may be reading.
DIR="${TETHER_BUMBLE_PYLIB:-$ROOT/.build-bumble/pylib-bumble-$BUMBLE_VERSION-$(printf '%s\n' "${requirements[@]}" | sha256sum | cut -c1-12)}"
check="import importlib.metadata as m, bumble.apps.controllers, bumble.device, bumble.transport.vhci, cbor2; assert m.version('bumble') == '$BUMBLE_VERSION' and m.version('cbor2') == '6.2.1'"
[ -x "$PYTHON" ] || { echo "bumble-pylib: $PYTHON is missing (Debian's python3)" >&2; exit 1; }
mkdir -p "$(dirname "$DIR")"
exec {lock}>"$DIR.lock"
flock "$lock"
if ! PYTHONPATH="$DIR" PYTHONNOUSERSITE=1 "$PYTHON" -c "$check" 2>/dev/null; then
    rm -rf "$DIR" "$DIR.tmp"
    "$PYTHON" -m pip --version >/dev/null 2>&1 || { echo "bumble-pylib: $PYTHON has no pip (Debian: python3-pip)" >&2; exit 1; }
    echo "bumble-pylib: installing bumble $BUMBLE_VERSION into $DIR" >&2
    PIP_ROOT_USER_ACTION=ignore "$PYTHON" -m pip install --quiet --disable-pip-version-check --no-cache-dir \
        --no-deps --target "$DIR.tmp" "${requirements[@]}" >&2 \
        || { rm -rf "$DIR.tmp"; echo "bumble-pylib: could not install ${requirements[*]} (PyPI reachable?)" >&2; exit 1; }
    PYTHONPATH="$DIR.tmp" PYTHONNOUSERSITE=1 "$PYTHON" -c "$check" \
        || { rm -rf "$DIR.tmp"; echo "bumble-pylib: the installed bumble does not import" >&2; exit 1; }
    mv "$DIR.tmp" "$DIR"
fi
exec {lock}>&-
echo "$DIR"
