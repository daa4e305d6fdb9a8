#!/usr/bin/env python3
"""The tetherd-health scenario's assertions: what the Bumble Glucose meter holds (its own log of its records,
meter-events.jsonl) against tetherd's database and the CLI's answers.

Every record the meter held is stored exactly once as a Glucose Measurement sample (0x2A18) of the cold lane with
the concentration the meter holds (SFLOAT mantissa and exponent in kg/L, and mg/dL canonically), its sequence
number and its base time; nothing else is stored; the stream's cursor is the highest sequence; the link was bonded
and every RACP request came encrypted; the reading taken while connected was read by `tether health backfill`,
which stored exactly that one; the reading deleted in the meter's menu was found by counting (RACP Report Number of
Stored Records within ranges) and its sample, alone, tombstoned "vanished-from-device" by the gateway; no
error-level line from tetherd. Prints the summary and writes it to summary.txt;
exit 1 on any failure. A missing file or field is a failure that names it."""
import datetime
import json
import re
import sqlite3
import sys
from decimal import Decimal
from pathlib import Path

work = Path(sys.argv[1])
failures, lines = [], []
MEASUREMENT = "00002a18-0000-1000-8000-00805f9b34fb"


def check(condition, message):
    lines.append(("ok   " if condition else "FAIL ") + message)
    if not condition:
        failures.append(message)


def read(name):
    path = work / name
    if not path.is_file():
        check(False, f"{name} exists (the scenario writes it; nothing it should hold can be checked)")
        return ""
    return path.read_text(errors="replace")


def json_value(name):
    text = read(name).strip()
    try:
        return json.loads(text) if text else None
    except json.JSONDecodeError:
        check(False, f"{name} is JSON: {text[:200]!r}")
        return None


facts = [json.loads(line) for line in read("meter-events.jsonl").splitlines() if line.strip()]
address = read("meter-address").strip()

# The meter's truth: its records at start, and the reading taken while connected.
initial = next((f for f in facts if f["fact"] == "records"), None)
check(initial is not None, "the meter logged its stored records")
held = {r["sequence"]: r for r in (initial or {}).get("records", [])}
taken = [f for f in facts if f["fact"] == "reading-taken"]
check(len(taken) == 1, f"the meter took one reading while connected ({len(taken)})")
for reading in taken:
    held[reading["sequence"]] = {k: v for k, v in reading.items() if k not in ("fact", "at")}
highest = max(held) if held else None
# Deleted in the meter's menu (step 5c): the gateway read it before, so its sample stays, tombstoned.
deleted_on_meter = [f["sequence"] for f in facts if f["fact"] == "reading-deleted"]
check(len(deleted_on_meter) == 1, f"the meter deleted one reading in its menu ({deleted_on_meter})")
deleted_at = next((i for i, f in enumerate(facts) if f["fact"] == "reading-deleted"), len(facts))
lines.append(f"info the meter held records {sorted(held)}, then deleted {deleted_on_meter}; "
             f"planted fault: {(initial or {}).get('fault') or 'none'}")

links = [f["fact"] for f in facts if f["fact"] in ("link-up", "link-down")]
lines.append(f"info the meter's links: {links.count('link-up')} up, {links.count('link-down')} down before it stopped")

# Pairing and security: bonded, every control-point write encrypted.
check(any(f["fact"] == "paired" and f.get("bonded") for f in facts), "the meter bonded with the gateway (LE Secure Connections, just-works)")
check(read("pair-status").strip() == "0", f"tether pair succeeded: {read('pair.out').strip()} {read('pair.err').strip()[-200:]}")
check("passkey" not in read("pair.err").lower(), "tether pair asked nothing (just-works: the meter has no display and no keyboard)")
requests = [f for f in facts if f["fact"] == "racp-request"]
check(bool(requests), f"tetherd wrote the Record Access Control Point ({len(requests)} requests: {[r['bytes'] for r in requests]})")
check(all(r["encrypted"] for r in requests), "every RACP request came on an encrypted link")
refused = [f for f in facts if f["fact"] == "racp-refused"]
check(not refused, f"the meter refused no RACP request (CCCD off, procedure in progress): {refused}")
responses = [(f["request"], f["code"]) for f in facts if f["fact"] == "racp-response"]
lines.append(f"info RACP responses (request op code, response code): {responses}")
check(any(r == (1, 1) for r in responses), "the meter answered Report Stored Records with Success")
check(any(address.lower() in read(p.name).lower() for p in work.glob("scan-*.txt")), f"tether scan listed {address}")

