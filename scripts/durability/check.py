#!/usr/bin/env python3
"""The kill loop's checks (scripts/durability/kill-loop.sh): what the simulated devices saw ACKed against the
gateway's and the server's databases, and the gateway's feed cursors.

  check.py acked BUS SIM_JSON GATEWAY_DB [SERVER_DB]   every event a device forgot after an ACK must be in the
                                                       gateway's database (and on the server, when given); prints
                                                       `acked N missing_gateway M missing_server K` and exits 1
                                                       when anything is missing
  check.py cursors GATEWAY_DB                          the gateway's sync cursors, one `name position` a line
  check.py totals GATEWAY_DB SERVER_DB                 `gateway_rows gateway_distinct server_rows server_distinct
                                                       gateway_integrity server_integrity`

Events are matched by (serial, boot counter, sequence). A device sends the sequence in 16 bits in protocol version
1 and the gateway stores it unwrapped (link protocol §8.9), so sequences are compared modulo 2^16; a run stays far
below 65536 events per boot, which `acked` checks.

Only the standard library and python3-dbus (Debian) are used. The databases are opened read-only.
"""
import json
import sqlite3
import sys

SIMULATOR = ("org.bluez", "/io/tether/simulator", "io.tether.Simulator1")
WRAP = 1 << 16


def connect(path):
    connection = sqlite3.connect("file:%s?mode=ro" % path, uri=True, timeout=30)
    connection.execute("PRAGMA busy_timeout = 30000")
    return connection


def released(bus_address, sim_json):
    """{(serial, boot, sequence mod 2^16)} of every event each device released (forgot after the gateway's ACK)."""
    import dbus

    with open(sim_json) as handle:
        devices = json.load(handle)["devices"]
    bus = dbus.bus.BusConnection(bus_address)
    control = dbus.Interface(bus.get_object(SIMULATOR[0], SIMULATOR[1]), SIMULATOR[2])
    keys = set()
    count = 0
    for device in devices:
        path = "/org/bluez/hci0/dev_" + device["address"].replace(":", "_")
        for boot, sequence in control.GetReleasedEvents(dbus.ObjectPath(path)):
            keys.add((device["serial"], int(boot), int(sequence) % WRAP))
            count += 1
    return keys, count


def gateway_keys(path):
    rows = connect(path).execute(
        "SELECT device.serial, e.bootCounter, e.sequence FROM consumptionEvent e JOIN device ON device.id = e.deviceId"
    ).fetchall()
    return rows


def server_keys(path):
    try:
        return connect(path).execute("SELECT serial, boot_counter, sequence FROM consumption_event").fetchall()
    except sqlite3.OperationalError:  # no schema yet
        return []


def wrapped(rows):
    return {(serial, int(boot), int(sequence) % WRAP) for serial, boot, sequence in rows}


def acked(arguments):
    bus_address, sim_json, gateway = arguments[:3]
    keys, count = released(bus_address, sim_json)
    gateway_rows = gateway_keys(gateway)
    if any(int(sequence) >= WRAP for _, _, sequence in gateway_rows):
        sys.stderr.write("check: a sequence reached 2^16; matching modulo 2^16 is no longer exact\n")
        return 1
    missing_gateway = sorted(keys - wrapped(gateway_rows))
    missing_server = sorted(keys - wrapped(server_keys(arguments[3]))) if len(arguments) > 3 else []
    print("acked %d missing_gateway %d missing_server %d" % (count, len(missing_gateway), len(missing_server)))
    if count != len(keys):
        sys.stderr.write("check: a device released %d events with only %d distinct keys\n" % (count, len(keys)))
        return 1
    for what, missing in (("gateway", missing_gateway), ("server", missing_server)):
        if missing:
            sys.stderr.write("check: ACKed but not in the %s's database: %s%s\n"
                             % (what, missing[:5], " ..." if len(missing) > 5 else ""))
    return 1 if missing_gateway or missing_server else 0


def cursors(arguments):
    try:
        rows = connect(arguments[0]).execute("SELECT name, value FROM syncCursor ORDER BY name").fetchall()
    except sqlite3.OperationalError:
        rows = []
    for name, value in rows:
        # Cursors are opaque to clients (docs/specs/sync-api.yaml): `c1.<sequence>` today; only its order matters
        # here, and the check that it never moves back.
        position = value.rsplit(".", 1)[-1]
        print(name, position if position.isdigit() else value)
    return 0


def integrity(path):
    result = connect(path).execute("PRAGMA integrity_check").fetchall()
    return "ok" if result == [("ok",)] else "bad:" + ";".join(row[0] for row in result[:3])


def totals(arguments):
    gateway, server = arguments[:2]
    gateway_rows = gateway_keys(gateway)
    server_rows = server_keys(server)
    print(len(gateway_rows), len(set(gateway_rows)), len(server_rows), len(set(server_rows)), integrity(gateway), integrity(server))
    return 0


def main(arguments):
    commands = {"acked": (acked, 3), "cursors": (cursors, 1), "totals": (totals, 2)}
    if not arguments or arguments[0] not in commands or len(arguments) - 1 < commands[arguments[0]][1]:
        sys.stderr.write(__doc__)
        return 2
    function, _ = commands[arguments[0]]
    return function(arguments[1:])


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
