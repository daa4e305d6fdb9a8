#!/usr/bin/env python3
"""An independent reading of the Tether link protocol, for checking the firmware fixtures.

Written from docs/specs/link-protocol.md alone (standard library only; it imports nothing from Sources/), so that a bug
made the same way in LinkProtocol's encoder and decoder, or a fixture regenerated with such a bug, cannot pass:
the transcripts' bytes must mean what the spec says they mean, whatever the Swift codec thinks.

    linkspec.py check [DIR]          every DIR/*.transcript (default: this file's parent's parent) against the spec,
                                     against its hand-written NAME.spec.json, and against DIR/SHA256SUMS; exit 1 on
                                     any failure, with one line per finding
    linkspec.py facts FILE.transcript
                                     what the bytes say (device, events, gateway frames, ...), as JSON: the facts a
                                     NAME.spec.json states, for reading and reviewing one
    linkspec.py encode NAME FIELDS-JSON [VERSION [SEQ]]
                                     one device or gateway frame built from its §7 fields, e.g.
                                     encode HIT_EVENT '{"eventSeq":0,"bootCounter":1,"ticks":1000,"durationMs":700,"intensity":40}'
    linkspec.py sums [DIR]           prints SHA256SUMS for DIR's transcripts (review the diff before committing it)

The checks (each cites its section):
- every frame in both directions is re-encoded by this file's encoder from its decoded fields and must give back
  the recorded bytes exactly (§4, §7); the gateway's writes must all be valid frames (no fault touches them);
- the device speaks only after HELLO (§2.2); HELLO has version 1 in its header (§6.2); the device chooses the
  highest common version (§6.1) and every later frame of both sides carries it;
- sequence numbers (§5.1): the gateway's new frames count up from 0 per connection, a retransmission reuses its
  number with RETRANSMIT set, TIME_SYNC_REQUEST is never retransmitted (§8.7); the device's unreliable frames carry
  its next reliable number without consuming it;
- ACKs (§7.3, §8.2, §8.3): they cover only reliable frames the gateway had received on that connection, never move
  back, and an event is ACKed no sooner than the store latency after it first arrived; in a delivery scenario every
  event the device sent is covered by an ACK the device received;
- NACKs (§10): badCRC / truncated name a damaged frame the gateway saw, unknownType an unknown type the device
  sent, and every reliable unknown type is NACKed (§6.6); SET_CONFIG values are in range (§7.11);
- event sequences count per boot from 0 without gaps (§7.5); anchors are one per time-sync burst that got an
  answer (§9.3), counted per boot.
"""
import datetime
import glob
import hashlib
import json
import os
import struct
import sys

MAGIC = 0x54
RETRANSMIT = 0x01
# §7: type code -> name. Bit 7 set = unreliable (§5.1).
TYPES = {0x01: "HELLO", 0x02: "DEVICE_INFO", 0x83: "ACK", 0x84: "NACK", 0x10: "HIT_EVENT", 0x11: "BATTERY_STATUS",
         0x12: "SLEEP", 0x20: "TIME_SYNC_REQUEST", 0xA1: "TIME_SYNC_RESPONSE", 0x30: "GET_CONFIG",
         0x31: "CONFIG_DATA", 0x32: "SET_CONFIG"}
CODES = {name: code for code, name in TYPES.items()}
DEVICE_TYPES = {"DEVICE_INFO", "NACK", "HIT_EVENT", "BATTERY_STATUS", "SLEEP", "TIME_SYNC_RESPONSE", "CONFIG_DATA"}
GATEWAY_TYPES = {"HELLO", "ACK", "NACK", "TIME_SYNC_REQUEST", "GET_CONFIG", "SET_CONFIG"}
# §10
REASONS = {1: "badCRC", 2: "unknownType", 3: "unsupportedVersion", 4: "malformed", 5: "busy", 6: "storageFull",
           7: "outOfWindow", 8: "truncated", 9: "invalidValue"}
# §7.7
SLEEP_REASONS = {1: "idle", 2: "lowBattery", 3: "userRequest", 4: "schedule"}
# §7.11: key -> (name, width, low, high)
SETTINGS = {1: ("sensitivity", 1, 1, 10), 2: ("ledBrightness", 1, 0, 100), 3: ("hapticFeedback", 1, 0, 1),
            4: ("sleepTimeoutSeconds", 2, 10, 3600), 5: ("dailyLimit", 2, 0, 1000)}
STALL = 0.5  # §3.4


class SpecError(Exception):
    pass


def crc16(data):
    """§4.3 CRC-16/IBM-3740: poly 0x1021, init 0xFFFF, not reflected, no final XOR."""
    crc = 0xFFFF
    for byte in data:
        crc ^= byte << 8
        for _ in range(8):
            crc = ((crc << 1) ^ 0x1021) if crc & 0x8000 else crc << 1
            crc &= 0xFFFF
    return crc