# The gateway's database.
gateway = sqlite3.connect(f"file:{work / 'gateway.sqlite'}?mode=ro&immutable=1", uri=True) if (work / "gateway.sqlite").is_file() else None
check(gateway is not None, "gateway.sqlite exists (the scenario copies it out of the guest)")
gateway = gateway or sqlite3.connect(":memory:")
try:
    peripheral = gateway.execute("SELECT id, kinds FROM peripheral WHERE identityAddress = ?", (address.upper(),)).fetchone()
except sqlite3.Error as error:
    peripheral = None
    check(False, f"the gateway database has the peripheral table ({error})")
check(peripheral is not None, f"the gateway registered the meter as a peripheral at {address}")
lines.append(f"info peripheral row (id, kinds): {peripheral}")
pid = peripheral[0] if peripheral else -1
rows = gateway.execute(
    "SELECT recordSequence, epoch, lane, valueStatus, reportedMantissa, reportedExponent, reportedUnit, canonicalValue, "
    "canonicalUnit, deviceTime, deletedAt FROM healthSample WHERE peripheralId = ? AND characteristic = ?",
    (pid, MEASUREMENT)).fetchall() if peripheral else []
sequences = [r[0] for r in rows]
check(len(sequences) == len(set(sequences)), f"no record stored twice ({len(rows)} rows, {len(set(sequences))} sequences)")
stored = {r[0]: r for r in rows}
missing, extra = sorted(set(held) - set(stored)), sorted(set(stored) - set(held))
check(not missing, f"every record the meter held is stored (missing: {missing})")
check(not extra, f"nothing stored that the meter never held (extra: {extra})")
wrong = []
for sequence in sorted(set(held) & set(stored)):
    truth, row = held[sequence], stored[sequence]
    (_, epoch, lane, status, mantissa, exponent, unit, canonical, canonical_unit, device_time, deleted) = row
    canonical_truth = Decimal(truth["mantissa"]).scaleb(truth["exponent"] + 5)  # kg/L -> mg/dL: x 10^5
    expected = ("cold", 0, "number", truth["mantissa"], truth["exponent"], "kg/L", "mg/dL", sequence in deleted_on_meter)
    actual = (lane, epoch, status, mantissa, exponent, unit, canonical_unit, deleted is not None)
    if actual != expected or canonical is None or Decimal(canonical) != canonical_truth:
        wrong.append(f"#{sequence}: stored {actual} canonical {canonical}, the meter holds {expected} canonical {canonical_truth}")
    # The meter's time as it sent it: the stored device time names the base time's date and time of day, or the
    # base time moved by the record's time offset (GLS: the user-facing time is base time + offset).
    base = truth["base_time"]
    moved = (datetime.datetime.fromisoformat(base) + datetime.timedelta(minutes=truth["time_offset_minutes"])).isoformat()
    if device_time is None or not any(t[:10] in device_time and t[11:16] in device_time for t in (base, moved)):
        wrong.append(f"#{sequence}: device time {device_time!r}, the meter's base time {base} (+{truth['time_offset_minutes']} min)")
check(not wrong, f"every stored record has the meter's value, unit, lane and time ({len(wrong)} wrong): {wrong[:6]}")
other = gateway.execute("SELECT characteristic, count(*) FROM healthSample WHERE peripheralId = ? AND characteristic <> ? "
                        "GROUP BY characteristic", (pid, MEASUREMENT)).fetchall()
check(not other, f"no other characteristic stored for the meter: {other}")
cursors = gateway.execute("SELECT epoch, positionKind, position FROM healthIngestCursor WHERE peripheralId = ? AND characteristic = ? "
                          "ORDER BY epoch", (pid, MEASUREMENT)).fetchall()
check(cursors == [(0, "sequence", highest)], f"the cursor is at the highest sequence {highest} in epoch 0: {cursors}")

# The reading deleted in the meter's menu: found by counting within ranges after the meter's link came back, and
# exactly its sample tombstoned, by the gateway, as vanished from the device.
tombstones = gateway.execute(
    "SELECT s.recordSequence, d.reason, d.requestedBy FROM healthDeletion d JOIN healthSample s ON s.id = d.sampleId "
    "WHERE s.peripheralId = ?", (pid,)).fetchall() if peripheral else []
check(tombstones == [(s, "vanished-from-device", "gateway") for s in deleted_on_meter],
      f"the deleted reading's sample, and no other, is tombstoned vanished-from-device by the gateway: {tombstones}")
