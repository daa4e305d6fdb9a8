#!/usr/bin/env python3
"""The demo's hands on the simulated devices (tether-sim's io.tether.Simulator1) and its counters.

  devices.py faults ADDRESS on|off            switch the demo's faults on or off for every device
  devices.py live-health ADDRESS on|off       the wearers put their health sensors on or take them off: a heart
                                              rate strap's live measurements go on or stop (the meter's and the
                                              cuff's stored records are not touched)
  devices.py load ADDRESS STATE_FILE SERIALS  record hits on every device until SIGTERM/SIGINT; the running
                                              totals (hits the firmware recorded per device) go to STATE_FILE
  devices.py device-stats ADDRESS ADDRESSES   events the devices released (ACKed) and still hold, summed
  devices.py server-count DB                  consumption events on tether-server (SQLite): rows and distinct ids
  devices.py health-count GATEWAY_DB [RECEIVED_BY]
                                              health samples on the gateway: all, and those not yet uploaded (with
                                              RECEIVED_BY, ns since 1970: of those received by then); then the
                                              glucose records read (distinct sequence numbers, whenever received)
                                              and the projection keys not fresh
  devices.py health-verify GATEWAY_DB SERVER_DB GLUCOSE_RECORDS [TENANT [UPLOADED_BY]]
                                              every health sample the gateway stored is on the server once, and the
                                              glucose meter's stored records were all read; prints the figures as
                                              JSON and exits 1 if anything is off. TENANT: the server's tenant
                                              (default demo). UPLOADED_BY (ns since 1970): only samples the gateway
                                              received by then must be uploaded (a heart rate strap goes on notifying
                                              after the drain), and there may be none. Every tombstone the gateway
                                              holds (deletions, corrections) must be on the server, its sample
                                              deleted there, and a correction's replacement must name the original;
                                              every sample the backend deleted that the gateway holds must be deleted
                                              there under the server's tombstone
  devices.py health-edit TETHER_BINARY       a technician's change lane through the CLI: deletes one stored glucose
                                              record and corrects one blood pressure reading by one unit in the last
                                              place (tether health delete|correct); prints what it did as JSON
  devices.py backend-delete GATEWAY_DB SERVER_DB TETHER TETHER_SERVER
                                              the backend's change lane: the operator deletes one uploaded glucose
                                              reading on the server (tether-server health delete), a sync pulls it,
                                              and the gateway must hold the server's tombstone (same uid, reason
                                              backend) within a minute; prints what it did as JSON
  devices.py projections-verify GATEWAY_DB SERVER_DB
                                              the gateway's fresh projections agree with daily rollups computed here
                                              from the server's samples, and every server day has one; JSON, exit 1
  devices.py field JSON_FILE KEY...           print fields of a JSON object (missing: 0)

Only the standard library and python3-dbus (Debian) are used.
"""
import datetime
import decimal
import json
import os
import random
import signal
import sqlite3
import sys
import time

SIMULATOR = ("org.bluez", "/io/tether/simulator", "io.tether.Simulator1")


def simulator(address):
    import dbus  # python3-dbus; imported here so the counting commands work without it

    bus = dbus.bus.BusConnection(address)
    return dbus, dbus.Interface(bus.get_object(SIMULATOR[0], SIMULATOR[1]), SIMULATOR[2])


def device_path(address):
    return "/org/bluez/hci0/dev_" + address.replace(":", "_")


def faults(address, on):
    dbus, control = simulator(address)
    # Faults the demo switches on (BlueZSimulator/README.md): links drop at random (mean 12 s per device), 2 % of
    # notifications are lost and 1 % duplicated. Reboots are done by `load`, one device at a time.
    control.InjectFault("random-disconnects", {"mean_interval_ms": dbus.UInt32(12000 if on else 0)})
    control.InjectFault("drop-notifications", {"probability": dbus.Double(0.02 if on else 0.0)})
    control.InjectFault("duplicate-notifications", {"probability": dbus.Double(0.01 if on else 0.0)})


def live_health(address, on):
    dbus, control = simulator(address)
    control.InjectFault("health-live-measurements", {"enabled": dbus.Boolean(on)})


def write_state(path, state):
    temporary = path + ".tmp"
    with open(temporary, "w") as handle:
        json.dump(state, handle, sort_keys=True)
    os.replace(temporary, path)


