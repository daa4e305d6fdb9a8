#!/usr/bin/env bash
# Builds the .deb and installs it into a throwaway root with dpkg itself (maintainer scripts run with DPKG_ROOT set),
# then checks files, owners, modes, the daemon's user and groups, that `tetherd --check-config` accepts the shipped
# example, that the unit file passes `systemd-analyze verify`, and that removal keeps the conffile and the state.
#
#   deploy/test-deb.sh [--scratch-path DIR]     (default: .build; debug configuration to reuse the test build)
set -euo pipefail
cd "$(dirname "$0")/.."
scratch=.build
[ "${1:-}" = --scratch-path ] && scratch=$2

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
deb=$(deploy/build-deb.sh --configuration debug --scratch-path "$scratch" --output "$work/out" | tail -n 1)
echo "== built $deb ($(du -h "$deb" | cut -f1))"

root="$work/root"
mkdir -p "$root/var/lib/dpkg/info" "$root/var/lib/dpkg/updates" "$root/var/lib/dpkg/triggers" "$root/etc"
touch "$root/var/lib/dpkg/status"
# The throwaway root holds only this package: its dependencies (libc, dbus, bluez, systemd) are not in it.
dpkg --root="$root" --force-script-chrootless --force-depends --log=/dev/null -i "$deb" >/dev/null

failures=0
fail() { echo "FAIL: $*" >&2; failures=$((failures + 1)); }
expect() { # path mode owner group
    local path=$1 mode=$2 owner=$3 group=$4 actual uid gid user_name group_name
    if [ ! -e "$root$path" ]; then fail "$path is missing"; return; fi
    # Owners are checked by name in the throwaway root's own passwd/group files.
    uid=$(stat -c %u "$root$path"); gid=$(stat -c %g "$root$path")
    user_name=$(awk -F: -v id="$uid" '$3 == id {print $1; exit}' "$root/etc/passwd" 2>/dev/null)
    group_name=$(awk -F: -v id="$gid" '$3 == id {print $1; exit}' "$root/etc/group" 2>/dev/null)
    [ "$uid" = 0 ] && user_name=root
    [ "$gid" = 0 ] && group_name=root
    actual="$(stat -c %a "$root$path") $user_name $group_name"
    [ "$actual" = "$mode $owner $group" ] || fail "$path is '$actual', expected '$mode $owner $group'"
}

expect /usr/bin/tetherd 755 root root
expect /usr/bin/tether 755 root root
expect /lib/systemd/system/tetherd.service 644 root root
expect /usr/share/dbus-1/system.d/io.tether.Gateway.conf 644 root root
expect /usr/lib/sysusers.d/tether.conf 644 root root
expect /usr/lib/tmpfiles.d/tether.conf 644 root root
expect /etc/tether 750 root tether
expect /etc/tether/tether.toml 644 root root
expect /usr/share/doc/tether/bluez-main.conf 644 root root
expect /usr/share/doc/tether/raspberry-pi.md 644 root root

# The daemon's user: no login shell, member of bluetooth (Debian's BlueZ policy), own group tether.
entry=$(grep '^tether:' "$root/etc/passwd" || true)
[ -n "$entry" ] || fail "postinst did not create the tether user"
case "$entry" in *:/usr/sbin/nologin) ;; *) fail "tether user has a login shell: $entry" ;; esac
grep -q '^bluetooth:.*[:,]tether\(,\|$\)' "$root/etc/group" || fail "tether is not in the bluetooth group: $(grep '^bluetooth:' "$root/etc/group")"

# No setuid/setgid file and nothing world-writable in the package.
bad=$(find "$root/usr" "$root/lib" "$root/etc/tether" \( -perm -4000 -o -perm -2000 -o -perm -0002 \) -print)
[ -z "$bad" ] || fail "setuid, setgid or world-writable files: $bad"

# The shipped example must be a configuration tetherd accepts.
if ! "$root/usr/bin/tetherd" --check-config --config "$root/etc/tether/tether.toml"; then
    fail "tetherd --check-config rejects the shipped /etc/tether/tether.toml"
fi
# The binaries must not need the Swift toolchain's runtime (they run on a Pi with none).
if ldd "$root/usr/bin/tetherd" | grep -q 'libswiftCore\|libFoundation'; then
    fail "tetherd links the Swift runtime dynamically: $(ldd "$root/usr/bin/tetherd" | grep -E 'swift|Foundation')"
fi

if command -v systemd-analyze >/dev/null; then
    # verify resolves ExecStart= inside the root; warnings about the missing dbus/bluetooth units are expected
    # in a root that holds one package, errors in the unit itself are not.
    out=$(systemd-analyze verify --root="$root" /lib/systemd/system/tetherd.service 2>&1 || true)
    echo "$out" | grep -vE "bluetooth.service|dbus.service|network-online.target|time-sync.target|multi-user.target|^$" \
        | grep -iE "error|invalid|unknown|failed|ignoring" && fail "systemd-analyze verify: $out"
fi

# Removal keeps the conffile (and, by design, /var/lib/tether) and takes the binaries.
dpkg --root="$root" --force-script-chrootless --force-depends --log=/dev/null -r tether >/dev/null
[ ! -e "$root/usr/bin/tetherd" ] || fail "dpkg -r left /usr/bin/tetherd"
[ -e "$root/etc/tether/tether.toml" ] || fail "dpkg -r removed the conffile /etc/tether/tether.toml"

if [ "$failures" -ne 0 ]; then
    echo "deb test: $failures check(s) failed" >&2
    exit 1
fi
echo "deb test: installed into a throwaway root, all checks passed"