counts = [r["bytes"] for r in requests[sum(1 for f in facts[:deleted_at] if f["fact"] == "racp-request"):]
          if r["bytes"].startswith("040401")]
lines.append(f"info counts within ranges after the deletion (op 04, operator 04, filter 01, low, high): {counts}")
check(bool(counts), "after the deletion tetherd counted the meter's records within ranges (RACP 0x04, operator 0x04)")
numbers = [f["count"] for f in facts[deleted_at:] if f["fact"] == "racp-number" and f.get("operator") == 4]
check(len(numbers) == len(counts), f"the meter answered every count with a Number of Stored Records ({numbers})")

# The backfill after the reading taken while connected: exactly that one record.
check(read("backfill-status").strip() == "0", f"tether health backfill succeeded: {read('backfill.err').strip()[-200:]}")
backfill = json_value("backfill.json")
backfill = backfill if isinstance(backfill, list) else [backfill] if isinstance(backfill, dict) else []
lines.append(f"info tether health backfill --json: {json.dumps(backfill, sort_keys=True)}")
check(len(backfill) == 1, f"one backfill result (the Glucose service): {len(backfill)}")
if backfill:
    result = backfill[0]
    check(result.get("outcome") == "complete", f"the backfill completed: {result.get('outcome')} {result.get('reason', '')}")
    check(result.get("records_stored") == 1, f"the backfill stored exactly the one new reading: {result.get('records_stored')}")
    check(result.get("cursor_position") == highest, f"the backfill's cursor is {highest}: {result.get('cursor_position')}")
if taken:
    after = [r["bytes"] for r in requests if r["at"] >= taken[0]["at"]]
    new = taken[0]["sequence"]
    resume = "0103" + "01" + f"{new:04x}"[2:] + f"{new:04x}"[:2]
    check(resume in after, f"after the reading, tetherd asked for records >= {new} ({resume}): {after}")

# The CLI's view of the device.
devices = json_value("health-devices.json")
devices = devices if isinstance(devices, list) else []
mine = [d for d in devices if str(d.get("address", "")).upper() == address.upper()]
lines.append(f"info tether health devices --json: {json.dumps(mine, sort_keys=True)[:600]}")
check(len(mine) == 1, f"tether health devices lists the meter once ({len(mine)})")