assert crc16(b"123456789") == 0x29B1  # §4.3 check value


def reliable(type_):
    return type_ & 0x80 == 0  # §5.1


# --- Frames (§4) -----------------------------------------------------------------------------------------------

def encode_frame(type_, payload, version=1, seq=0, flags=0):
    if len(payload) > 240:
        raise SpecError("payload longer than 240 bytes (§4)")
    head = struct.pack("<BBBBHB", MAGIC, version, type_, flags, seq, len(payload)) + bytes(payload)
    return head + struct.pack("<H", crc16(head))


class Frame:
    def __init__(self, raw, at):
        self.raw = bytes(raw)
        self.at = at
        _, self.version, self.type, self.flags, self.seq, length = struct.unpack_from("<BBBBHB", raw)
        self.payload = self.raw[7:7 + length]
        self.name = TYPES.get(self.type)
        self.retransmit = bool(self.flags & RETRANSMIT)


class Damaged:
    """Bytes that began like a frame but were not one: a bad CRC (§4.3) or a stalled / cut partial (§3.4)."""
    def __init__(self, kind, seq, at):
        self.kind, self.seq, self.at = kind, seq, at


class StreamReader:
    """§3: frames span ATT values and values hold several frames; resynchronise one byte at a time (§3.3)."""
    def __init__(self):
        self.buffer = bytearray()
        self.last = None
        self.junk = 0

    def feed(self, value, at):
        out = []
        if self.buffer and self.last is not None and at - self.last > STALL + 1e-9:
            out.extend(self.flush(self.last + STALL))
        self.buffer.extend(value)
        self.last = at
        while self.buffer:
            if self.buffer[0] != MAGIC:
                del self.buffer[0]
                self.junk += 1
                continue
            if len(self.buffer) < 7:
                break
            length = self.buffer[6]
            if length > 240:
                del self.buffer[0]
                self.junk += 1
                continue
            if len(self.buffer) < 9 + length:
                break
            raw = bytes(self.buffer[:9 + length])
            if struct.unpack_from("<H", raw, 7 + length)[0] != crc16(raw[:7 + length]):
                out.append(Damaged("badCRC", struct.unpack_from("<H", raw, 4)[0], at))
                del self.buffer[0]
                self.junk += 1
                continue
            out.append(Frame(raw, at))
            del self.buffer[:9 + length]
        return out

    def flush(self, at):
        out = []
        if len(self.buffer) >= 7:
            out.append(Damaged("truncated", struct.unpack_from("<H", self.buffer, 4)[0], at))
        self.junk += len(self.buffer)
        self.buffer.clear()
        return out


# --- Messages (§7): decode to plain dicts, and encode them back ----------------------------------------------------

def tlvs_decode(data):
    settings, unknown, at = {}, [], 0
    while at < len(data):
        if at + 2 > len(data) or at + 2 + data[at + 1] > len(data):
            raise SpecError("TLV record runs past the payload (§7.11)")
        key, length = data[at], data[at + 1]
        value = bytes(data[at + 2:at + 2 + length])
        if key in SETTINGS and length == SETTINGS[key][1]:
            settings[SETTINGS[key][0]] = int.from_bytes(value, "little")
        else:
            unknown.append([key, value.hex()])
        at += 2 + length
    return settings, unknown


def tlvs_encode(settings, unknown):
    out = bytearray()
    for key, (name, width, _, _) in SETTINGS.items():
        if name in settings:
            out += bytes([key, width]) + settings[name].to_bytes(width, "little")
    for key, value in unknown:
        value = bytes.fromhex(value)
        out += bytes([key, len(value)]) + value
    return bytes(out)


