#!/usr/bin/env python3
"""Writes the seed corpus under Fuzz/seeds/ (checked in; rerun only when the input layouts change).

Frames are built here from docs/specs/link-protocol.md (§4, §7) with an independent CRC-16/IBM-3740, so the seeds also
check the Swift encoder's idea of the wire format. Layouts of the inputs are described at the top of each fuzzer.
"""
import os
import struct
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def crc16(data: bytes) -> int:
    crc = 0xFFFF
    for byte in data:
        crc ^= byte << 8
        for _ in range(8):
            crc = ((crc << 1) ^ 0x1021) if crc & 0x8000 else crc << 1
            crc &= 0xFFFF
    return crc


assert crc16(b"123456789") == 0x29B1


def frame(type_, payload=b"", version=1, seq=0, flags=0) -> bytes:
    head = struct.pack("<BBBBHB", 0x54, version, type_, flags, seq, len(payload)) + payload
    return head + struct.pack("<H", crc16(head))


HELLO = frame(0x01, bytes([1, 2, 16]))
DEVICE_INFO = frame(0x02, bytes([3, 2, 4, 1]) + struct.pack("<HH", 41, 0x0F) + bytes([1, 2, 8]) + b"TTH-0001", version=2)
ACK = frame(0x83, struct.pack("<HI", 5, 0b101), seq=3)
NACK = frame(0x84, struct.pack("<HB", 9, 3) + bytes([1, 2]), seq=4)
HIT_V1 = frame(0x10, struct.pack("<HHIHB", 17, 41, 3_600_000, 900, 55), seq=7)
HIT_V2 = frame(0x10, struct.pack("<IHIHB", 70_000, 41, 3_600_000, 900, 55), version=2, seq=8)
BATTERY = frame(0x11, struct.pack("<HBB", 3900, 71, 1), version=2, seq=9)
SLEEP = frame(0x12, struct.pack("<BI", 1, 0xFFFFFFFF), version=2, seq=10)
TIME_SYNC_REQUEST = frame(0x20, seq=11)
TIME_SYNC_RESPONSE = frame(0xA1, struct.pack("<HHII", 11, 41, 1000, 1003), version=2, seq=11)
GET_CONFIG = frame(0x30, seq=12)
TLVS = bytes([1, 1, 6, 2, 1, 80, 3, 1, 1, 4, 2, 0x2C, 0x01, 5, 2, 200, 0, 0x40, 3, 9, 9, 9])
CONFIG_DATA = frame(0x31, struct.pack("<I", 7) + TLVS, version=2, seq=12)
SET_CONFIG = frame(0x32, struct.pack("<I", 8) + TLVS[:6], seq=13)
RETRANSMITTED = frame(0x10, struct.pack("<HHIHB", 17, 41, 3_600_000, 900, 55), seq=7, flags=1)
ALL = [HELLO, DEVICE_INFO, ACK, NACK, HIT_V1, HIT_V2, BATTERY, SLEEP, TIME_SYNC_REQUEST, TIME_SYNC_RESPONSE,
       GET_CONFIG, CONFIG_DATA, SET_CONFIG, RETRANSMITTED]


def frame_seeds():
    """LinkFrameFuzzer: low 4 bits of byte 0 = number of chunk sizes, then the sizes, then the stream."""
    corrupt = bytearray(HIT_V1)
    corrupt[9] ^= 0xFF
    cut = HIT_V2[:12]
    yield "hit-v1", bytes([0]) + HIT_V1
    yield "all-types", bytes([0]) + b"".join(ALL)
    yield "all-types-att20", bytes([1, 20]) + b"".join(ALL)
    yield "all-types-split", bytes([3, 1, 7, 13]) + b"".join(ALL)
    yield "resync", bytes([2, 5, 19]) + b"\x00\x54\x99" + bytes(corrupt) + cut + BATTERY + b"\x54" + CONFIG_DATA


