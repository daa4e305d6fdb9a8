# The end of a durability scenario, sourced by scripts/durability/kill-loop.sh and full-disk.sh after
# scripts/demo/system.sh: stop the devices' users, let the devices deliver and sync drain, and verify against the
# devices' own record of what was ACKed. Needs `bin`, `python`, `work`, `bus`, `addresses` and `load_pid` (the
# process group of `scripts/demo/devices.py load`); with health devices (scripts/demo/system.sh's `start_sim N health`
# sets `health_addresses`) the health samples are drained and verified too.

helper=scripts/demo/devices.py
check=scripts/durability/check.py

fail() {
    echo "$tool: FAILED: $*" >&2
    keep=true
    exit 1
}

status_field() { "$python" "$helper" field "$work/status.json" "$@"; }
# `tether status --json` into status.json, bounded by $status_timeout seconds (default 10); a call that ran out of
# time leaves an empty status.json and says so in tether-status.log (timeout(1) kills it silently).
read_status() {
    local code=0
    timeout "${status_timeout:-10}" "$bin/tether" status --json >"$work/status.json" 2>>"$work/tether-status.log" || code=$?
    if ((code == 124)); then echo "$(date -u +%T) tether status timed out after ${status_timeout:-10} s" >>"$work/tether-status.log"; fi
    return 0
}
device_list() { (IFS=,; echo "${addresses[*]}"); }

# Stops the users, then waits (at most 180 s) until every created event is stored, no device holds one, the outbox
# is empty and the server has every stored event, and with health devices until the gateway has read every glucose
# record in the meter and uploaded every health sample it received up to 5 s before the check (a heart rate strap
# goes on notifying, so "none left" may never be seen). Sets `created`, `drained`, `drain_seconds` and
# `health_cutoff_ns` (that moment, in the check that passed).
drain() {
    echo "== stopping the devices' users, letting the devices deliver and sync drain"
    kill -TERM -- "-$load_pid" 2>/dev/null || true
    local i
    for ((i = 0; i < 100; i++)); do
        [ "$("$python" "$helper" field "$work/load.json" running)" = False ] && break
        pause 0.1
    done
    created=$("$python" "$helper" field "$work/load.json" created)
    local start=$SECONDS stored pending in_flight failed rows distinct released held health_waiting=0 glucose_read=0
    drained=false
    while ((SECONDS - start < 180)); do
        health_cutoff_ns=$(($(date +%s%N) - 5000000000))
        read_status
        read -r stored pending in_flight failed < <(status_field events_stored outbox_pending outbox_in_flight outbox_failed)
        read -r rows distinct < <("$python" "$helper" server-count "$work/server.sqlite")
        read -r released held < <("$python" "$helper" device-stats "$bus" "$(device_list)")
        if ((${#health_addresses[@]} > 0)); then
            read -r _ health_waiting glucose_read _ < <("$python" "$helper" health-count "$work/gateway.sqlite" "$health_cutoff_ns")
        else
            glucose_read=$glucose_records
        fi
        if ((stored == created && held == 0 && pending + in_flight + failed == 0 && distinct == stored &&
            glucose_read == glucose_records && health_waiting == 0)); then
            drained=true
            break
        fi
        ((stored == created)) && timeout 10 "$bin/tether" sync >/dev/null 2>&1 || true
        pause 1
    done
    drain_seconds=$((SECONDS - start))
}

# Prints the figures (the scenario's own first: label, value, label, value, ...) and exits 0 only if no ACKed
# event is missing from the gateway or the server, there are no duplicates, every created event reached the
# server, no device holds one, there are no dead letters, and both databases pass `PRAGMA integrity_check`; with
# health devices also only if every health sample the gateway received by the drain's cutoff is on the server once,
# every stored glucose record was read, and no stored record was read twice or skipped (check.py health).
verify() {
    local stored dead released held result acked missing_gateway missing_server health_ok=true health_line=()
    local gateway_rows gateway_distinct server_rows server_distinct gateway_integrity server_integrity
    read_status
    read -r stored dead < <(status_field events_stored outbox_dead)
    read -r released held < <("$python" "$helper" device-stats "$bus" "$(device_list)")
    result=$("$python" "$check" acked "$bus" "$work/sim.json" "$work/gateway.sqlite" "$work/server.sqlite") || true
    read -r _ acked _ missing_gateway _ missing_server <<<"$result"
    read -r gateway_rows gateway_distinct server_rows server_distinct gateway_integrity server_integrity < <(
        "$python" "$check" totals "$work/gateway.sqlite" "$work/server.sqlite")
    local duplicates=$((gateway_rows - gateway_distinct + server_rows - server_distinct))
    local lost=$((missing_gateway + missing_server))
    local undelivered=$((created > server_distinct ? created - server_distinct : 0))
    if ((${#health_addresses[@]} > 0)); then
        local figures lanes
        figures=$("$python" "$helper" health-verify "$work/gateway.sqlite" "$work/server.sqlite" "$glucose_records" demo \
            "$health_cutoff_ns") || health_ok=false
        lanes=$("$python" "$check" health "$work/gateway.sqlite") || health_ok=false
        # label, value, label, value, ... from health-verify's figures
        mapfile -t health_line < <("$python" -c '
import json, sys
f = json.loads(sys.argv[1])
for label, value in (("health samples by the cutoff / on the server", "%s / %s" % (f["stored_by_gateway"], f["on_server"])),
                     ("health samples missing on the server, readings twice", "%s, %s" % (f["missing_on_server"], f["duplicate_readings_on_server"])),
                     ("glucose records read / in the meter", "%s / %s" % (f["glucose_records_read"], f["glucose_records_on_device"]))):
    print(label); print(value)' "$figures")
        health_line+=("stored health records (check.py health)" "$(head -1 <<<"$lanes")")
        $health_ok || echo "$tool: health: $figures; $lanes" >&2
    fi
    echo
    echo "== verification"
    printf '  %-52s %8s\n' "$@" \
        "seconds to drain" "$drain_seconds" \
        "events created by the devices (tether-sim)" "$created" \
        "events the devices saw ACKed (and forgot)" "$acked" \
        "events still held by the devices" "$held" \
        "events stored by the gateway (rows / distinct)" "$gateway_rows / $gateway_distinct" \
        "events on the server (rows / distinct)" "$server_rows / $server_distinct" \
        "ACKed events lost (missing on gateway + server)" "$lost" \
        "duplicates (gateway + server)" "$duplicates" \
        "created but never delivered" "$undelivered" \
        "dead letters" "$dead" \
        "integrity_check (gateway, server)" "$gateway_integrity, $server_integrity" "${health_line[@]}"
    if $drained && $health_ok && ((acked > 0 && lost == 0 && duplicates == 0 && undelivered == 0 && held == 0 && dead == 0 &&
        acked == created && server_distinct == created)) && [ "$gateway_integrity,$server_integrity" = ok,ok ]; then
        echo "$tool: PASSED: $acked ACKed events, 0 lost, 0 duplicates$( ((${#health_addresses[@]} > 0)) && echo "; health: every sample on the server once")"
        exit 0
    fi
    $drained || echo "$tool: sync did not drain within 180 s; tetherd's log: $work/tetherd.log" >&2
    fail "the counts above do not match"
}