# Firmware (tetherd-health-firmware.sh writes firmware-expected): `tether firmware update` through tetherd installed
# the host's update image on the meter's MCUmgr SMP server over the real stack. The images' hashes are imgtool's own
# (dumpinfo, make-firmware-images.sh); the meter's slots and swaps its own event log (mcumgr_device.py).
if (work / "firmware-expected").is_file():
    factory_hash = read("firmware/factory.sha256").strip()
    update_hash = read("firmware/update.sha256").strip()
    check(read("firmware-update-status").strip() == "0",
          f"tether firmware update exited 0 (status {read('firmware-update-status').strip() or '<none>'}; "
          f"{read('firmware-update.err').strip()[-300:]})")
    text = read("firmware-update.jsonl")
    progress = [json.loads(l) for l in text.splitlines() if l.strip().startswith("{")]
    phases = [p.get("phase") for p in progress if "phase" in p]
    lines.append(f"info firmware update phases: {phases}")
    for phase in ("verified", "upload", "uploaded", "test", "reset", "running", "proving", "confirmed"):
        check(phase in phases, f"the update went through its {phase} phase")
    verified = next((p for p in progress if p.get("phase") == "verified"), {})
    check(verified.get("hash") == update_hash, f"tetherd verified the image imgtool signed (hash {verified.get('hash')} = {update_hash})")
    uploaded = next((p for p in progress if p.get("phase") == "uploaded"), {})
    image_bytes = (work / "firmware/update.img").stat().st_size if (work / "firmware/update.img").is_file() else None
    check(uploaded.get("bytes") == image_bytes, f"every byte of the image was uploaded ({uploaded.get('bytes')} of {image_bytes})")
    if uploaded.get("seconds"):
        lines.append(f"info upload: {uploaded.get('bytes')} bytes in {uploaded.get('seconds'):.1f} s "
                     f"({uploaded.get('bytes') / uploaded.get('seconds') / 1000:.2f} kB/s under emulation)")
    outcome = [p for p in progress if "outcome" in p]
    check(len(outcome) == 1 and outcome[0].get("outcome") == "confirmed" and outcome[0].get("version") == "1.1.0.2",
          f"the update ended confirmed, the meter running 1.1.0.2 (SMP's notation of 1.1.0+2): {outcome}")
    booted = [f for f in facts if f["fact"] == "smp-booted"]
    check(bool(booted) and booted[0].get("images", [{}])[0].get("hash") == factory_hash,
          f"the meter started on the factory image imgtool signed ({booted[:1]})")
    completed = [f for f in facts if f["fact"] == "smp-upload-complete"]
    check(len(completed) == 1 and completed[0].get("hash") == update_hash,
          f"the meter received the whole image once, its SHA256 TLV imgtool's ({completed})")
    resets = [f for f in facts if f["fact"] == "smp-reset"]
    check(len(resets) == 1, f"the meter was reset once over SMP ({len(resets)})")
    swapped = [f for f in facts if f["fact"] == "smp-swapped"]
    check(len(swapped) == 1 and swapped[0].get("hash") == update_hash, f"MCUboot swapped the new image in once: {swapped}")
    confirmed = [f for f in facts if f["fact"] == "smp-confirmed"]
    check(len(confirmed) == 1 and confirmed[0].get("hash") == update_hash and confirmed[0].get("version") == "1.1.0.2",
          f"the meter runs the new image, confirmed, by its own account: {confirmed}")
    check(not any(f["fact"] == "smp-reverted" for f in facts), "the meter never reverted")
    reset_at = facts.index(resets[0]) if resets else None
    check(reset_at is not None and any(f["fact"] == "link-up" for f in facts[reset_at:]),
          "the gateway reconnected the meter after the update's reset")
    if reset_at is not None and confirmed:
        # Encrypted again after the reboot: the bond (LTK) outlived it, as a device keeps it in flash.
        check(any(f["fact"] == "encryption" and f.get("encrypted") for f in facts[reset_at:]),
              "the link after the reset was encrypted with the bond")
    updates = json_value("firmware-updates.json")
    updates = updates if isinstance(updates, list) else []
    lines.append(f"info tether firmware updates --json: {json.dumps(updates, sort_keys=True)[:400]}")
    check(len(updates) == 1 and updates[0].get("outcome") == "confirmed" and updates[0].get("image_hash") == update_hash,
          "tether firmware updates lists the one update, confirmed, with the image's hash")
    devices = json_value("health-devices.json")
    meter_record = next((d for d in (devices or []) if isinstance(d, dict) and d.get("address", "").upper() == address.upper()), {})
    check(meter_record.get("running_image_version") == "1.1.0+2" and meter_record.get("running_image_hash") == update_hash
          and meter_record.get("running_image_confirmed") is True,
          f"the registry records the meter running the new image, confirmed: {({k: v for k, v in meter_record.items() if k.startswith('running_image')})}")
    if gateway is not None:
        try:
            queued = gateway.execute("SELECT count(*) FROM outboxCommand WHERE entityType = 'firmwareUpdate' AND operation = 'create'").fetchone()[0]
            check(queued == 1, f"the update's outcome was queued for the backend once ({queued})")
        except sqlite3.Error as error:
            check(False, f"the gateway database has the outbox ({error})")

# Logs: tetherd at error level must be silent.
tetherd_errors = [l for l in read("tetherd.log").splitlines() if re.match(r"^(ERROR|CRITICAL) ", l)]
check(not tetherd_errors, f"no error-level lines from tetherd: {tetherd_errors[:5]}")
warnings = [l for l in read("tetherd.log").splitlines() if l.startswith("WARNING ")]
lines.append(f"info tetherd warnings: {len(warnings)}")
for line in warnings[:12]:
    lines.append(f"     {line[:220]}")
# bluetoothd's error-level lines are shown, not judged (check-tetherd.py judges them for the btvirt scenarios).
debug_line = re.compile(r"^bluetoothd\[\d+\]: [\w/.-]+\.c:\w+\(\) |^bluetoothd\[\d+\]:   ([0-9a-f]{2} )+")
plain = [l for l in read("bluetoothd.log").splitlines() if l.startswith("bluetoothd[") and not debug_line.match(l)]
messages = [re.sub(r"^bluetoothd\[\d+\]: ", "", l) for l in plain]
lines.append(f"info bluetoothd's error-level lines: {messages[:12]}")
failed = [f for f in facts if f["fact"] == "racp-procedure-failed"]
check(not failed, f"no RACP procedure failed on the meter: {failed}")

text = "\n".join(lines)
print(text)
(work / "summary.txt").write_text(text + "\n")
sys.exit(1 if failures else 0)
