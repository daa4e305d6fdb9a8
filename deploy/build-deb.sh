#!/usr/bin/env bash
# Builds tether_<version>_<arch>.deb with dpkg-deb: tetherd and the tether CLI linked with --static-swift-stdlib
# (so the Pi needs no Swift runtime), the systemd unit, the D-Bus policy, sysusers/tmpfiles snippets, the annotated
# example configuration as a conffile, and the docs.
#
#   deploy/build-deb.sh [--configuration release|debug] [--scratch-path DIR] [--output DIR] [--version V]
#
# Prints the path of the .deb on its last line. Run on the architecture you ship (arm64 on a Pi 4/5, or any
# Debian 12 arm64 builder): Swift does not cross-compile here.
set -euo pipefail
cd "$(dirname "$0")/.."

configuration=release
scratch=.build
output=.build/deb
version=""
while [ $# -gt 0 ]; do
    case "$1" in
        --configuration) configuration=$2; shift 2 ;;
        --scratch-path) scratch=$2; shift 2 ;;
        --output) output=$2; shift 2 ;;
        --version) version=$2; shift 2 ;;
        *) echo "build-deb.sh: unknown option '$1' (see the header of this script)" >&2; exit 2 ;;
    esac
done
if [ -z "$version" ]; then
    # Debian versions must start with a digit; a build from git is 0.<commit count>+g<sha>.
    version="0.$(git rev-list --count HEAD 2>/dev/null || echo 0)+g$(git rev-parse --short HEAD 2>/dev/null || echo unknown)"
fi
arch=$(dpkg --print-architecture)

for product in tetherd tether; do
    echo "== swift build -c $configuration --static-swift-stdlib --product $product" >&2
    swift build -c "$configuration" --static-swift-stdlib --scratch-path "$scratch" --product "$product" >&2
done
bin=$(swift build -c "$configuration" --scratch-path "$scratch" --show-bin-path)

staging=$(mktemp -d)
trap 'rm -rf "$staging"' EXIT
root="$staging/tether_${version}_${arch}"
install -d -m 0755 "$root/DEBIAN" "$root/usr/bin" "$root/lib/systemd/system" "$root/usr/share/dbus-1/system.d" \
    "$root/usr/lib/sysusers.d" "$root/usr/lib/tmpfiles.d" "$root/etc/tether" "$root/usr/share/doc/tether"

install -m 0755 "$bin/tetherd" "$bin/tether" "$root/usr/bin/"
strip --strip-unneeded "$root/usr/bin/tetherd" "$root/usr/bin/tether"
install -m 0644 deploy/systemd/tetherd.service "$root/lib/systemd/system/tetherd.service"
install -m 0644 deploy/dbus/io.tether.Gateway.conf "$root/usr/share/dbus-1/system.d/io.tether.Gateway.conf"
install -m 0644 deploy/systemd/tether.sysusers.conf "$root/usr/lib/sysusers.d/tether.conf"
install -m 0644 deploy/systemd/tether.tmpfiles.conf "$root/usr/lib/tmpfiles.d/tether.conf"
install -m 0644 deploy/tether.toml "$root/etc/tether/tether.toml"
install -m 0644 deploy/bluez/main.conf "$root/usr/share/doc/tether/bluez-main.conf"
install -m 0644 deploy/raspberry-pi.md "$root/usr/share/doc/tether/raspberry-pi.md"
install -m 0644 LICENSE "$root/usr/share/doc/tether/copyright"
# The man page and completions are generated from the command tree and committed (scripts/dev/generate-cli-docs.sh).
install -d -m 0755 "$root/usr/share/man/man1"
gzip -9n < docs/man/tether.1 > "$root/usr/share/man/man1/tether.1.gz"
chmod 0644 "$root/usr/share/man/man1/tether.1.gz"
install -D -m 0644 deploy/completions/tether.bash "$root/usr/share/bash-completion/completions/tether"
install -D -m 0644 deploy/completions/_tether "$root/usr/share/zsh/vendor-completions/_tether"
install -D -m 0644 deploy/completions/tether.fish "$root/usr/share/fish/vendor_completions.d/tether.fish"

# Runtime dependencies: the Debian package of every shared library the binaries still load (libc, libdbus,
# libsqlite3, ...), found through dpkg -S, plus the system bus and BlueZ themselves.
libs=$(ldd "$root/usr/bin/tetherd" "$root/usr/bin/tether" | awk '/=> \//{print $3}' | sort -u)
depends=$( (for lib in $libs; do
    real=$(readlink -f "$lib")
    dpkg -S "$lib" 2>/dev/null || dpkg -S "$real" 2>/dev/null || { echo "build-deb.sh: no Debian package owns $lib" >&2; exit 1; }
done) | cut -d: -f1 | sort -u | tr '\n' ',' | sed 's/,$//; s/,/, /g')
depends="$depends, dbus, bluez, systemd"

installed_size=$(du -sk --exclude=DEBIAN "$root" | cut -f1)
cat > "$root/DEBIAN/control" <<CONTROL
Package: tether
Version: $version
Architecture: $arch
Maintainer: Tether maintainers <maintainers@tether.invalid>
Installed-Size: $installed_size
Depends: $depends
Section: net
Priority: optional
Homepage: https://tether.invalid
Description: BLE edge gateway for devices and health telemetry
 tetherd connects paired Bluetooth Low Energy devices through BlueZ, stores
 their events local-first in SQLite, acknowledges them only after a durable
 commit, and syncs them to a backend. The tether CLI pairs devices, shows
 status and resolves dead letters and conflicts.
CONTROL
echo "/etc/tether/tether.toml" > "$root/DEBIAN/conffiles"
install -m 0755 deploy/debian/postinst deploy/debian/prerm deploy/debian/postrm "$root/DEBIAN/"
chmod 0644 "$root/DEBIAN/control" "$root/DEBIAN/conffiles"

mkdir -p "$output"
deb="$output/tether_${version}_${arch}.deb"
dpkg-deb --root-owner-group --build "$root" "$deb" >&2
echo "$deb"