def session_seeds():
    """LinkSessionFuzzer: byte 0 = configuration, then op scripts (see the fuzzer's header comment)."""
    connect = bytes([0x00]) + struct.pack("<H", 247)
    fire = bytes([0x04, 0])  # fire the earliest armed timer at its deadline
    # op 2: device frame — kind, variation, operands, split byte.
    # kind 0 DEVICE_INFO: variation, new boot?, low version choice, high choice, serial choice, split.
    device_info = bytes([0x12, 0, 0, 0, 0, 1, 0, 0])  # versions 1…2 in a version-2 header, TTH-0001
    def hit(delta=1):
        return bytes([0x12, 1, 0, delta]) + struct.pack("<H", 1750) + struct.pack("<H", 900) + bytes([40, 0])
    def time_sync_response():
        return bytes([0x42, 6, 0]) + struct.pack("<H", 5) + bytes([3, 0])
    battery = bytes([0x12, 4, 0]) + struct.pack("<H", 3900) + bytes([71, 0, 0])
    # kind 7 CONFIG_DATA: variation, config version, record count, then key, length choice, value per record, split.
    config = bytes([0x12, 7, 0, 7, 2, 1, 1, 6, 4, 2, 0x2C, 0x01, 0])
    persisted = bytes([0x05, 0])
    disconnect = bytes([0x07])
    # The burst's requests follow each other on the time-sync timer: answer, fire the earliest timer, answer…
    handshake = connect + device_info + persisted + b"".join(time_sync_response() + fire for _ in range(5))
    yield "handshake", bytes([0]) + handshake
    yield "hits", bytes([0]) + handshake + config + persisted + b"".join(hit() for _ in range(6)) + persisted + battery + persisted
    yield "timers", bytes([0x10]) + connect + fire + fire + device_info + config + fire + fire + fire + persisted + fire + fire
    yield "incompatible", bytes([0x04]) + connect + device_info + hit() + fire
    yield "reconnect", bytes([0x01]) + handshake + hit() + disconnect + persisted + connect + device_info + hit(0) + persisted
    # A device clock that barely moves between two bursts 600 s apart, then a hit with absurd ticks: the slope and
    # the estimate leave Int64's range (found by this fuzzer; BootClock now returns no estimate).
    def time_sync_response_at(rx):
        return bytes([0x42, 6, 0x08]) + struct.pack("<H", 0) + struct.pack("<I", rx) + bytes([0, 0])
    absurd_hit = bytes([0x12, 1, 0x08, 1]) + struct.pack("<H", 0) + struct.pack("<I", 0xFFFFFFFF) + struct.pack("<H", 900) + bytes([40, 0])
    yield "absurd-clock", bytes([0x10]) + connect + device_info + time_sync_response_at(1000) + bytes([0x04, 0xFF]) \
        + time_sync_response_at(1001) + absurd_hit
    yield "two-bursts", bytes([0x20]) + handshake + fire + time_sync_response() + time_sync_response() + fire + fire \
        + time_sync_response() + time_sync_response() + hit() + persisted


def dbus_seeds():
    """Marshalled D-Bus messages from GLib's GDBusMessage (an implementation independent of Tether and libdbus),
    in both byte orders: BlueZ's notification shape, a reply with nested containers, an error, and a stream."""
    import gi
    gi.require_version("Gio", "2.0")
    from gi.repository import Gio, GLib

    def blob(message, big_endian=False):
        message.set_serial(7)
        order = Gio.DBusMessageByteOrder.BIG_ENDIAN if big_endian else Gio.DBusMessageByteOrder.LITTLE_ENDIAN
        message.set_byte_order(order)
        return bytes(message.to_blob(Gio.DBusCapabilityFlags.NONE))

    def notification(value):
        message = Gio.DBusMessage.new_signal(
            "/org/bluez/hci0/dev_C0_54_45_00_00_01/service0010/char0013", "org.freedesktop.DBus.Properties",
            "PropertiesChanged")
        message.set_sender(":1.5")
        message.set_body(GLib.Variant("(sa{sv}as)", ("org.bluez.GattCharacteristic1", {
            "Value": GLib.Variant("ay", value), "Notifying": GLib.Variant("b", True)}, [])))
        return message

    call = Gio.DBusMessage.new_method_call("org.bluez", "/", "org.freedesktop.DBus.ObjectManager", "GetManagedObjects")
    call.set_serial(3)
    reply = call.new_method_reply()
    reply.set_body(GLib.Variant("(a{oa{sa{sv}}})", ({"/org/bluez/hci0": {"org.bluez.Adapter1": {
        "Powered": GLib.Variant("b", True), "UUIDs": GLib.Variant("as", ["1800"]),
        "All": GLib.Variant("(nqixtd)", (-1, 2, -3, 4, 5, 6.5))}}},)))
    connect = Gio.DBusMessage.new_method_call("org.bluez", "/", "org.bluez.Device1", "Connect")
    connect.set_serial(9)
    error = connect.new_method_error_literal("org.bluez.Error.Failed", "le-connection-abort-by-local")
    yield "notification-le", blob(notification(bytes(range(40))))
    yield "notification-be", blob(notification(bytes(range(200))), big_endian=True)
    yield "reply-nested", blob(reply)
    yield "error", blob(error)
    yield "stream", blob(notification(b"\x01\x02")) + blob(reply, big_endian=True) + blob(error) + blob(notification(b""))