def decode_message(frame):
    """The fields of §7 for `frame`; raises SpecError when the payload is shorter than its layout."""
    p, name, v = frame.payload, frame.name, frame.version

    def need(size):
        if len(p) < size:
            raise SpecError(f"{name} payload {len(p)} bytes, layout needs {size}")
    if name == "HELLO":
        need(3)
        return {"minVersion": p[0], "maxVersion": p[1], "window": p[2]}
    if name == "DEVICE_INFO":
        need(11)
        hw, major, minor, patch, boot, caps, lo, hi, n = struct.unpack_from("<BBBBHHBBB", p)
        need(11 + n)
        return {"hardwareRevision": hw, "firmware": f"{major}.{minor}.{patch}", "bootCounter": boot,
                "capabilities": caps, "minVersion": lo, "maxVersion": hi, "serial": p[11:11 + n].decode("ascii")}
    if name == "ACK":
        need(6)
        through, selective = struct.unpack_from("<HI", p)
        return {"through": through, "selective": selective}
    if name == "NACK":
        need(3)
        seq, reason = struct.unpack_from("<HB", p)
        return {"seq": seq, "reason": REASONS.get(reason, f"reason{reason}"), "code": reason, "detail": p[3:].hex()}
    if name == "HIT_EVENT":
        if v >= 2:  # §6.7: version 2 widened the event sequence to 32 bits
            need(13)
            seq, boot, ticks, duration, intensity = struct.unpack_from("<IHIHB", p)
        else:
            need(11)
            seq, boot, ticks, duration, intensity = struct.unpack_from("<HHIHB", p)
        return {"eventSeq": seq, "bootCounter": boot, "ticks": ticks, "durationMs": duration, "intensity": intensity}
    if name == "BATTERY_STATUS":
        need(4)
        mv, percent, flags = struct.unpack_from("<HBB", p)
        return {"millivolts": mv, "percent": percent, "charging": bool(flags & 1)}
    if name == "SLEEP":
        need(5)
        reason, wake = struct.unpack_from("<BI", p)
        return {"reason": SLEEP_REASONS.get(reason, f"reason{reason}"), "code": reason,
                "wakeAfterSeconds": None if wake == 0xFFFFFFFF else wake}
    if name in ("TIME_SYNC_REQUEST", "GET_CONFIG"):
        return {}
    if name == "TIME_SYNC_RESPONSE":
        need(12)
        req, boot, rx, tx = struct.unpack_from("<HHII", p)
        return {"requestSeq": req, "bootCounter": boot, "rxTicks": rx, "txTicks": tx}
    if name in ("CONFIG_DATA", "SET_CONFIG"):
        need(4)
        settings, unknown = tlvs_decode(p[4:])
        return {"configVersion": struct.unpack_from("<I", p)[0], "settings": settings, "unknown": unknown}
    return {"payload": p.hex()}  # an unknown type: only the header means anything (§4.2, §6.6)


def encode_message(name, fields, version):
    """The payload of §7 for a message; the inverse of decode_message (it can produce a device's bytes)."""
    f = fields
    if name == "HELLO":
        return bytes([f["minVersion"], f["maxVersion"], f["window"]])
    if name == "DEVICE_INFO":
        major, minor, patch = (int(x) for x in f["firmware"].split("."))
        serial = f["serial"].encode("ascii")
        return struct.pack("<BBBBHHBBB", f["hardwareRevision"], major, minor, patch, f["bootCounter"],
                           f["capabilities"], f["minVersion"], f["maxVersion"], len(serial)) + serial
    if name == "ACK":
        return struct.pack("<HI", f["through"], f["selective"])
    if name == "NACK":
        return struct.pack("<HB", f["seq"], f["code"]) + bytes.fromhex(f["detail"])
    if name == "HIT_EVENT":
        layout = "<IHIHB" if version >= 2 else "<HHIHB"
        return struct.pack(layout, f["eventSeq"], f["bootCounter"], f["ticks"], f["durationMs"], f["intensity"])
    if name == "BATTERY_STATUS":
        return struct.pack("<HBB", f["millivolts"], f["percent"], 1 if f["charging"] else 0)
    if name == "SLEEP":
        return struct.pack("<BI", f["code"], 0xFFFFFFFF if f["wakeAfterSeconds"] is None else f["wakeAfterSeconds"])
    if name in ("TIME_SYNC_REQUEST", "GET_CONFIG"):
        return b""
    if name == "TIME_SYNC_RESPONSE":
        return struct.pack("<HHII", f["requestSeq"], f["bootCounter"], f["rxTicks"], f["txTicks"])
    if name in ("CONFIG_DATA", "SET_CONFIG"):
        return struct.pack("<I", f["configVersion"]) + tlvs_encode(f["settings"], f["unknown"])
    return bytes.fromhex(f["payload"])


# --- Transcripts (format: Firmware-fixtures/README.md) ------------------------------------------------------------

def parse_transcript(path):
    header, entries, end = {}, [], None
    with open(path, encoding="utf-8") as file:
        for number, line in enumerate(file, 1):
            line = line.rstrip("\n")
            if not line or line.startswith("#"):
                continue
            words = line.split(" ")
            if words[0] in ("transcript", "firmware", "start", "store-latency-ms"):
                header[words[0]] = words[1]
                continue
            at = float(words[0])
            if words[1] in ("D>G", "G>D"):
                entries.append((at, words[1], bytes.fromhex("".join(words[2:]))))
            elif words[1] == "connect":
                entries.append((at, "connect", int(words[2].split("=")[1])))
            elif words[1] == "store-full":
                entries.append((at, "store-full", int(words[2].split("=")[1]) / 1000))
            elif words[1] == "disconnect":
                entries.append((at, "disconnect", None))
            elif words[1] == "end":
                end = at
            else:
                raise SpecError(f"{path}:{number}: unknown line {line!r}")
    if header.get("transcript") != "1" or end is None:
        raise SpecError(f"{path}: not a transcript 1 file with an end line")
    return header, entries, end