def load(address, state_path, addresses, seed=7, hits_per_second=3.0, reboot_every=15.0):
    """Each device's user takes about `hits_per_second` hits per second; every `reboot_every` seconds one device
    power-cycles. A hit counts as created when the firmware says it recorded it (RecordHits' answer)."""
    dbus, control = simulator(address)
    stop = []
    for number in (signal.SIGTERM, signal.SIGINT):
        signal.signal(number, lambda *_: stop.append(True))
    rng = random.Random(seed)
    created = {a: 0 for a in addresses}
    refused = {a: 0 for a in addresses}
    reboots = 0
    # Link drops seen by sampling each device's `connected` every tick (a short outage can slip between samples).
    drops = 0
    was_connected = {a: False for a in addresses}
    started = time.monotonic()
    next_reboot = started + reboot_every
    tick = 0.25
    while not stop:
        for a in addresses:
            wanted = sum(1 for _ in range(8) if rng.random() < hits_per_second * tick / 8)
            if wanted:
                recorded = int(control.RecordHits(dbus.ObjectPath(device_path(a)), dbus.UInt32(wanted)))
                created[a] += recorded
                refused[a] += wanted - recorded
        for a in addresses:
            connected = bool(control.GetStatistics(dbus.ObjectPath(device_path(a))).get("connected", False))
            drops += was_connected[a] and not connected
            was_connected[a] = connected
        if time.monotonic() >= next_reboot:
            control.Reboot(dbus.ObjectPath(device_path(rng.choice(addresses))))
            reboots += 1
            next_reboot += reboot_every
        write_state(state_path, {"created": sum(created.values()), "per_device": created, "refused": sum(refused.values()),
                                 "reboots": reboots, "drops": drops, "running": True})
        time.sleep(tick)
    write_state(state_path, {"created": sum(created.values()), "per_device": created, "refused": sum(refused.values()),
                             "reboots": reboots, "drops": drops, "running": False})


def device_stats(address, addresses):
    dbus, control = simulator(address)
    released = unacknowledged = 0
    for a in addresses:
        statistics = control.GetStatistics(dbus.ObjectPath(device_path(a)))
        released += int(statistics.get("events_released", 0))
        unacknowledged += int(statistics.get("events_unacknowledged", 0))
    print(released, unacknowledged)


def server_count(database):
    if not os.path.exists(database):
        print("0 0")
        return
    connection = sqlite3.connect("file:%s?mode=ro" % database, uri=True, timeout=10)
    try:
        rows, distinct = connection.execute(
            "SELECT count(*), count(DISTINCT serial || '/' || boot_counter || '/' || sequence) FROM consumption_event"
        ).fetchone()
    except sqlite3.OperationalError:  # the server has not created its schema yet
        rows, distinct = 0, 0
    print(rows, distinct)


GLUCOSE_MEASUREMENT = "00002a18-0000-1000-8000-00805f9b34fb"


def read_only(database):
    return sqlite3.connect("file:%s?mode=ro" % database, uri=True, timeout=10)


def health_count(database, received_by=None):
    try:
        connection = read_only(database)
        total, waiting = connection.execute(
            "SELECT count(*), count(*) FILTER (WHERE uploadState <> 'uploaded') FROM healthSample"
            + (" WHERE receivedAt <= %d" % received_by if received_by is not None else "")).fetchone()
        # Tombstones wait for their upload too (the change lane: deletions and corrections).
        waiting += connection.execute(
            "SELECT count(*) FROM healthDeletion WHERE uploadState <> 'uploaded'"
            + (" AND requestedAt <= %d" % received_by if received_by is not None else "")).fetchone()[0]
        glucose = connection.execute(
            "SELECT count(DISTINCT recordSequence) FROM healthSample WHERE characteristic = ? AND lane IN ('cold', 'hot')",
            (GLUCOSE_MEASUREMENT,)).fetchone()[0]
    except sqlite3.Error:  # not created yet
        total, waiting, glucose = 0, 0, 0
    try:
        due = connection.execute("SELECT count(*) FROM healthProjection WHERE freshness <> 'fresh'").fetchone()[0]
    except (sqlite3.Error, NameError):  # not created yet
        due = 0
    print(total, waiting, glucose, due)


