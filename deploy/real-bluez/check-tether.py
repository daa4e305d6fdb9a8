#!/usr/bin/env python3
"""Compares what the peripheral produced with what Tether's central stored (the VM scenario's assertions).

Every hit produced is stored exactly once and was released by the device (ACKed after commit); the settings
round trip reached the device; both subscription methods ran; pairing asked both agents for the passkey; no
unexplained error-level log lines. Prints the summary and writes it to summary.txt; exit 1 on any failure. A missing
log or summary is a failure that names it, never a silent "no errors"."""
import json
import re
import sys
from pathlib import Path

work = Path(sys.argv[1])
failures, lines = [], []

def check(condition, message):
    lines.append(("ok   " if condition else "FAIL ") + message)
    if not condition:
        failures.append(message)

events_path = work / "peripheral-events.jsonl"
check(events_path.exists(), "the peripheral wrote its event log")
facts = [json.loads(line) for line in events_path.read_text().splitlines() if line.strip()] if events_path.exists() else []
produced = {(f["boot"], f["sequence"]): (f["duration"], f["intensity"]) for f in facts if f["fact"] == "hit"}
released = [(f["boot"], f["sequence"]) for f in facts if f["fact"] == "released"]
summary_path = work / "central-summary.json"
summary = json.loads(summary_path.read_text()) if summary_path.exists() else None
check(summary is not None, "the central wrote its summary")
summary = summary or {"events": [], "connections": [], "agentQuestions": [], "sessionReports": []}
stored_keys = [(e["boot"], e["sequence"]) for e in summary["events"]]
stored = {(e["boot"], e["sequence"]): (e["duration"], e["intensity"]) for e in summary["events"]}

check(len(produced) > 0, f"the device produced {len(produced)} hits")
check(len(stored_keys) == len(set(stored_keys)), f"no hit stored twice ({len(stored_keys)} rows, {len(set(stored_keys))} distinct)")
missing = sorted(set(produced) - set(stored))
extra = sorted(set(stored) - set(produced))
check(not missing, f"every produced hit is stored (missing: {missing[:10]})")
check(not extra, f"nothing stored that the device did not produce (extra: {extra[:10]})")
check(all(stored[k] == produced[k] for k in set(stored) & set(produced)), "stored durations and intensities match")
check(sorted(set(released)) == sorted(produced), f"the device released every hit after the gateway's ACK ({len(set(released))} released)")
check(len(released) == len(set(released)), "no hit released twice")
check(all(e["hasTime"] for e in summary["events"]), "every stored hit has a wall-clock time (time sync ran on both boots)")
boots = sorted({b for b, _ in produced})
check(len(boots) == 2, f"hits from two boots (power cycle): {boots}")

final = [f for f in facts if f["fact"] == "all-released"]
check(bool(final), "the device saw every hit acknowledged and finished")
if final:
    check(final[-1]["configVersion"] == 7 and final[-1]["sensitivity"] == 8 and final[-1]["ledBrightness"] == 25,
          f"settings round trip: device holds version {final[-1]['configVersion']}, sensitivity {final[-1]['sensitivity']}, LED {final[-1]['ledBrightness']}")
check(summary.get("reportedConfigVersion") == 7, f"the gateway stored the device's report of version {summary.get('reportedConfigVersion')}")

methods = [c["method"] for c in summary["connections"]]
check("AcquireNotify" in methods and "StartNotify" in methods, f"both subscription methods ran: {methods}")
check(any(c["paired"] for c in summary["connections"]), "the first connection paired with the passkey")
check(any(q.startswith("RequestPasskey") for q in summary["agentQuestions"]), f"the central's agent was asked for the passkey: {summary['agentQuestions']}")
check(any(f["fact"] == "agent-request-passkey" for f in facts), "the device's agent entered the passkey")
check(any(r.startswith("reboot of") for r in summary["sessionReports"]), "the gateway noticed the device's reboot")
check(any(r.startswith("time anchor") for r in summary["sessionReports"]), "time sync produced anchors")
check(summary.get("outboxCommands", -1) >= len(produced), f"an outbox command per stored hit ({summary.get('outboxCommands')})")

# Error-level lines: Tether's own must be none; bluetoothd's must each be explained here. With -d, bluetoothd
# prefixes its debug lines with "file.c:function()"; error() and info() lines carry no prefix.
# A missing log is a failure, never "no errors".
central_log = work / "central.log"
check(central_log.is_file(), "the central wrote central.log")
central_lines = central_log.read_text(errors="replace").splitlines() if central_log.is_file() else []
central_errors = [l for l in central_lines if " ERROR " in l]
check(not central_errors, f"no error lines from the central: {central_errors[:5]}")
central_warnings = [l for l in central_lines if " WARN " in l]
lines.append(f"info central warnings (recovered by design): {len(central_warnings)}")
for line in central_warnings[:10]:
    lines.append(f"     {line}")
explained = {
    r"^Bluetooth daemon \d|^Bluetooth management interface|^Terminating$|^Exit$": "start and stop",
    # ControllerMode=le: the BR/EDR profile servers cannot listen on LE-only controllers.
    r"^(avrcp-controller|audio-avrcp-target|sap-server|[a-z-]+-server|[a-z-]+-source|[a-z-]+-sink): Operation not permitted \(1\)$":
        "BR/EDR profile servers on LE-only controllers",
    # Hex dumps belong to the debug line before them (keys and values under -d).
    r"^ {2}([0-9a-f]{2} )+": "debug hex dump",
    # The device's power cycle turns its radio off with the central's link up: the kernel's disconnection
    # event then finds the connection already gone (adapter_remove_connection).
    r"^No matching connection for device$": "the peripheral's radio went off with the link up (power cycle)",
}
debug_prefix = re.compile(r"^bluetoothd\[\d+\]: [\w/.-]+\.c:\w+\(\) ")
unexplained, debug_failures = [], 0
log = work / "bluetoothd.log"
check(log.is_file(), "bluetoothd.log was copied out of the guest")
if log.is_file():
    for line in log.read_text(errors="replace").splitlines():
        if debug_prefix.match(line):
            debug_failures += bool(re.search(r"\b(fail|failed|Failed|error: [1-9])", line))
            continue
        message = re.sub(r"^bluetoothd\[\d+\]: ", "", line)
        if not any(re.search(pattern, message) for pattern in explained):
            unexplained.append(message)
lines.append(f"info bluetoothd debug lines mentioning a failure: {debug_failures} (kept in bluetoothd.log)")
for line in unexplained[:30]:
    lines.append(f"     {line}")
check(not unexplained, f"no unexplained error-level lines from bluetoothd ({len(unexplained)})")

text = "\n".join(lines)
print(text)
(work / "summary.txt").write_text(text + "\n")
sys.exit(1 if failures else 0)