def transcript_seeds():
    """TranscriptFuzzer: the committed firmware transcripts as they are, plus the start that trapped (issue 12)."""
    fixtures = os.path.join(HERE, "..", "Firmware-fixtures")
    for file in sorted(os.listdir(fixtures)):
        if file.endswith(".transcript"):
            with open(os.path.join(fixtures, file), "rb") as handle:
                yield file[: -len(".transcript")], handle.read()
    yield "start-2263", b"transcript 1\nfirmware 1.4.2\nstart 2263-01-01T00:00:00Z\n0.000000 connect mtu=23\n1.000000 end\n"


def config_seeds():
    """ConfigurationFuzzer: deploy/tether.toml as shipped, and with every commented-out key set."""
    with open(os.path.join(HERE, "..", "deploy", "tether.toml"), "rb") as handle:
        shipped = handle.read()
    yield "tether.toml", shipped
    every_key = b"\n".join(
        line[2:] if line.startswith(b"# ") and b" = " in line and not line.startswith(b"#  ") else line
        for line in shipped.split(b"\n"))
    yield "tether-every-key.toml", every_key


def cbor(value) -> bytes:
    """A minimal definite-length CBOR encoder (RFC 8949 §3, shortest heads) for the seeds below."""
    def head(major, argument):
        if argument < 24:
            return bytes([major << 5 | argument])
        for info, width in ((24, 1), (25, 2), (26, 4), (27, 8)):
            if argument < 1 << (8 * width):
                return bytes([major << 5 | info]) + argument.to_bytes(width, "big")
        raise ValueError(argument)
    if value is False or value is True:
        return bytes([0xF5 if value else 0xF4])
    if value is None:
        return b"\xf6"
    if isinstance(value, int):
        return head(0, value) if value >= 0 else head(1, -1 - value)
    if isinstance(value, bytes):
        return head(2, len(value)) + value
    if isinstance(value, str):
        return head(3, len(value.encode())) + value.encode()
    if isinstance(value, list):
        return head(4, len(value)) + b"".join(cbor(v) for v in value)
    if isinstance(value, dict):
        return head(5, len(value)) + b"".join(cbor(k) + cbor(v) for k, v in value.items())
    raise TypeError(value)


def cbor_seeds():
    """CBORFuzzer: the input is one item. RFC 8949 Appendix A examples (definite and indefinite) and SMP bodies."""
    appendix_a = ["1bffffffffffffffff", "3bffffffffffffffff", "c249010000000000000000", "fb3ff199999999999a", "f97bff",
                  "fa7f7fffff", "f8ff", "d82076687474703a2f2f7777772e6578616d706c652e636f6d", "64f0908591",
                  "98190102030405060708090a0b0c0d0e0f101112131415161718181819", "5f42010243030405ff",
                  "7f657374726561646d696e67ff", "9f018202039f0405ffff", "bf61610161629f0203ffff",
                  "bf6346756ef563416d7421ff", "a56161614161626142616361436164614461656145"]
    for index, hex_item in enumerate(appendix_a):
        yield f"rfc8949-a-{index:02}", bytes.fromhex(hex_item)
    yield "zcbor-upload-answer", b"\xbf" + cbor("rc") + cbor(0) + cbor("off") + cbor(165) + b"\xff"
    yield "image-state", cbor({"images": [{"slot": 0, "version": "1.2.3", "hash": bytes(range(32)), "active": True},
                                          {"image": 0, "slot": 1, "version": "1.3.0", "pending": True}], "splitStatus": 0})
    yield "v2-error", cbor({"err": {"group": 1, "rc": 9}})
    yield "nested", bytes([0x81] * 7) + b"\x9f\xbf\x61\x61\x5f\x41\x00\xff\xff\xff"