class Connection:
    def __init__(self, number, mtu, at):
        self.number, self.mtu, self.at = number, mtu, at
        self.device = []    # Frame or Damaged, from D>G
        self.gateway = []   # Frame or Damaged, from G>D


def read_connections(entries):
    connections, current, readers = [], None, None
    store_full = []
    for at, kind, data in entries:
        if kind == "connect":
            current = Connection(len(connections) + 1, data, at)
            connections.append(current)
            readers = {"D>G": StreamReader(), "G>D": StreamReader()}
        elif kind == "disconnect":
            # §11: disconnection discards the receive buffer
            current.device.extend(readers["D>G"].flush(at))
            current.gateway.extend(readers["G>D"].flush(at))
            current.gatewayJunk = readers["G>D"].junk
            current = None
        elif kind == "store-full":
            store_full.append((at, at + data))
        else:
            if current is None:
                raise SpecError(f"{kind} value at {at:.6f} outside a connection")
            target = current.device if kind == "D>G" else current.gateway
            target.extend(readers[kind].feed(data, at))
    if current is not None:
        current.device.extend(readers["D>G"].flush(float("inf")))
        current.gateway.extend(readers["G>D"].flush(float("inf")))
        current.gatewayJunk = readers["G>D"].junk
    return connections, store_full


def serial_before(a, b):
    return 0 < (b - a) % 65536 < 32768  # §5.2


def compact(frame, fields):
    """One gateway frame as a short line for NAME.spec.json."""
    rt = " (retransmit)" if frame.retransmit else ""
    name = frame.name or f"type 0x{frame.type:02x}"
    if frame.name == "HELLO":
        return f"#{frame.seq} HELLO versions {fields['minVersion']}-{fields['maxVersion']} window {fields['window']}{rt}"
    if frame.name == "ACK":
        selective = f" +0x{fields['selective']:x}" if fields["selective"] else ""
        return f"#{frame.seq} ACK through {fields['through']}{selective}{rt}"
    if frame.name == "NACK":
        detail = f" detail {fields['detail']}" if fields["detail"] else ""
        return f"#{frame.seq} NACK {fields['seq']} {fields['reason']}{detail}{rt}"
    if frame.name == "SET_CONFIG":
        return f"#{frame.seq} SET_CONFIG v{fields['configVersion']} {json.dumps(fields['settings'], sort_keys=True)}{rt}"
    return f"#{frame.seq} {name}{rt}"


# --- The checks ----------------------------------------------------------------------------------------------------