def projections_verify(gateway_database, server_database):
    """Rollups from the server's health_sample rows, independent of Tether's code (docs/specs/sync-api.yaml, "Health
    projections"): undeleted samples per device, user, metric and UTC day; numbers only; mean half-even, 4 digits."""
    decimal.getcontext().prec = 200
    days = {}
    for device, user, metric, status, value, at, uid in read_only(server_database).execute(
            "SELECT device_uid, user_index, metric_code, value_status, canonical_value, effective_at, uid "
            "FROM health_sample WHERE tenant = 'demo' AND deleted_at IS NULL"):
        day = (datetime.datetime(1970, 1, 1) + datetime.timedelta(microseconds=at // 1000)).date().isoformat()
        days.setdefault((device, user, metric, day), []).append((status, value, at, uid))
    mismatched, compared = [], 0
    rows = read_only(gateway_database).execute(
        "SELECT deviceUid, userIndex, metricCode, day, freshness, sampleCount, specialCount, minValue, maxValue, meanValue, "
        "lastValue FROM healthProjection").fetchall()
    shown = {row[:4]: row[4:] for row in rows}
    for key, (freshness, count, special, low, high, mean, last) in shown.items():
        samples = days.get(key, [])
        numbers = [(decimal.Decimal(v), at, uid) for status, v, at, uid in samples if status == "number"]
        expected = (len(numbers), len(samples) - len(numbers))
        if numbers:
            values = [n[0] for n in numbers]
            expected += (min(values), max(values),
                         (sum(values) / len(values)).quantize(decimal.Decimal("0.0001"), decimal.ROUND_HALF_EVEN),
                         max(numbers, key=lambda n: (n[1], n[2]))[0])
        else:
            expected += (None, None, None, None)
        got = (count, special) + tuple(None if v is None else decimal.Decimal(v) for v in (low, high, mean, last))
        compared += 1
        if freshness != "fresh" or got != expected:
            mismatched.append({"key": list(key), "freshness": freshness, "gateway": [str(v) for v in got],
                               "server": [str(v) for v in expected]})
    figures = {"projections": len(shown), "compared": compared, "mismatched": len(mismatched),
               "server_days_without_projection": sum(1 for key in days if key not in shown), "first_mismatch": mismatched[:1]}
    print(json.dumps(figures))
    return 0 if shown and not mismatched and figures["server_days_without_projection"] == 0 else 1


def health_verify(gateway_database, server_database, glucose_records, tenant="demo", uploaded_by=None):
    gateway = read_only(gateway_database)
    server = read_only(server_database)
    cutoff = "WHERE receivedAt <= %d" % uploaded_by if uploaded_by is not None else ""
    stored = dict(gateway.execute("SELECT uid, dedupKey FROM healthSample " + cutoff).fetchall())
    later = dict(gateway.execute("SELECT uid, dedupKey FROM healthSample").fetchall())
    states = dict(gateway.execute(
        "SELECT uploadState, count(*) FROM healthSample %s GROUP BY uploadState" % cutoff).fetchall())
    # Every gateway sample by its uid; the reading (dedup key) must also be there once.
    on_server = server.execute("SELECT uid, dedup_key FROM health_sample WHERE tenant = ?", (tenant,)).fetchall()
    server_uids = {}
    for uid, key in on_server:
        server_uids.setdefault(uid, []).append(key)
    server_keys = [key for _, key in on_server]
    glucose_sequences = {row[0] for row in gateway.execute(
        "SELECT recordSequence FROM healthSample WHERE characteristic = ? AND lane IN ('cold', 'hot')",
        (GLUCOSE_MEASUREMENT,))}
    figures = {
        "stored_by_gateway": len(stored),
        "uploaded": states.get("uploaded", 0),
        "rejected": states.get("rejected", 0),
        "on_server": len(on_server),
        "missing_on_server": sum(1 for uid in stored if uid not in server_uids),
        "not_from_gateway": sum(1 for uid in server_uids if uid not in later),
        "key_mismatch": sum(1 for uid, key in stored.items() if uid in server_uids and server_uids[uid] != [key]),
        "duplicate_readings_on_server": len(server_keys) - len(set(server_keys)),
        "glucose_records_read": len(glucose_sequences),
        "glucose_records_on_device": glucose_records,
    }
    figures.update(change_lane_figures(gateway, server, tenant))
    print(json.dumps(figures))
    # With a cutoff, the glucose records (read whenever) are what shows health arrived at all.
    good = ((figures["stored_by_gateway"] > 0 or uploaded_by is not None) and figures["uploaded"] == len(stored) and figures["missing_on_server"] == 0
            and figures["not_from_gateway"] == 0 and figures["key_mismatch"] == 0
            and figures["duplicate_readings_on_server"] == 0 and len(glucose_sequences) == glucose_records
            and figures["deletions_missing_on_server"] == 0 and figures["deleted_samples_live_on_server"] == 0
            and figures["replacements_not_naming_original"] == 0 and figures["backend_deletions_missing_on_gateway"] == 0)
    return 0 if good else 1


def change_lane_figures(gateway, server, tenant):
    """The change lane on both sides: every gateway tombstone is on the server by its uid with the same sample, that
    sample is deleted there, and a correction's replacement on the server names (replaces) the sample it corrects."""
    tombstones = gateway.execute(
        "SELECT d.uid, s.uid, r.uid FROM healthDeletion d JOIN healthSample s ON s.id = d.sampleId "
        "LEFT JOIN healthSample r ON r.id = d.replacementSampleId").fetchall()
    server_tombstones = dict(server.execute(
        "SELECT uid, sample_uid FROM health_deletion WHERE tenant = ?", (tenant,)).fetchall())
    server_samples = {uid: (deleted_at, replaces) for uid, deleted_at, replaces in server.execute(
        "SELECT uid, deleted_at, replaces FROM health_sample WHERE tenant = ?", (tenant,))}
    return {
        "deletions_on_gateway": len(tombstones),
        "corrections_on_gateway": sum(1 for _, _, replacement in tombstones if replacement),
        "deletions_missing_on_server": sum(1 for uid, sample, _ in tombstones if server_tombstones.get(uid) != sample),
        "deleted_samples_live_on_server": sum(
            1 for _, sample, _ in tombstones if sample in server_samples and server_samples[sample][0] is None),
        "replacements_not_naming_original": sum(
            1 for _, sample, replacement in tombstones
            if replacement and server_samples.get(replacement, (None, None))[1] != sample),
        # The backend's deletions (tether-server health delete) the gateway holds the sample of: applied there under
        # the server's tombstone uid.
        "backend_deletions_on_server": len(backend_deletions(server, tenant)),
        "backend_deletions_missing_on_gateway": sum(
            1 for uid, sample in backend_deletions(server, tenant)
            if sample in gateway_uids(gateway) and (uid, sample, None) not in tombstones),
    }


def backend_deletions(server, tenant):
    return server.execute(
        "SELECT uid, sample_uid FROM health_deletion WHERE tenant = ? AND requested_by = 'backend'", (tenant,)).fetchall()


def gateway_uids(gateway):
    return {row[0] for row in gateway.execute("SELECT uid FROM healthSample")}


def backend_delete(gateway_database, server_database, tether, tether_server):
    """The operator deletes the second-earliest uploaded glucose reading on the server; then syncs until the gateway
    holds the server's tombstone for it. Exits 1 if the command fails or the gateway does not apply it in a minute."""
    import subprocess

    gateway = read_only(gateway_database)
    rows = gateway.execute(
        "SELECT uid FROM healthSample WHERE characteristic = ? AND uploadState = 'uploaded' AND deletedAt IS NULL "
        "ORDER BY effectiveAt, uid LIMIT 2", (GLUCOSE_MEASUREMENT,)).fetchall()
    if not rows:
        print(json.dumps({"error": "no uploaded glucose reading yet"}))
        return 1
    sample = rows[-1][0]
    result = subprocess.run(
        [tether_server, "health", "delete", "--db", server_database, "--tenant", "demo", "--sample", sample,
         "--note", "demo: the clinic withdrew this reading"], capture_output=True, text=True, timeout=60)
    if result.returncode != 0:
        print(json.dumps({"error": "tether-server health delete: exit %d: %s" % (result.returncode, result.stderr.strip())}))
        return 1
    tombstone = json.loads(result.stdout)
    deadline = time.monotonic() + 60
    applied = None
    while time.monotonic() < deadline:
        subprocess.run([tether, "sync"], capture_output=True, timeout=30)
        applied = gateway.execute(
            "SELECT d.uid, d.reason FROM healthDeletion d JOIN healthSample s ON s.id = d.sampleId WHERE s.uid = ?",
            (sample,)).fetchone()
        if applied:
            break
        time.sleep(1)
    figures = {"sample": sample, "tombstone": tombstone["uid"], "on_gateway": list(applied) if applied else None}
    print(json.dumps(figures))
    return 0 if applied == (tombstone["uid"], "backend") else 1


def health_edit(tether):
    """Deletes the earliest glucose record and corrects the earliest numeric systolic pressure through the CLI, as a
    technician would; exits 1 if either command fails or the answer does not name what was asked."""
    import subprocess

    def run(*arguments):
        result = subprocess.run([tether, "health", *arguments, "--json"], capture_output=True, text=True, timeout=60)
        if result.returncode != 0:
            raise RuntimeError("tether health %s: exit %d: %s" % (" ".join(arguments), result.returncode, result.stderr.strip()))
        return json.loads(result.stdout)

    def earliest(metric):
        samples = [s for s in run("samples", "--metric", metric, "--limit", "10000") if s.get("status") == "number"]
        return min(samples, key=lambda s: (s["effective_at"], s["uid"])) if samples else None

    # The meter's records and the cuff's readings arrive soon after pairing; on a loaded machine, give them a minute.
    deadline = time.monotonic() + 60
    while True:
        glucose, systolic = earliest("glucose"), earliest("blood_pressure_systolic")
        if (glucose and systolic) or time.monotonic() > deadline:
            break
        time.sleep(1)
    if glucose is None or systolic is None:
        print(json.dumps({"error": "no glucose or blood pressure reading stored yet"}))
        return 1
    deleted = run("delete", glucose["uid"], "--note", "demo: a control-solution test, not the person's blood")
    value = decimal.Decimal(systolic["value"])
    corrected_value = value + decimal.Decimal(1).scaleb(value.as_tuple().exponent)
    corrected = run("correct", systolic["uid"], "--value", str(corrected_value), "--note", "demo: re-read from the cuff's display")
    figures = {"deleted": glucose["uid"], "corrected": systolic["uid"], "replacement": corrected.get("replacement_uid"),
               "from": systolic["value"], "to": str(corrected_value)}
    print(json.dumps(figures))
    good = deleted.get("sample_uid") == glucose["uid"] and corrected.get("sample_uid") == systolic["uid"] and figures["replacement"]
    return 0 if good else 1


def field(path, keys):
    try:
        with open(path) as handle:
            data = json.load(handle)
    except (OSError, ValueError):
        data = {}
    print(" ".join(str(data.get(key, 0)) for key in keys))


def main(arguments):
    if len(arguments) >= 3 and arguments[0] == "faults":
        faults(arguments[1], arguments[2] == "on")
    elif len(arguments) == 3 and arguments[0] == "live-health" and arguments[2] in ("on", "off"):
        live_health(arguments[1], arguments[2] == "on")
    elif len(arguments) >= 4 and arguments[0] == "load":
        load(arguments[1], arguments[2], arguments[3].split(","))
    elif len(arguments) == 3 and arguments[0] == "device-stats":
        device_stats(arguments[1], arguments[2].split(","))
    elif len(arguments) == 2 and arguments[0] == "server-count":
        server_count(arguments[1])
    elif 2 <= len(arguments) <= 3 and arguments[0] == "health-count":
        health_count(arguments[1], *(int(value) for value in arguments[2:3]))
    elif 4 <= len(arguments) <= 6 and arguments[0] == "health-verify":
        return health_verify(arguments[1], arguments[2], int(arguments[3]), *arguments[4:5],
                             *(int(value) for value in arguments[5:6]))
    elif len(arguments) == 2 and arguments[0] == "health-edit":
        return health_edit(arguments[1])
    elif len(arguments) == 5 and arguments[0] == "backend-delete":
        return backend_delete(*arguments[1:5])
    elif len(arguments) == 3 and arguments[0] == "projections-verify":
        return projections_verify(arguments[1], arguments[2])
    elif len(arguments) >= 3 and arguments[0] == "field":
        field(arguments[1], arguments[2:])
    else:
        sys.stderr.write(__doc__)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