def smp_seeds():
    """SMPFuzzer: byte 0 = chunk-size count (low 4 bits) | reassembly (bit 4), byte 1 = write limit, the sizes,
    then notifications. Responses are built here from Zephyr's "SMP Protocol Specification" header layout."""
    def response(group, command, sequence, body, op=3, version=1):
        payload = body if isinstance(body, bytes) else cbor(body)
        return struct.pack(">BBHHBB", version << 3 | op, 0, len(payload), group, sequence, command) + payload
    parameters = response(0, 6, 0, {"buf_size": 256, "buf_count": 4}, op=1)
    uploads = b"".join(response(1, 1, seq, {"off": off}) for seq, off in ((1, 200), (2, 420), (3, 640), (4, 860)))
    last = response(1, 1, 5, {"off": 3000, "match": True})
    echo = response(0, 0, 0, {"r": "fuzz"})
    state = response(1, 0, 2, {"images": [{"slot": 0, "version": "1.0.0", "hash": bytes(32), "confirmed": True}]}, op=1)
    errors = response(1, 1, 3, {"err": {"group": 1, "rc": 9}}) + response(0, 6, 1, {"rc": 8, "rsn": "no"}, op=1, version=0)
    zcbor = response(1, 1, 1, b"\xbf" + cbor("off") + cbor(1000) + b"\xff")
    yield "upload-flow", bytes([0x00, 244]) + parameters + uploads + last
    yield "upload-flow-mtu23", bytes([0x11, 20, 20]) + parameters + uploads + last
    yield "upload-resume", bytes([0x12, 244, 7, 64]) + parameters + zcbor + uploads
    yield "client-answers", bytes([0x03, 100, 1, 5, 30]) + echo + parameters + state + errors
    yield "garbage", bytes([0x00, 100]) + echo[:5] + b"\xe3\x00\x00\x00\x00\x00\x00\x00" + parameters


def smpdevice_seeds():
    """SMPDeviceFuzzer: records of [u16 BE length][datagram]; length 0 is a reset. Requests are built here from Zephyr's
    "SMP Protocol Specification" header layout; the image is an MCUboot header (docs/design.md "Image Format") with a
    64-byte body and a SHA256 TLV over both (as the fuzzer's factory image, version 2.0.0)."""
    import hashlib
    def request(group, command, sequence, body, op=2, version=1):
        payload = cbor(body)
        return struct.pack(">BBHHBB", version << 3 | op, 0, len(payload), group, sequence, command) + payload
    def record(datagram):
        return struct.pack(">H", len(datagram)) + datagram
    reset = struct.pack(">H", 0)
    header = bytes([0x3D, 0xB8, 0xF3, 0x96, 0, 0, 0, 0, 32, 0, 0, 0, 64, 0, 0, 0, 0, 0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0, 0, 0,
                    0, 0]) + bytes(range(64, 128))
    image = header + bytes([0x07, 0x69, 40, 0, 0x10, 0, 32, 0]) + hashlib.sha256(header).digest()
    tlv_hash = hashlib.sha256(header).digest()
    sha = hashlib.sha256(image).digest()
    upload = (record(request(1, 1, 1, {"off": 0, "len": len(image), "sha": sha, "data": image[:60]}))
              + record(request(1, 1, 2, {"off": 60, "data": image[60:]})))
    yield "upload-test-reset-confirm", (upload + record(request(1, 0, 3, {"hash": tlv_hash, "confirm": False})) + reset
                                        + record(request(1, 0, 4, {}, op=0)) + record(request(1, 0, 5, {"confirm": True})) + reset)
    yield "upload-test-revert", upload + record(request(1, 0, 3, {"hash": tlv_hash, "confirm": False})) + reset + reset
    yield "resume-and-wrong-offset", (record(request(1, 1, 1, {"off": 0, "len": len(image), "sha": sha, "data": image[:40]}))
                                      + record(request(1, 1, 2, {"off": 90, "data": image[90:]}))
                                      + record(request(1, 1, 3, {"off": 0, "len": len(image), "sha": sha, "data": image[:40]})))
    yield "os-and-v1", (record(request(0, 0, 1, {"d": "hi"})) + record(request(0, 6, 2, {}, op=0))
                        + record(request(0, 8, 3, {"query": "mode"}, op=0)) + record(request(1, 5, 4, {}, version=0))
                        + record(request(1, 0, 5, {"hash": bytes(32), "confirm": False}, version=0)))