def analyse(path):
    """Reads one transcript by the spec alone; returns (facts, problems)."""
    header, entries, end = parse_transcript(path)
    latency = int(header["store-latency-ms"]) / 1000
    connections, store_full = read_connections(entries)
    problems = []

    def problem(connection, at, text):
        problems.append(f"connection {connection.number} at {at:.6f}: {text}")

    facts = {"firmware": header["firmware"], "connections": len(connections), "device": None, "events": [],
             "battery": [], "sleeps": [], "configData": [], "deviceNacks": [], "gatewayFrames": [],
             "gatewayNacks": [], "anchorsPerBoot": {}, "unknownTypes": [], "damagedDeviceFrames": 0, "setConfig": []}
    events = {}            # (boot, seq) -> (ticks, duration, intensity, first arrival)
    acked_events = set()
    negotiated = None
    repeats = 0
    for c in connections:
        gateway_frames = [f for f in c.gateway if isinstance(f, Frame)]
        for damaged in (f for f in c.gateway if isinstance(f, Damaged)):
            problem(c, damaged.at, f"the gateway wrote a damaged frame ({damaged.kind}, seq {damaged.seq})")
        if getattr(c, "gatewayJunk", 0):
            problem(c, c.at, "the gateway's writes hold bytes that are not frames")
        lines = []
        hello = None
        version = None
        received = {}        # reliable seq -> frame (the gateway had it, CRC good)
        damaged_seqs = set()
        unknown_reliable = {}
        next_gateway_seq = 0
        gateway_seqs = {}    # seq -> type, for retransmissions
        requests = {}        # TIME_SYNC_REQUEST seq -> arrival at the device
        answered = set()
        last_through = None
        device_frames = [f for f in c.device if isinstance(f, Frame)]
        facts["damagedDeviceFrames"] += sum(1 for f in c.device if isinstance(f, Damaged))
        for f in c.device:
            if isinstance(f, Damaged):
                damaged_seqs.add(f.seq)
        first_gateway = gateway_frames[0].at if gateway_frames else None
        if device_frames and (first_gateway is None or device_frames[0].at <= first_gateway):
            problem(c, device_frames[0].at, "the device spoke before it received HELLO (§2.2)")
        # Merge both directions by time: a G>D line is when the device received it, a D>G line when the gateway did.
        timeline = sorted([(f.at, 1, f) for f in gateway_frames] + [(f.at, 0, f) for f in device_frames],
                          key=lambda x: (x[0], x[1]))
        for at, from_gateway, f in timeline:
            try:
                fields = decode_message(f)
            except SpecError as error:
                problem(c, at, f"{'G>D' if from_gateway else 'D>G'} #{f.seq}: {error}")
                continue
            # §4, §7: this file's encoder must give back the recorded bytes.
            if f.name is not None:
                again = encode_frame(f.type, encode_message(f.name, fields, f.version), f.version, f.seq, f.flags)
                if again != f.raw:
                    problem(c, at, f"{f.name} #{f.seq} does not re-encode to its bytes: {f.raw.hex()} vs {again.hex()}")
            if from_gateway:
                if f.name not in GATEWAY_TYPES:
                    problem(c, at, f"the gateway wrote {f.name or hex(f.type)}, not a gateway message (§7)")
                lines.append(compact(f, fields))
                if f.name == "HELLO":
                    if f.version != 1:
                        problem(c, at, f"HELLO carries version {f.version} in its header (§6.2: always 1)")
                    if not (1 <= fields["window"] <= 32 and fields["minVersion"] <= fields["maxVersion"]):
                        problem(c, at, f"HELLO fields out of range: {fields}")
                    hello = fields
                elif version is not None and f.version != version:
                    problem(c, at, f"{f.name} carries version {f.version}, negotiated {version} (§6.1)")
                # §5.1, §8.7: new frames count up from 0; a retransmission reuses a number with the flag set.
                if f.retransmit:
                    if gateway_seqs.get(f.seq) != f.type or f.name == "TIME_SYNC_REQUEST":
                        problem(c, at, f"retransmitted {f.name} #{f.seq} repeats no earlier request (§8.7)")
                else:
                    if f.seq in gateway_seqs:
                        problem(c, at, f"{f.name} reuses #{f.seq} without RETRANSMIT (§5.1)")
                    elif f.seq != next_gateway_seq and not LOSSY_WRITES.get(path):
                        problem(c, at, f"{f.name} takes #{f.seq}, the next number is {next_gateway_seq} (§5.1)")
                    next_gateway_seq = (f.seq + 1) % 65536
                    gateway_seqs[f.seq] = f.type
                if f.name == "TIME_SYNC_REQUEST":
                    requests[f.seq] = at
                elif f.name == "ACK":
                    through, selective = fields["through"], fields["selective"]
                    covered = set()
                    if through != 65535 or received:
                        # everything from the connection's first reliable frame through `through`
                        covered |= {s for s in received if not serial_before(through, s)}
                        missing = [s for s in range(0, through + 1) if s not in received] if through != 65535 else []
                        if missing:
                            problem(c, at, f"ACK through {through} covers #{missing[:5]} the gateway never received (§7.3)")
                    for bit in range(32):
                        if selective >> bit & 1:
                            s = (through + 1 + bit) % 65536
                            if s not in received:
                                problem(c, at, f"ACK selective bit {bit} covers #{s}, never received (§7.3)")
                            covered.add(s)
                    if last_through is not None and serial_before(through, last_through):
                        problem(c, at, f"ACK through {through} moves back from {last_through} (§7.3)")
                    last_through = through
                    for s in covered:
                        frame = received.get(s)
                        if frame is not None and frame.name == "HIT_EVENT":
                            h = decode_message(frame)
                            key = (h["bootCounter"], h["eventSeq"])
                            first = events[key][3]
                            # §8.2: ACKed only after a durable store, which takes the store latency
                            if at + 1e-9 < first + latency:
                                problem(c, at, f"event {key} ACKed {at - first:.6f} s after it first arrived, "
                                               f"sooner than the store latency {latency} s (§8.2)")
                            acked_events.add(key)
                elif f.name == "NACK":
                    facts["gatewayNacks"].append([fields["seq"], fields["reason"]])
                    if fields["reason"] in ("badCRC", "truncated") and fields["seq"] not in damaged_seqs:
                        problem(c, at, f"NACK {fields['reason']} names #{fields['seq']}, no damaged frame had it (§4.3, §3.4)")
                    if fields["reason"] == "unknownType" and fields["seq"] not in unknown_reliable and \
                            fields["seq"] not in {d.seq for d in device_frames if d.name is None}:
                        problem(c, at, f"NACK unknownType names #{fields['seq']}, no unknown type had it (§6.6)")
                    unknown_reliable.pop(fields["seq"], None)
                elif f.name == "SET_CONFIG":
                    entry = {"configVersion": fields["configVersion"], "settings": fields["settings"]}
                    if entry not in facts["setConfig"]:
                        facts["setConfig"].append(entry)
                    for key, value in fields["settings"].items():
                        spec = next(s for s in SETTINGS.values() if s[0] == key)
                        if not spec[2] <= value <= spec[3]:
                            problem(c, at, f"SET_CONFIG {key}={value} out of range (§7.11)")
                    if fields["unknown"]:
                        problem(c, at, f"SET_CONFIG carries unknown or malformed records {fields['unknown']}")
                continue
            # device frame
            if f.name is not None and f.name not in DEVICE_TYPES:
                problem(c, at, f"the device sent {f.name}, not a device message (§7)")
            if f.name == "DEVICE_INFO":
                if hello is None:
                    problem(c, at, "DEVICE_INFO before HELLO (§2.2)")
                else:
                    common = range(max(hello["minVersion"], fields["minVersion"]), min(hello["maxVersion"], fields["maxVersion"]) + 1)
                    if not common or f.version != max(common):
                        problem(c, at, f"DEVICE_INFO in version {f.version}; §6.1 chooses {max(common) if common else None}")
                    version = f.version
                    negotiated = version
                info = {k: fields[k] for k in ("serial", "firmware", "hardwareRevision", "minVersion", "maxVersion")}
                info["negotiatedVersion"] = f.version
                if facts["device"] is None:
                    facts["device"] = dict(info, bootCounters=[])
                elif {k: v for k, v in facts["device"].items() if k != "bootCounters"} != info:
                    problem(c, at, f"DEVICE_INFO changed: {info}")
                if fields["bootCounter"] not in facts["device"]["bootCounters"]:
                    facts["device"]["bootCounters"].append(fields["bootCounter"])
                if not 1 <= len(fields["serial"]) <= 32:
                    problem(c, at, "serial length outside 1…32 (§7.2)")
            elif version is not None and f.version != version:
                problem(c, at, f"device {f.name} carries version {f.version}, negotiated {version} (§6.1)")
            # §5.1: the device's unreliable frames carry its next reliable number
            # §5.1: an unreliable frame carries the number the device's next reliable frame will take, so it is
            # past every reliable number already seen. (A gap in the reliable numbers is a frame lost or damaged on
            # the way; the gateway's ACKs are what must respect them, and they are checked above.)
            if not reliable(f.type) and received and f.seq <= max(received):
                problem(c, at, f"unreliable {f.name or hex(f.type)} carries #{f.seq}, but #{max(received)} was already sent (§5.1)")
            if reliable(f.type):
                if f.seq in received:
                    repeats += 1
                received.setdefault(f.seq, f)
            if f.name == "HIT_EVENT":
                if fields["intensity"] > 100:
                    problem(c, at, f"intensity {fields['intensity']} > 100 (§7.5)")
                key = (fields["bootCounter"], fields["eventSeq"])
                value = (fields["ticks"], fields["durationMs"], fields["intensity"])
                if key in events and events[key][:3] != value:
                    problem(c, at, f"event {key} sent twice with different contents")
                events.setdefault(key, value + (at,))
            elif f.name == "BATTERY_STATUS":
                if fields not in facts["battery"]:
                    facts["battery"].append(fields)
            elif f.name == "SLEEP":
                entry = {"reason": fields["reason"], "wakeAfterSeconds": fields["wakeAfterSeconds"]}
                if entry not in facts["sleeps"]:
                    facts["sleeps"].append(entry)
            elif f.name == "CONFIG_DATA":
                entry = {"configVersion": fields["configVersion"], "settings": fields["settings"]}
                if entry not in facts["configData"]:
                    facts["configData"].append(entry)
            elif f.name == "TIME_SYNC_RESPONSE":
                if fields["requestSeq"] not in requests:
                    problem(c, at, f"TIME_SYNC_RESPONSE answers #{fields['requestSeq']}, never requested (§7.9)")
                else:
                    answered.add((fields["requestSeq"], fields["bootCounter"]))
            elif f.name == "NACK":
                facts["deviceNacks"].append([fields["seq"], fields["reason"], fields["detail"]])
            elif f.name is None:
                facts["unknownTypes"].append(f"0x{f.type:02x}")
                if reliable(f.type):
                    unknown_reliable[f.seq] = f
        for seq, f in unknown_reliable.items():
            if not LOSSY_WRITES.get(path):
                problem(c, f.at, f"unknown reliable type 0x{f.type:02x} #{seq} was never NACKed unknownType (§6.6)")
        # §9.1, §9.3: requests 100 ms apart form a burst; a burst with an answer gives one anchor of that boot.
        bursts, previous = [], None
        for seq, at in sorted(requests.items(), key=lambda x: x[1]):
            if previous is None or at - previous > 2.0:
                bursts.append(set())
            bursts[-1].add(seq)
            previous = at
        for burst in bursts:
            boots = {boot for seq, boot in answered if seq in burst}
            for boot in boots:
                facts["anchorsPerBoot"][str(boot)] = facts["anchorsPerBoot"].get(str(boot), 0) + 1
        facts["gatewayFrames"].append(lines)
    facts["events"] = [[b, s, *events[(b, s)][:3]] for b, s in sorted(events)]
    facts["allEventsAcknowledged"] = bool(events) and set(events) <= acked_events
    # §7.5: event sequences count per boot from 0
    for boot in {b for b, _ in events}:
        seqs = sorted(s for b, s in events if b == boot)
        if seqs != list(range(len(seqs))):
            problems.append(f"boot {boot}: event sequences {seqs[:3]}… do not count from 0 without gaps (§7.5)")
    # §9.6: a DEVICE_INFO with another boot counter is a reboot
    boots = facts["device"]["bootCounters"] if facts["device"] else []
    facts["reboots"] = [[a, b] for a, b in zip(boots, boots[1:])]
    facts["reportedConfigVersion"] = facts["configData"][-1]["configVersion"] if facts["configData"] else None
    # a reliable frame the gateway received twice on one connection (a retransmission or a duplicated value)
    facts["repeatsExpected"] = repeats > 0
    facts["storageRefusalsExpected"] = bool(store_full) and ["storageFull"] == sorted({r for _, r in facts["gatewayNacks"] if r == "storageFull"})
    facts["storeFull"] = [[round(a, 6), round(b, 6)] for a, b in store_full]
    if negotiated is None and facts["device"] is not None:
        problems.append("no DEVICE_INFO was accepted")
    return facts, problems


