#!/usr/bin/env python3
"""tetherd's footprint (scripts/bench/footprint.sh): time from exec to READY=1, resident memory, idle CPU.

  footprint.py ready TETHERD CONFIG RUNS      starts tetherd RUNS times with a NOTIFY_SOCKET of its own, and prints
                                             the milliseconds from exec to READY=1 for each (SIGTERM after each)
  footprint.py rss PID                       resident memory (KiB) and its parts: anonymous, file-backed
  footprint.py cpu PID SECONDS               CPU time (user + system) PID used over SECONDS, as % of one core
  footprint.py mappings PID [N]              where the resident memory is (/proc/PID/smaps): KiB resident per
                                             mapped file or kind of anonymous mapping, largest first (N rows, 12)
  footprint.py working-set PID SECONDS       what PID touched in SECONDS (/proc/PID/clear_refs, then smaps'
                                             Referenced; needs root): per mapping, beside what is resident
  footprint.py sections PID                  the program's own resident pages by ELF section (/proc/PID/pagemap,
                                             which needs root; section addresses from `readelf -SW`)

systemd's notify protocol (sd_notify(3)): a datagram "READY=1" on the AF_UNIX socket named by NOTIFY_SOCKET. Only
the standard library is used.
"""
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time


def ready(tetherd, config, runs):
    directory = tempfile.mkdtemp(prefix="tether-footprint-")
    path = os.path.join(directory, "notify")
    for run in range(runs):
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        listener.bind(path)
        listener.settimeout(60)
        environment = dict(os.environ, NOTIFY_SOCKET=path)
        started = time.monotonic()
        process = subprocess.Popen([tetherd, "--config", config], env=environment, stdout=subprocess.DEVNULL,
                                   stderr=subprocess.DEVNULL, start_new_session=True)
        elapsed = None
        try:
            while elapsed is None:
                message = listener.recv(4096).decode(errors="replace")
                if "READY=1" in message.split("\n"):
                    elapsed = (time.monotonic() - started) * 1000
        except socket.timeout:
            pass
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        listener.close()
        os.unlink(path)
        if elapsed is None:
            print("run %d: no READY=1 within 60 s" % (run + 1), file=sys.stderr)
            return 1
        print("%.1f" % elapsed)
    os.rmdir(directory)
    return 0


def rss(pid):
    fields = {}
    with open("/proc/%d/status" % pid) as handle:
        for line in handle:
            key, _, value = line.partition(":")
            fields[key] = value.strip().split()[0] if value.strip() else "0"
    print(fields.get("VmRSS", "0"), fields.get("RssAnon", "0"), fields.get("RssFile", "0"), fields.get("Threads", "0"))
    return 0


def smaps_totals(pid, field):
    """KiB of `field` (an smaps line such as Rss: or Referenced:) per mapping: the file's path and permissions (text
    r-xp, read-only data r--p and writable data rw-p are different stories), or [heap], [stack], "anonymous"."""
    totals = {}
    name = None
    with open("/proc/%d/smaps" % pid) as handle:
        for line in handle:
            head = line.split()
            if not head:
                continue
            if not head[0].endswith(":") or "-" in head[0]:
                # A mapping's first line: address range, permissions, offset, device, inode, [path].
                name = "%s (%s)" % (head[5], head[1]) if len(head) > 5 else "anonymous"
            elif head[0] == field:
                totals[name] = totals.get(name, 0) + int(head[1])
    return totals


def working_set(pid, seconds, rows=8):
    """Resident is not used: a page fault maps the file's cached neighbours too (fault-around, 64 KiB), and pages
    touched once at start stay. Writing 1 to clear_refs clears every page's referenced bit (proc(5)); what smaps
    calls Referenced after SECONDS is what the process touched in that time."""
    with open("/proc/%d/clear_refs" % pid, "w") as handle:
        handle.write("1")
    time.sleep(seconds)
    resident, referenced = smaps_totals(pid, "Rss:"), smaps_totals(pid, "Referenced:")
    print("%8d KiB referenced of %8d KiB resident  (all mappings, %g s)" % (
        sum(referenced.values()), sum(resident.values()), seconds))
    for name, kib in sorted(referenced.items(), key=lambda item: -item[1])[:rows]:
        print("%8d KiB referenced of %8d KiB resident  %s" % (kib, resident.get(name, 0), name))
    return 0


def mappings(pid, rows):
    """Resident KiB by what is mapped (`smaps_totals`: the file's path and permissions, [heap], [stack], or
    "anonymous" for the rest: malloc arenas, thread stacks, Swift's allocations), largest first. Private_Dirty says
    how much of it is the process's own; a clean file-backed page could be dropped and read again."""
    resident, dirty = smaps_totals(pid, "Rss:"), smaps_totals(pid, "Private_Dirty:")
    for name, kib in sorted(resident.items(), key=lambda item: -item[1])[:rows]:
        print("%8d KiB resident  %8d KiB private dirty  %s" % (kib, dirty.get(name, 0), name))
    return 0


def cpu_seconds(pid):
    with open("/proc/%d/stat" % pid) as handle:
        fields = handle.read().rsplit(")", 1)[1].split()
    # After the command name: state is field 3, utime 14 and stime 15 (proc(5)), so 11 and 12 here.
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def cpu(pid, seconds):
    before, started = cpu_seconds(pid), time.monotonic()
    time.sleep(seconds)
    used, elapsed = cpu_seconds(pid) - before, time.monotonic() - started
    print("%.3f" % (100 * used / elapsed))
    return 0


def main(arguments):
    if len(arguments) == 4 and arguments[0] == "ready":
        return ready(arguments[1], arguments[2], int(arguments[3]))
    if len(arguments) == 2 and arguments[0] == "rss":
        return rss(int(arguments[1]))
    if len(arguments) in (2, 3) and arguments[0] == "mappings":
        return mappings(int(arguments[1]), int(arguments[2]) if len(arguments) == 3 else 12)
    if len(arguments) == 3 and arguments[0] == "working-set":
        return working_set(int(arguments[1]), float(arguments[2]))
    if len(arguments) == 2 and arguments[0] == "sections":
        return sections(int(arguments[1]))
    if len(arguments) == 3 and arguments[0] == "cpu":
        return cpu(int(arguments[1]), float(arguments[2]))
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
