#!/usr/bin/env python3
"""The durability checks (scripts/durability/kill-loop.sh, power-cut.sh): what the simulated devices saw ACKed
against the gateway's and the server's databases, and the gateway's feed cursors.

  check.py acked BUS SIM_JSON GATEWAY_DB [SERVER_DB]   every event a device forgot after an ACK must be in the
                                                       gateway's database (and on the server, when given); prints
                                                       `acked N missing_gateway M missing_server K` and exits 1
                                                       when anything is missing
  check.py released-file LOG GATEWAY_DB [SERVER_DB]    the same, with the devices' record read from tether-sim's
                                                       released-event log (`releasedLog`: one `address serial boot
                                                       sequence` a line), which outlives the simulator
  check.py same GATEWAY_DB SERVER_DB                   the gateway's events and the server's are the same set;
                                                       prints `gateway N server M only_gateway A only_server B`
  check.py after-cut LOG GATEWAY_DB SERVER_DB CURSORS  the power-cut rig's check after a cut, in one process (each
                                                       start costs seconds under emulation): `released-file` against
                                                       the gateway, integrity of both databases, `health`, and every
                                                       feed and health cursor against its last sample in the CURSORS
                                                       file (`name position` lines), to which this sample is appended
  check.py cursors GATEWAY_DB                          the gateway's sync cursors and health ingest cursors, one
                                                       `name position` a line
  check.py health GATEWAY_DB                           the health lanes' rules: no stored record read twice, and no
                                                       cursor ahead of the records stored with it (every sequence
                                                       from the epoch's first to the cursor is there); prints
                                                       `health_records N problems M` and the problems, exits 1 on any
  check.py totals GATEWAY_DB SERVER_DB                 `gateway_rows gateway_distinct server_rows server_distinct
                                                       gateway_integrity server_integrity`

Events are matched by (serial, boot counter, sequence). A device sends the sequence in 16 bits in protocol version
1 and the gateway stores it unwrapped (link protocol §8.9), so sequences are compared modulo 2^16; a run stays far
below 65536 events per boot, which `acked` checks.

Only the standard library and python3-dbus (Debian) are used. The databases are opened read-only.
"""
import json
import os
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


def released_file(path):
    """Like `released`, from tether-sim's released-event log. A line cut short by the power cut is not counted."""
    keys = set()
    count = 0
    with open(path) as handle:
        for line in handle:
            fields = line.split()
            if not line.endswith("\n") or len(fields) != 4:
                continue
            _, serial, boot, sequence = fields
            keys.add((serial, int(boot), int(sequence) % WRAP))
            count += 1
    return keys, count


def acked(arguments):
    bus_address, sim_json, gateway = arguments[:3]
    keys, count = released(bus_address, sim_json)
    return compare(keys, count, gateway, arguments[3] if len(arguments) > 3 else None)


def acked_file(arguments):
    keys, count = released_file(arguments[0])
    return compare(keys, count, arguments[1], arguments[2] if len(arguments) > 2 else None)


def compare(keys, count, gateway, server):
    gateway_rows = gateway_keys(gateway)
    if any(int(sequence) >= WRAP for _, _, sequence in gateway_rows):
        sys.stderr.write("check: a sequence reached 2^16; matching modulo 2^16 is no longer exact\n")
        return 1
    missing_gateway = sorted(keys - wrapped(gateway_rows))
    missing_server = sorted(keys - wrapped(server_keys(server))) if server else []
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
    for name, position in health_cursors(connect(arguments[0])):
        print(name, position)
    return 0


def health_cursors(connection):
    """The health ingest cursors as `(name, position)` pairs that must never decrease: each stream's latest epoch, and
    the position within every epoch (HealthStore: a cursor moves only forward, in its stream's latest epoch)."""
    try:
        rows = connection.execute(
            "SELECT peripheralId, characteristic, ifnull(userIndex, -1), epoch, position FROM healthIngestCursor"
            " ORDER BY peripheralId, characteristic, userIndex, epoch").fetchall()
    except sqlite3.OperationalError:  # before the health tables exist
        return []
    pairs, latest = [], {}
    for peripheral, characteristic, user, epoch, position in rows:
        stream = "health/%s/%s/%s" % (peripheral, characteristic[4:8], user)
        latest[stream] = max(latest.get(stream, 0), epoch)
        if position is not None:
            pairs.append(("%s/epoch-%s" % (stream, epoch), position))
    pairs += [("%s/latest-epoch" % stream, epoch) for stream, epoch in latest.items()]
    return pairs