# Transcripts whose gateway writes were lost on the way (the lost-ack scenario drops G>D values): their write
# sequence numbers may have gaps. Filled from NAME.spec.json's "gatewayWritesLost".
LOSSY_WRITES = {}


def compare(spec, facts):
    """The hand-written statement against what the bytes say."""
    problems = []
    for key in ("firmware", "connections", "device", "battery", "sleeps", "configData", "deviceNacks",
                "gatewayNacks", "anchorsPerBoot", "unknownTypes", "allEventsAcknowledged", "gatewayFrames"):
        if key not in spec:
            problems.append(f"spec.json states no {key!r}")
        elif spec[key] != facts[key]:
            problems.append(f"{key}: the spec says {json.dumps(spec[key])[:400]}, the bytes say {json.dumps(facts[key])[:400]}")
    events = spec.get("events", {})
    byboot = {}
    for boot, seq, *_ in facts["events"]:
        byboot.setdefault(str(boot), []).append(seq)
    counts = {boot: len(seqs) for boot, seqs in byboot.items()}
    if events.get("countPerBoot") != counts:
        problems.append(f"events per boot: the spec says {events.get('countPerBoot')}, the bytes say {counts}")
    if events.get("list") != facts["events"]:
        problems.append("events: the list in spec.json differs from the bytes' events "
                        f"(first difference near {next((i for i, (a, b) in enumerate(zip(events.get('list') or [], facts['events'])) if a != b), 'the end')})")
    # The scenario's hits: each boot's events, in sequence order, were recorded at the scheduled instants, so their
    # tick differences match the schedule within a crystal's tolerance (§9.5: 200 ppm) and a tick's rounding.
    schedule = {}
    for segment in spec.get("hitSchedule", []):
        times = [segment["fromSeconds"] + i * segment["everySeconds"] for i in range(segment["count"])]
        schedule.setdefault(segment["boot"], []).extend(times)
    if spec.get("expectsDelivery", True):
        for boot in set(schedule) | {b for b, *_ in facts["events"]}:
            ticks = [t for b, s, t, *_ in facts["events"] if b == boot]
            times = schedule.get(boot, [])
            if len(ticks) != len(times):
                problems.append(f"boot {boot}: the schedule has {len(times)} hits, the bytes {len(ticks)} events")
                continue
            for i in range(1, len(ticks)):
                expected = (times[i] - times[0]) * 1000
                if abs((ticks[i] - ticks[0]) - expected) > expected * 200e-6 + 2:
                    problems.append(f"boot {boot} event {i}: {ticks[i] - ticks[0]} ticks after the first, the schedule says {expected:.0f} ms")
                    break
    # §7.11: the gateway sends SET_CONFIG exactly for the settings it was told to want
    desired = [spec["gatewayDesiredConfig"]] if spec.get("gatewayDesiredConfig") else []
    if facts["setConfig"] != desired:
        problems.append(f"SET_CONFIG: the spec's gatewayDesiredConfig is {desired}, the gateway wrote {facts['setConfig']}")
    for key in ("reboots", "reportedConfigVersion", "repeatsExpected", "storageRefusalsExpected"):
        have = facts[key]
        want = spec.get(key, False if key.endswith("Expected") else None)
        if key.endswith("Expected") and not want:
            continue  # stated only where the scenario is about it
        if have != want:
            problems.append(f"{key}: the spec says {want}, the bytes say {have}")
    return problems


