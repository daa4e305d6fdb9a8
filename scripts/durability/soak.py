#!/usr/bin/env python3
"""The soak's measurements (scripts/durability/soak.sh): samples of tetherd's resources, the faults it injects into
tether-sim, and the verdict on the samples.

  soak.py header                                 the samples file's CSV header
  soak.py sample PID START GATEWAY_DB [TETHER]   one CSV line: seconds since START (a Unix time), tetherd's RSS
                                                 (KiB), threads, open descriptors, database and WAL bytes, pending
                                                 outbox commands and the age (s) of the oldest, what SQLite holds
                                                 in tetherd's memory (KiB) and the devices connected (both from
                                                 `TETHER status --json`, the CLI at that path; empty without it)
  soak.py inject BUS FAULT                       FAULT: bluetoothd-restart | disconnect-all (every link drops)
  soak.py analyze SAMPLES WARMUP_SECONDS         slopes after the warm-up (least squares), the ranges, and the
                                                 verdict; prints `key value` lines and exits 1 when it fails

Pass (after the warm-up): resident memory grows less than 2 MiB per hour (projected from the least-squares slope),
the floor of descriptors and of threads does not rise (the lowest count in the window's last third is at most 2 above
the lowest in its first third; 5 in a window shorter than 30 minutes; descriptors are compared among the samples
taken with the most devices connected, when the samples say how many were: each link holds sockets, and a window
whose last third saw no fault has no sample with links down, so its plain floor sits higher with nothing leaked), and the WAL stays below 64 MiB (the daemon checkpoints every 250 ms, so it never
grows with the run). Descriptors and threads swing with activity (a link's sockets, Dispatch's workers: 11 to 23
threads within a minute), so their slopes are printed but not judged; what a leak does is raise the floor they
swing from. The memory bound holds for a window of 30 minutes or more; in a shorter window (the five-minute run in
CI) the memory slope is not held to that bound: a debug build's heap was still growing by megabytes a minute two
minutes after start, which a window of minutes cannot tell from a leak; so a short window is held only to a loose
bound (256 MiB per hour: the SyncService timer leak grew 5 GiB per hour). The short CI run catches gross leaks,
not slow ones. The
outbox's oldest command is reported, not judged here: after the run, sync must drain (soak.sh's verification).

Where the memory goes is reported beside the verdict, not judged: SQLite's own heap (its page caches fill with the
pages queries touch, up to each connection's cache_size, so they rise with the database until full), the rest of
resident memory (RSS minus that heap), and the resident memory's slope over the window's second half alone (a
cache filling up shows as a slope that falls; a leak keeps its slope).

Only the standard library and python3-dbus (Debian) are used. The database is opened read-only.
"""
import os
import sqlite3
import sys
import time

SIMULATOR = ("org.bluez", "/io/tether/simulator", "io.tether.Simulator1")
COLUMNS = ["seconds", "rss_kib", "threads", "descriptors", "database_bytes", "wal_bytes", "outbox_pending", "outbox_oldest_seconds",
           "sqlite_heap_kib", "devices_connected"]
# Per hour, projected from the slope after the warm-up: for a window of LONG_WINDOW_HOURS or more, and loose ones
# for a shorter window.
LONG_WINDOW_HOURS = 0.5
MEMORY_KIB_PER_HOUR = 2048
SHORT_MEMORY_KIB_PER_HOUR = 256 << 10
FLOOR_RISE = 2
# A window of minutes starts while Dispatch's worker pool and the links' sockets are still settling (a five-minute run
# under load: the thread floor 15 then 17 with nothing leaking), so it allows a rise of 5: a leak of one thread or
# descriptor per injected fault (about one a minute) still fails it.
SHORT_FLOOR_RISE = 5
WAL_BYTES = 64 << 20


def status(pid):
    fields = {}
    with open("/proc/%d/status" % pid) as handle:
        for line in handle:
            key, _, value = line.partition(":")
            fields[key] = value.strip()
    return int(fields["VmRSS"].split()[0]), int(fields["Threads"])