def racp_seeds():
    """RecordAccessFuzzer: byte 0 = configuration, bytes 1-5 = cursor, then op scripts (see the fuzzer's header).
    Responses are GSS §3.178 layouts: 05 00 <count LE16>, 06 00 <request op> <response code>."""
    def setup(cgm=False, count=True, retries=1, limit=8):
        return bytes([(1 if cgm else 0) | (2 if count else 0) | retries << 2 | (limit - 4) << 4])
    def cursor(epoch=0, last=None, fence=None):
        # lastByte: bit 0 = has a last key, the rest picks 0, 1, 100, 65534, 65535 or the uint16 that follows.
        choices = {0: 0, 1: 1, 100: 2, 65534: 3, 65535: 4}
        if last is None:
            head = bytes([epoch, 0]) + struct.pack("<H", 0)
        elif last in choices:
            head = bytes([epoch, 1 | choices[last] << 1]) + struct.pack("<H", 0)
        else:
            head = bytes([epoch, 1 | 5 << 1]) + struct.pack("<H", last)
        return head + (bytes([1]) + struct.pack("<H", fence) if fence is not None else bytes([0]))
    start = bytes([0x07])
    def count(n):
        return bytes([0x02, 0]) + struct.pack("<H", n)
    def record(key):
        return bytes([0x08, 1]) + struct.pack("<H", key)  # 1 ms later
    success = bytes([0x02, 2, 1])
    no_records = bytes([0x02, 2, 0])
    def raw(*values):
        return bytes([0x01, len(values)]) + bytes(values)
    fire = bytes([0x04, 1])
    procedure_in_progress = bytes([0x03, 0, 0])
    disconnect = bytes([0x05])
    def delete(through, epoch_step=0):
        return bytes([0x06, epoch_step]) + struct.pack("<H", through)
    def records(keys):
        return b"".join(record(k) for k in keys)
    yield "backfill", setup() + cursor() + start + count(3) + records([1, 2, 3]) + success
    yield "resume-gap", setup() + cursor(last=100) + start + count(3) + records([101, 103]) + success \
        + records([103]) + success
    yield "reset", setup() + cursor(epoch=1, last=100) + start + count(0) + records([3]) + success + count(3) \
        + records([1, 2, 3]) + success + disconnect + start + records([3]) + success
    yield "wrap", setup() + cursor(last=65534) + start + count(1) + records([65535]) + success + records([4]) \
        + success + count(5) + records([65533, 65534, 65535, 0, 1, 2, 3, 4]) + success
    yield "timeouts", setup(count=False) + cursor(last=7) + start + fire + raw(6, 0, 3, 1) + start \
        + disconnect + start + records([8, 9]) + fire + fire
    yield "busy-in-progress", setup(retries=3) + cursor() + start + procedure_in_progress + fire \
        + raw(6, 0, 4, 0x0A) + fire + count(2) + records([5, 6]) + success
    yield "unsupported", setup() + cursor(last=20) + start + raw(6, 0, 4, 2) + raw(6, 0, 1, 4) + records([1, 21, 22]) \
        + success + records([22]) + success
    yield "delete", setup() + cursor(epoch=2, last=100) + delete(50) + raw(6, 0, 2, 1) + delete(101) + delete(50, 1)
    yield "cgm", setup(cgm=True) + cursor(last=1440) + start + count(3) + records([1445, 1455]) + success \
        + records([1445, 1450, 1455]) + success
    yield "fenced", setup() + cursor(epoch=3, last=5, fence=65535) + start + records([9]) + success + count(4) \
        + records([6, 65535, 7, 8, 9]) + success