def sha256(path):
    with open(path, "rb") as file:
        return hashlib.sha256(file.read()).hexdigest()


def sums(directory):
    return "".join(f"{sha256(p)}  {os.path.basename(p)}\n" for p in sorted(glob.glob(os.path.join(directory, "*.transcript"))))


def check(directory):
    failures = []
    transcripts = sorted(glob.glob(os.path.join(directory, "*.transcript")))
    if not transcripts:
        failures.append(f"no transcripts in {directory}")
    sums_path = os.path.join(directory, "SHA256SUMS")
    pinned = {}
    if os.path.exists(sums_path):
        for line in open(sums_path, encoding="utf-8"):
            digest, name = line.split()
            pinned[name] = digest
    else:
        failures.append("SHA256SUMS is missing")
    for path in transcripts:
        name = os.path.basename(path)
        if pinned.get(name) != sha256(path):
            failures.append(f"{name}: sha256 {sha256(path)} is not the pinned {pinned.get(name)} "
                            "(a changed transcript is a reviewed change: update SHA256SUMS in the same commit, say why)")
        spec_path = path[:-len(".transcript")] + ".spec.json"
        if not os.path.exists(spec_path):
            failures.append(f"{name}: no {os.path.basename(spec_path)}")
            continue
        with open(spec_path, encoding="utf-8") as file:
            spec = json.load(file)
        LOSSY_WRITES[path] = spec.get("gatewayWritesLost", False)
        try:
            facts, problems = analyse(path)
        except (SpecError, ValueError, KeyError, IndexError, struct.error) as error:
            failures.append(f"{name}: unreadable: {error!r}")
            continue
        problems += compare(spec, facts)
        if spec.get("expectsDelivery", True) and not facts["allEventsAcknowledged"]:
            problems.append("a delivery scenario in which not every event was ACKed to the device")
        failures += [f"{name}: {p}" for p in problems[:20]]
        if len(problems) > 20:
            failures.append(f"{name}: … and {len(problems) - 20} more problems")
        print(f"{name}: {len(facts['events'])} events, {sum(map(len, facts['gatewayFrames']))} gateway frames, "
              f"{len(problems)} problems")
    for name in set(pinned) - {os.path.basename(p) for p in transcripts}:
        failures.append(f"SHA256SUMS pins {name}, which is missing")
    for failure in failures:
        print("FAIL " + failure)
    print(f"linkspec: {len(transcripts)} transcripts, {len(failures)} failures")
    return 1 if failures else 0


