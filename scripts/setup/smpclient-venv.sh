#!/usr/bin/env bash
# Makes (once) a virtualenv with PINNED smpclient and smpmgr (PyPI; Intercreate's SMP client library and its CLI),
# and prints the path of its `python` on stdout. The SMPDeviceModel tests drive the simulated MCUmgr device over UDP
# with them (Tests/SMPDeviceModelTests/smpclient_udp.py), and the BlueZSimulator tests over BLE through smpclient's
# bleak transport on tether-sim's private bus (Tests/BlueZSimulatorTests/smpclient_ble.py), so that a third-party
# client keeps the simulator honest. bleak and dbus-fast are pinned to the versions bleak-fidelity.sh uses.
#
#   scripts/setup/smpclient-venv.sh          # prints e.g. <repo>/.build-smpclient/venv-smpclient-7.3.0/bin/python
#
# The venv lives in ${TETHER_SMPCLIENT_VENV:-<repo>/.build-smpclient/venv-smpclient-<version>} (ignored by git).
# Needs python3 with venv/pip (Debian: python3-venv python3-pip, scripts/setup/debian-packages.txt) and PyPI the
# first time.
set -euo pipefail
SMPCLIENT_VERSION=7.3.0
SMPMGR_VERSION=0.19.1
BLEAK_VERSION=3.1.0
DBUS_FAST_VERSION=5.2.0
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
VENV="${TETHER_SMPCLIENT_VENV:-$ROOT/.build-smpclient/venv-smpclient-$SMPCLIENT_VERSION}"
check="import smpclient, smpmgr, importlib.metadata as m; assert m.version('smpclient') == '$SMPCLIENT_VERSION'"
check+="; assert m.version('smpmgr') == '$SMPMGR_VERSION'"
check+="; import bleak; assert m.version('bleak') == '$BLEAK_VERSION' and m.version('dbus-fast') == '$DBUS_FAST_VERSION'"
source "$ROOT/scripts/setup/pinned-venv.sh"
pinned_venv smpclient-venv "$VENV" "$check" "smpclient==$SMPCLIENT_VERSION" "smpmgr==$SMPMGR_VERSION" \
    "bleak==$BLEAK_VERSION" "dbus-fast==$DBUS_FAST_VERSION" || exit 1
echo "$VENV/bin/python"