# HealthCharacteristicFuzzer's characteristic index (byte 0, low 4 bits), in the fuzzer's order.
HEALTH_KINDS = {"hr": 0, "bp": 1, "icp": 2, "temp": 3, "itemp": 4, "weight": 5, "bodycomp": 6, "plx-spot": 7,
                "plx-cont": 8, "glucose": 9, "context": 10, "cgm": 11}


def mcrf4xx(data: bytes) -> int:
    """CRC-16/MCRF4XX (CGMS §3.11), written here independently of the Swift E2ECRC."""
    crc = 0xFFFF
    for byte in data:
        crc ^= byte
        for _ in range(8):
            crc = (crc >> 1) ^ 0x8408 if crc & 1 else crc >> 1
    return crc


assert mcrf4xx(b"123456789") == 0x6F91


def health_seeds():
    """HealthCharacteristicFuzzer: byte 0 = characteristic index | CGM CRC mode << 4, then the value. The values are
    the public golden vectors of Tests/HealthProfilesTests (sources named there) and a few built from the layouts."""
    date = struct.pack("<HBBBBB", 2024, 11, 24, 13, 42, 7)
    cgm_body = bytes([0xE3, 0xD2, 0xE4, 5, 0, 0x02, 0x14, 0xFF, 0x02, 0xF0, 0xE5, 0xF3])
    cgm_full = bytes([len(cgm_body) + 3]) + cgm_body
    cgm_full += struct.pack("<H", mcrf4xx(cgm_full))
    values = {
        "hr-uint16": ("hr", bytes([0x1F, 1, 1, 50, 1, 1, 0, 2, 1, 0xFF, 0xFF])),
        "hr-uint8": ("hr", bytes([0x1E, 85, 50, 0, 33, 0])),
        "bp-full": ("bp", bytes([0x1E, 0x8A, 0x00, 0x58, 0x00, 0x78, 0x00, 0x00, 0x00, 0x04, 0x11, 0x14, 0x29, 0x3B, 0x3C,
                                 0x00, 0x01, 0x27, 0x00])),
        "bp-kpa": ("bp", bytes([0x15, 0xBD, 0xF0, 0x0B, 0x00, 0x9F, 0xF0, 0x3C, 0x00, 0x12, 0x00])),
        "bp-nan": ("bp", bytes([0x04, 0xFF, 0x07, 0xFF, 0x07, 0xFF, 0x07, 0x00, 0x08])),
        "icp": ("icp", bytes([0x00, 0xD7, 0xF0, 0xFF, 0x07, 0xFF, 0x07])),
        "temp": ("temp", bytes([0x06, 0xB0, 0x0E, 0x00, 0xFE, 0xDC, 0x07, 0x0C, 0x05, 0x0B, 0x32, 0x1B, 0x04])),
        "itemp-f": ("itemp", bytes([0x01, 0xDA, 0x03, 0x00, 0xFF])),
        "weight": ("weight", bytes([0x0F, 0x54, 0x3D]) + date + bytes([3, 0xF5, 0x00, 0xA8, 0x02])),
        "bodycomp": ("bodycomp", struct.pack("<HH", 0x1FFF, 201) + date + bytes([2]) + struct.pack("<9H", *range(1, 10))),
        "plx-spot": ("plx-spot", bytes([0x1F, 0x61, 0x00, 0x48, 0x00]) + date + bytes([0x80, 0x00, 0x20, 0x00, 0x00, 0x23, 0xF0])),
        "plx-cont": ("plx-cont", bytes([0x1F, 0x61, 0x00, 0x48, 0x00, 0x60, 0x00, 0x49, 0x00, 0x5F, 0x00, 0x4A, 0x00, 0x20, 0x00,
                                        0x00, 0x00, 0x01, 0x23, 0xF0])),
        "glucose": ("glucose", bytes([0x1B, 1, 0, 0xE3, 0x07, 2, 27, 11, 10, 30, 0xFB, 0xFF, 30, 0, 0x12, 0x05, 0x01])),
        "context": ("context", bytes([0xFF, 0x00, 0x00, 0xB3, 0x03, 0x64, 0x00, 0x04, 0x12, 0x3C, 0x00, 0x32, 0x04, 0xD2, 0xF4,
                                      0x59, 0xF1])),
        "cgm-crc": ("cgm", cgm_full),
        "cgm-double": ("cgm", bytes([6, 0, 0x0C, 0x10, 5, 0, 6, 0, 0x0C, 0x10, 6, 0])),
    }
    for name, (kind, value) in values.items():
        yield name, bytes([HEALTH_KINDS[kind] | (0x10 if name == "cgm-crc" else 0x20)]) + value