def main(argv):
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    if len(argv) >= 2 and argv[1] == "check":
        return check(argv[2] if len(argv) > 2 else here)
    if len(argv) == 3 and argv[1] == "facts":
        spec_path = argv[2][:-len(".transcript")] + ".spec.json"
        if os.path.exists(spec_path):
            with open(spec_path, encoding="utf-8") as file:
                LOSSY_WRITES[argv[2]] = json.load(file).get("gatewayWritesLost", False)
        facts, problems = analyse(argv[2])
        facts["problems"] = problems
        print(json.dumps(facts, indent=1))
        return 1 if problems else 0
    if len(argv) in (4, 5, 6) and argv[1] == "encode":
        # encode NAME FIELDS-JSON [VERSION [SEQ]]: one frame's bytes, as a transcript line writes them
        version = int(argv[4]) if len(argv) > 4 else 1
        seq = int(argv[5]) if len(argv) > 5 else 0
        frame = encode_frame(CODES[argv[2]], encode_message(argv[2], json.loads(argv[3]), version), version, seq)
        print(frame.hex(" "))
        return 0
    if len(argv) >= 2 and argv[1] == "sums":
        sys.stdout.write(sums(argv[2] if len(argv) > 2 else here))
        return 0
    sys.stderr.write(__doc__)
    return 2


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv))
    except (OSError, SpecError, KeyError, ValueError, TypeError, struct.error) as error:
        # bad input gets a clear error, not a traceback
        sys.stderr.write(f"linkspec.py: {type(error).__name__}: {error}\n")
        sys.exit(2)