def health_problems(connection):
    """What breaks the cold lane's promise (the samples and the cursor commit together, and a record is stored once):
    a record (device, characteristic, user, epoch, sequence, metric, occurrence) stored twice, or a sequence-number
    cursor at P with a sequence between the epoch's first stored record and P missing. Returns (records, problems)."""
    try:
        records = connection.execute("SELECT count(DISTINCT peripheralId || '/' || characteristic || '/' || epoch || '/' ||"
                                     " recordSequence) FROM healthSample WHERE recordSequence IS NOT NULL").fetchone()[0]
        twice = connection.execute(
            "SELECT peripheralId, characteristic, userIndex, epoch, recordSequence, metricCode, occurrence, count(*)"
            " FROM healthSample WHERE recordSequence IS NOT NULL AND lane <> 'change'"
            " GROUP BY peripheralId, characteristic, userIndex, epoch, recordSequence, metricCode, occurrence"
            " HAVING count(*) > 1 LIMIT 5").fetchall()
        cursors = connection.execute(
            "SELECT peripheralId, characteristic, userIndex, epoch, position FROM healthIngestCursor"
            " WHERE positionKind = 'sequence' AND position IS NOT NULL").fetchall()
    except sqlite3.OperationalError:
        return 0, []
    problems = ["stored %d times: device %s characteristic %s user %s epoch %s record %s metric %s occurrence %s"
                % (row[7], *row[:7]) for row in twice]
    for peripheral, characteristic, user, epoch, position in cursors:
        sequences = {row[0] for row in connection.execute(
            "SELECT DISTINCT recordSequence FROM healthSample WHERE peripheralId = ? AND characteristic = ?"
            " AND userIndex IS ? AND epoch = ? AND lane <> 'change' AND recordSequence <= ?",
            (peripheral, characteristic, user, epoch, position))}
        first = min(sequences) if sequences else position
        missing = [n for n in range(first, position + 1) if n not in sequences]
        if missing:
            problems.append("cursor of device %s characteristic %s user %s epoch %s at %s, but %d records up to it are"
                            " not stored (%s%s)" % (peripheral, characteristic, user, epoch, position, len(missing),
                                                    missing[:5], " ..." if len(missing) > 5 else ""))
    return records, problems


def health(arguments):
    records, problems = health_problems(connect(arguments[0]))
    print("health_records %d problems %d" % (records, len(problems)))
    for problem in problems:
        print("  " + problem)
    return 1 if problems else 0


def integrity(path):
    result = connect(path).execute("PRAGMA integrity_check").fetchall()
    return "ok" if result == [("ok",)] else "bad:" + ";".join(row[0] for row in result[:3])


def totals(arguments):
    gateway, server = arguments[:2]
    gateway_rows = gateway_keys(gateway)
    server_rows = server_keys(server)
    print(len(gateway_rows), len(set(gateway_rows)), len(server_rows), len(set(server_rows)), integrity(gateway), integrity(server))
    return 0


def same(arguments):
    gateway = wrapped(gateway_keys(arguments[0]))
    server = wrapped(server_keys(arguments[1]))
    only_gateway, only_server = gateway - server, server - gateway
    print("gateway %d server %d only_gateway %d only_server %d" % (len(gateway), len(server), len(only_gateway), len(only_server)))
    for what, keys in (("gateway", only_gateway), ("server", only_server)):
        if keys:
            sys.stderr.write("check: only on the %s: %s%s\n" % (what, sorted(keys)[:5], " ..." if len(keys) > 5 else ""))
    return 1 if only_gateway or only_server else 0


def after_cut(arguments):
    log, gateway, server, samples = arguments[:4]
    failed = acked_file([log, gateway]) != 0
    results = (integrity(gateway), integrity(server) if os.path.exists(server) else "ok")
    print("integrity %s %s" % results)
    failed = failed or results != ("ok", "ok")
    last = {}
    if os.path.exists(samples):
        with open(samples) as handle:
            for line in handle:
                name, _, position = line.strip().partition(" ")
                if position.isdigit():
                    last[name] = int(position)
    connection = connect(gateway)
    try:
        rows = connection.execute("SELECT name, value FROM syncCursor ORDER BY name").fetchall()
    except sqlite3.OperationalError:
        rows = []
    records, problems = health_problems(connection)
    print("health_records %d problems %d" % (records, len(problems)))
    for problem in problems:
        print("  " + problem)
    failed = failed or bool(problems)
    rows += [(name, str(position)) for name, position in health_cursors(connection)]
    with open(samples, "a") as handle:
        for name, value in rows:
            position = value.rsplit(".", 1)[-1]
            if not position.isdigit():
                continue
            previous = last.get(name)
            moved_back = previous is not None and int(position) < previous
            print("cursor %s %s (last sample %s)%s" % (name, position, previous, " MOVED BACK" if moved_back else ""))
            failed = failed or moved_back
            handle.write("%s %s\n" % (name, position))
    return 1 if failed else 0


def main(arguments):
    commands = {"acked": (acked, 3), "released-file": (acked_file, 2), "same": (same, 2), "after-cut": (after_cut, 4),
                "cursors": (cursors, 1), "health": (health, 1),
                "totals": (totals, 2)}
    if not arguments or arguments[0] not in commands or len(arguments) - 1 < commands[arguments[0]][1]:
        sys.stderr.write(__doc__)
        return 2
    function, _ = commands[arguments[0]]
    return function(arguments[1:])


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