def projection_seeds():
    # Request bodies as docs/specs/sync-api.yaml's "Health projections" shows them, and days at the calendar's edges.
    key = '{"device_uid":"periph-1","user_index":%s,"metric_code":150021,"day":"%s"}'
    for name, user, day in [("one-key", "1", "2026-11-01"), ("no-user", "null", "2024-02-29"), ("leap-century", "0", "2000-02-29"),
                            ("year-1", "null", "0001-01-01"), ("year-9999", "255", "9999-12-31"), ("not-leap", "1", "1900-02-29")]:
        yield name, ('{"keys":[%s]}' % (key % (user, day))).encode()
    yield "day-alone", b"1970-01-01"


def changes_seeds():
    # Change pages as docs/specs/sync-api.yaml's `ChangePage` describes them: each kind, strings that need escaping,
    # a health sample the backend deleted (no serial), and an empty page.
    empty = "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
    page = '{"changes":[%s],"next_cursor":"c1.7","has_more":false,"count":%d,"checksum":"%s"}'
    device = ('{"kind":"device","operation":"upsert","serial":"TH-1","version":2,"device":{"serial":"TH-1","hardwareRevision":3,'
              '"protocolVersion":1,"capabilities":5,"pairingState":"paired"}}')
    settings = ('{"kind":"deviceSettings","operation":"upsert","serial":"TH-1","version":4,'
                '"settings":{"desired":{"sensitivity":7,"sleepTimeoutSeconds":300},"changed_by":"backend"}}')
    deleted = '{"kind":"device","operation":"delete","serial":"a\\tb\\\\c\\n","version":9}'
    health = ('{"kind":"healthSample","operation":"delete","version":1,"health_deletion":{"uid":"01890a5d-ac96-774b-bcce-b302099a8201",'
              '"sample_uid":"01890a5d-ac96-774b-bcce-b302099a8101","reason":"backend","requested_by":"backend",'
              '"note":"withdrawn\\nby the clinic","requested_at":1793700000000000000,"sample_dedup_key":"bls/periph-1/7/150021/0"}}')
    for name, changes in [("device", [device]), ("settings", [settings]), ("delete-escapes", [deleted]), ("health-sample", [health]),
                          ("mixed", [device, settings, health, deleted])]:
        yield name, (page % (",".join(changes), len(changes), empty)).encode()
    yield "empty", (page % ("", 0, empty)).encode()


KINDS = {"frame": frame_seeds, "session": session_seeds, "dbus": dbus_seeds, "transcript": transcript_seeds,
         "config": config_seeds, "health": health_seeds, "racp": racp_seeds, "cbor": cbor_seeds, "smp": smp_seeds,
         "smpdevice": smpdevice_seeds, "projection": projection_seeds, "changes": changes_seeds}
# `make-seeds.py transcript config` rewrites only those kinds (the dbus seeds need python3-gi).
for name in sys.argv[1:] or KINDS:
    seeds = KINDS[name]()
    directory = os.path.join(HERE, "seeds", name)
    os.makedirs(directory, exist_ok=True)
    for seed_name, data in seeds:
        with open(os.path.join(directory, seed_name), "wb") as file:
            file.write(data)
