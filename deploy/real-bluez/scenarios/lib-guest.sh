# What every tetherd scenario does in the guest before its own steps (sourced by lib-tetherd.sh and
# tetherd-health.sh): the `tether` CLI with a time-out, timestamped messages, the processes the scenario starts
# (stopped newest first on exit: SIGTERM, then SIGKILL after 10 s), a bounded wait, and the control API's bus policy
# (deploy/dbus/io.tether.Gateway.conf) installed into the guest's writable /etc with a reload: without it the system
# bus refuses tetherd the name io.tether.Gateway.
tether() { timeout 30 /work/bin/tether "$@"; }
say() { echo "[$(cut -d' ' -f1 /proc/uptime)] $*"; }
pids=()
stop_all() {
    for ((i = ${#pids[@]} - 1; i >= 0; i--)); do kill -TERM "${pids[i]}" 2>/dev/null || true; done
    for ((i = ${#pids[@]} - 1; i >= 0; i--)); do
        for _ in $(seq 100); do kill -0 "${pids[i]}" 2>/dev/null || break; sleep 0.1; done
        kill -KILL "${pids[i]}" 2>/dev/null || true
    done
}
trap stop_all EXIT
# Waits up to $2 seconds for "$3..." to succeed.
wait_for() {
    local what=$1 seconds=$2 deadline
    shift 2
    deadline=$((SECONDS + seconds))
    until "$@" >/dev/null 2>&1; do
        ((SECONDS < deadline)) || { say "FAILED: $what within $seconds s"; return 1; }
        sleep 0.3
    done
    say "$what"
}
install_bus_policy() {
    cp /work/guest/io.tether.Gateway.conf /etc/dbus-1/system.d/
    dbus-send --system --print-reply --dest=org.freedesktop.DBus / org.freedesktop.DBus.ReloadConfig > /dev/null
    say "bus policy io.tether.Gateway installed and dbus reloaded"
}