def outbox(database, now):
    try:
        connection = sqlite3.connect("file:%s?mode=ro" % database, uri=True, timeout=10)
        connection.execute("PRAGMA busy_timeout = 10000")
        count, oldest = connection.execute(
            "SELECT count(*), min(createdAt) FROM outboxCommand WHERE status = 'pending'").fetchone()
        connection.close()
    except sqlite3.Error:
        return 0, 0
    return count, (max(0, now - oldest / 1e9) if oldest is not None else 0)


def size(path):
    try:
        return os.stat(path).st_size
    except OSError:
        return 0


def daemon_status(tether):
    """SQLite's heap in tetherd (KiB) and the devices connected, from `tether status --json`; "" for what cannot be
    read."""
    if not tether:
        return "", ""
    import json
    import subprocess
    try:
        answer = subprocess.run([tether, "status", "--json"], capture_output=True, timeout=20, check=True)
        status = json.loads(answer.stdout)
    except (OSError, subprocess.SubprocessError, ValueError):
        return "", ""
    heap, connected = status.get("sqlite_heap_bytes"), status.get("devices_connected")
    return (heap // 1024 if isinstance(heap, int) else ""), (connected if isinstance(connected, int) else "")


def sample(pid, start, database, tether=None):
    now = time.time()
    rss, threads = status(pid)
    descriptors = len(os.listdir("/proc/%d/fd" % pid))
    pending, oldest = outbox(database, now)
    values = [round(now - start, 1), rss, threads, descriptors, size(database), size(database + "-wal"), pending, round(oldest, 1),
              *daemon_status(tether)]
    print(",".join(str(v) for v in values))


def inject(bus_address, fault):
    import dbus

    bus = dbus.bus.BusConnection(bus_address)
    control = dbus.Interface(bus.get_object(SIMULATOR[0], SIMULATOR[1]), SIMULATOR[2])
    if fault == "bluetoothd-restart":
        control.InjectFault("bluetoothd-restart", {"downtime_ms": dbus.UInt32(1000)})
    elif fault == "disconnect-all":
        control.InjectFault("disconnect", dbus.Dictionary({}, signature="sv"))
    else:
        raise SystemExit("soak.py: unknown fault %r" % fault)


def slope(points):
    """Least-squares slope of (x, y) points, per unit of x."""
    n = len(points)
    mean_x = sum(x for x, _ in points) / n
    mean_y = sum(y for _, y in points) / n
    variance = sum((x - mean_x) ** 2 for x, _ in points)
    return sum((x - mean_x) * (y - mean_y) for x, y in points) / variance if variance else 0.0


def analyze(path, warmup):
    with open(path) as handle:
        lines = [line.strip().split(",") for line in handle if line.strip()]
    header = lines[0]
    rows = [{key: float(value) for key, value in zip(header, line) if value != ""} for line in lines[1:]]
    after = [row for row in rows if row["seconds"] >= warmup]
    failures = []
    if len(after) < 5:
        print("samples_after_warmup %d" % len(after))
        print("verdict FAILED: fewer than 5 samples after the warm-up")
        return 1
    hours = (after[-1]["seconds"] - after[0]["seconds"]) / 3600
    long_run = hours >= LONG_WINDOW_HOURS
    report = [("samples", len(rows)), ("samples_after_warmup", len(after)), ("window_minutes", round(hours * 60, 1)),
              ("memory_bound_kib_per_hour", MEMORY_KIB_PER_HOUR if long_run else SHORT_MEMORY_KIB_PER_HOUR)]
    third = max(1, len(after) // 3)
    for column in ("rss_kib", "descriptors", "threads"):
        per_hour = slope([(row["seconds"] / 3600, row[column]) for row in after])
        values = [row[column] for row in after]
        first_floor, last_floor = min(values[:third]), min(values[-third:])
        report += [(column + "_slope_per_hour", round(per_hour, 1)), (column + "_first", int(values[0])),
                   (column + "_last", int(values[-1])), (column + "_min", int(min(values))), (column + "_max", int(max(values))),
                   (column + "_floor_first_third", int(first_floor)), (column + "_floor_last_third", int(last_floor))]
        if column == "rss_kib":
            bound = MEMORY_KIB_PER_HOUR if long_run else SHORT_MEMORY_KIB_PER_HOUR
            if per_hour > bound:
                failures.append("resident memory grows %.0f KiB per hour after the warm-up (bound %d)" % (per_hour, bound))
            continue
        if column == "descriptors":
            # Compare like with like: the descriptors held with every device connected (see the module's documentation).
            full = [row for row in after if "devices_connected" in row]
            most = max((row["devices_connected"] for row in full), default=None)
            full = [row for row in full if row["devices_connected"] == most]
            full_third = max(1, len(full) // 3)
            if len(full) >= 6:
                first_floor = min(row[column] for row in full[:full_third])
                last_floor = min(row[column] for row in full[-full_third:])
                report += [("devices_connected_most", int(most)), ("descriptors_samples_with_most_connected", len(full)),
                           ("descriptors_floor_first_third_with_most_connected", int(first_floor)),
                           ("descriptors_floor_last_third_with_most_connected", int(last_floor))]
        if last_floor - first_floor > (FLOOR_RISE if long_run else SHORT_FLOOR_RISE):
            failures.append("the floor of %s rose from %d to %d" % (column, first_floor, last_floor))
    # Where the memory goes (reported, not judged; see the module's documentation).
    second_half = [row for row in after if row["seconds"] >= (after[0]["seconds"] + after[-1]["seconds"]) / 2]
    if len(second_half) >= 5:
        report.append(("rss_kib_slope_per_hour_second_half", round(slope([(row["seconds"] / 3600, row["rss_kib"]) for row in second_half]), 1)))
    with_heap = [row for row in after if "sqlite_heap_kib" in row]
    if len(with_heap) >= 5:
        report += [("sqlite_heap_kib_slope_per_hour", round(slope([(row["seconds"] / 3600, row["sqlite_heap_kib"]) for row in with_heap]), 1)),
                   ("sqlite_heap_kib_first", int(with_heap[0]["sqlite_heap_kib"])), ("sqlite_heap_kib_last", int(with_heap[-1]["sqlite_heap_kib"])),
                   ("rss_minus_sqlite_heap_kib_slope_per_hour",
                    round(slope([(row["seconds"] / 3600, row["rss_kib"] - row["sqlite_heap_kib"]) for row in with_heap]), 1))]
    wal = max(row["wal_bytes"] for row in rows)
    report += [("wal_bytes_max", int(wal)), ("database_bytes_last", int(after[-1]["database_bytes"])),
               ("outbox_oldest_seconds_max", max(row["outbox_oldest_seconds"] for row in rows)),
               ("outbox_oldest_seconds_last", after[-1]["outbox_oldest_seconds"])]
    if wal >= WAL_BYTES:
        failures.append("the WAL reached %d bytes (bound %d): not checkpointed" % (wal, WAL_BYTES))
    for key, value in report:
        print(key, value)
    print("verdict", "passed" if not failures else "FAILED: " + "; ".join(failures))
    return 1 if failures else 0


def main(arguments):
    if arguments[:1] == ["header"]:
        print(",".join(COLUMNS))
    elif len(arguments) in (4, 5) and arguments[0] == "sample":
        sample(int(arguments[1]), float(arguments[2]), arguments[3], arguments[4] if len(arguments) == 5 else None)
    elif len(arguments) == 3 and arguments[0] == "inject":
        inject(arguments[1], arguments[2])
    elif len(arguments) == 3 and arguments[0] == "analyze":
        return analyze(arguments[1], float(arguments[2]))
    else:
        print(__doc__, file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
