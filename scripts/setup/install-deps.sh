#!/usr/bin/env bash
# Installs the Debian packages Tether builds and tests with (scripts/setup/debian-packages.txt). Needs root or sudo.
# Swift 6.3 itself is not a Debian package: it must already be on PATH (see README).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
mapfile -t wanted < <(grep -v '^\s*#' "$here/debian-packages.txt" | tr -s ' \t' '\n' | grep -v '^$')
missing=()
for package in "${wanted[@]}"; do
    dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" || missing+=("$package")
done
if ((${#missing[@]} == 0)); then
    echo "install-deps: all ${#wanted[@]} Debian packages present"
    exit 0
fi
run() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi; }
echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
# tshark's wireshark-common asks whether non-superusers may capture; answer "no" so the install never prompts.
echo "wireshark-common wireshark-common/install-setuid boolean false" | run debconf-set-selections
run apt-get update -qq
run apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
echo "install-deps: done"
if ! command -v swift >/dev/null; then
    echo "install-deps: swift is not on PATH; install the Swift 6.3 toolchain for Linux first" >&2
    exit 1
fi
