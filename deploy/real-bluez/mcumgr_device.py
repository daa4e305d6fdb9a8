"""MCUmgr's SMP server over GATT on Bumble, with MCUboot's two image slots: the firmware-update half of a device for
the real-BlueZ VM scenario `tetherd-health-firmware` (glucose-meter.py --smp-image). Like the meter, it keeps the
gateway honest and is written from the specifications, not from Tether's code:

- Zephyr's SMP protocol (doc/services/device_mgmt/smp_protocol.rst): the 8-byte header (Res/Ver/OP: op in bits 0-2,
  version in bits 3-4; Flags; Data Length big-endian; Group ID big-endian; Sequence Num; Command ID), CBOR bodies;
  errors as {"rc": N} (the generic MGMT_ERR codes, in both versions; version 2's {"err": {"group", "rc"}} is for a
  group's own codes, which this server does not use), a request answered in the version it came in.
- The SMP Bluetooth transport (smp_transport.rst): service 8D53DC1D-1DB7-4CD3-868B-8A527460AA84, characteristic
  DA2E7828-FBCE-4E01-AE9E-261174997C48 (write without response, notify). A request may span several writes (the
  server reassembles by the header's length) and a response is cut into notifications of at most ATT_MTU - 3 bytes.
- Groups (smp_groups/smp_group_0.rst, smp_group_1.rst): OS echo (0/0), reset (0/5), MCUmgr parameters (0/6); image
  state read/write (1/0: "images" with slot, version, hash, bootable, pending, confirmed, active, permanent), upload
  (1/1: image, len and sha on the first chunk, off, data; answered with the next offset), erase (1/5).
- MCUboot (docs/design.md): the image header (magic 0x96f3b83d, hdr_size, protect_tlv_size, img_size, version
  major.minor.revision+build) and the TLV area after the body (protected info 0x6908, then info 0x6907), whose
  SHA256 entry (type 0x10) is the hash image state reports. Swap on reset: a slot marked for test (pending) is
  swapped in and runs unconfirmed; reset again without a confirmation and MCUboot reverts to the other image.
  Zephyr's image state prints a version as "1.2.3" and appends ".BUILD" when the build number is not 0.

CBOR comes from PyPI's cbor2 (a third-party codec), not from a codec of Tether's.
"""
import asyncio
import hashlib
import struct

import cbor2
from bumble import att, gatt

SMP_SERVICE = "8D53DC1D-1DB7-4CD3-868B-8A527460AA84"
SMP_CHARACTERISTIC = "DA2E7828-FBCE-4E01-AE9E-261174997C48"

READ, READ_RSP, WRITE, WRITE_RSP = 0, 1, 2, 3
GROUP_OS, GROUP_IMAGE = 0, 1
OS_ECHO, OS_RESET, OS_PARAMS = 0, 5, 6
IMAGE_STATE, IMAGE_UPLOAD, IMAGE_ERASE = 0, 1, 5
# MGMT_ERR_* (smp_protocol.rst, "Minimal response"): 3 EINVAL, 8 ENOTSUP, 6 EBADSTATE... kept to what is used.
EUNKNOWN, EINVAL, ENOTSUP, EBADSTATE = 1, 3, 8, 6
BUF_SIZE, BUF_COUNT = 1024, 4
SLOT_SIZE = 0x60000  # make-firmware-images.sh signs with --slot-size 0x60000


class ImageError(Exception):
    pass


def parse_image(data):
    """(version text as Zephyr's image state prints it, the SHA256 TLV) of an MCUboot image (MCUboot design.md)."""
    if len(data) < 32:
        raise ImageError("shorter than an image header")
    magic, _load, hdr_size, protect_size, img_size, _flags = struct.unpack_from("<IIHHII", data, 0)
    major, minor, revision, build = struct.unpack_from("<BBHI", data, 20)
    if magic != 0x96F3B83D:
        raise ImageError("not an MCUboot image (magic %#x)" % magic)
    at = hdr_size + img_size
    if protect_size:
        tlv_magic, _total = struct.unpack_from("<HH", data, at)
        if tlv_magic != 0x6908:
            raise ImageError("no protected TLV area where its size says")
        at += protect_size
    tlv_magic, total = struct.unpack_from("<HH", data, at)
    if tlv_magic != 0x6907:
        raise ImageError("no TLV info magic after the body")
    end, at = at + total, at + 4
    while at + 4 <= end:
        kind, length = struct.unpack_from("<HH", data, at)
        if kind == 0x10 and length == 32:
            version = "%d.%d.%d" % (major, minor, revision) + (".%d" % build if build else "")
            return version, bytes(data[at + 4:at + 36])
        at += 4 + length
    raise ImageError("no SHA256 TLV")


class Slot:
    def __init__(self, data):
        self.data = bytes(data)
        self.version, self.hash = parse_image(self.data)
        self.pending = False  # marked for test: swapped in at the next reset
        self.confirmed = False
        self.permanent = False


class SMPDevice:
    """The SMP server and MCUboot's slots. `log(fact, **fields)` records what happened for the scenario's check;
    `reboot()` is awaited after a reset was answered (the caller drops the link and comes back advertising)."""

    def __init__(self, factory_image, log, reboot):
        self.log = log
        self.reboot = reboot
        self.primary = Slot(factory_image)
        self.primary.confirmed = True
        self.secondary = None
        self.upload = None  # (total length, sha, bytearray) of the upload in progress
        self.pending_request = b""
        self.characteristic = None
        self.device = None
        self.outgoing = asyncio.Queue()  # notifications, and what to do once those before it are sent, in order
        self.sender = None

    def service(self):
        self.characteristic = gatt.Characteristic(
            SMP_CHARACTERISTIC,
            gatt.Characteristic.Properties.WRITE_WITHOUT_RESPONSE | gatt.Characteristic.Properties.NOTIFY,
            att.Attribute.Permissions.WRITEABLE | att.Attribute.Permissions.READABLE,
            gatt.CharacteristicValue(write=self.written))
        return gatt.Service(SMP_SERVICE, [self.characteristic])

    def state_fact(self):
        slots = [("primary", self.primary), ("secondary", self.secondary)]
        return [{"slot": n, "version": s.version, "hash": s.hash.hex(), "pending": s.pending, "confirmed": s.confirmed}
                for n, (_, s) in enumerate(slots) if s is not None]

    # -- Transport: reassembly and fragmentation ------------------------------------------------------------------

    def written(self, connection, value):
        self.pending_request += bytes(value)
        while len(self.pending_request) >= 8:
            length = struct.unpack_from(">H", self.pending_request, 2)[0]
            if len(self.pending_request) < 8 + length:
                return
            packet, self.pending_request = self.pending_request[:8 + length], self.pending_request[8 + length:]
            self.handle(connection, packet)

    def send(self, connection, packet, then=None):
        size = max(connection.att_mtu - 3, 20)
        for at in range(0, len(packet), size):
            self.outgoing.put_nowait((connection, packet[at:at + size]))
        if then:
            self.outgoing.put_nowait((None, then))
        if self.sender is None or self.sender.done():
            self.sender = asyncio.get_running_loop().create_task(self.send_in_order())

    async def send_in_order(self):
        while not self.outgoing.empty():
            connection, item = self.outgoing.get_nowait()
            if connection is None:
                await item()
                continue
            try:
                await self.device.notify_subscriber(connection, self.characteristic, item, force=True)
            except Exception as error:  # the link went down: what was left for it is dropped
                self.log("smp-notify-failed", error=str(error))

    # -- Requests ------------------------------------------------------------------------------------------------

    def handle(self, connection, packet):
        first, flags, length, group, sequence, command = struct.unpack_from(">BBHHBB", packet, 0)
        op, version = first & 0x07, (first >> 3) & 0x03
        try:
            body = cbor2.loads(packet[8:]) if length else {}
            if not isinstance(body, dict):
                raise ValueError("not a map")
        except Exception:
            body = None
        answer, after = self.answer(op, group, command, body)
        if isinstance(answer, int):
            answer = {"rc": answer}
        payload = cbor2.dumps(answer)
        header = struct.pack(">BBHHBB", (version << 3) | (op + 1), 0, len(payload), group, sequence, command)
        self.send(connection, header + payload, after)

    def answer(self, op, group, command, body):
        """(the response map or an error code, something to do once the answer is on its way)."""
        if body is None or op not in (READ, WRITE):
            return EINVAL, None
        if group == GROUP_OS and command == OS_ECHO:
            return {"r": body.get("d", "")}, None
        if group == GROUP_OS and command == OS_PARAMS and op == READ:
            return {"buf_size": BUF_SIZE, "buf_count": BUF_COUNT}, None
        if group == GROUP_OS and command == OS_RESET and op == WRITE:
            self.log("smp-reset")
            return {}, self.reset
        if group == GROUP_IMAGE and command == IMAGE_STATE:
            return (self.state() if op == READ else self.set_state(body)), None
        if group == GROUP_IMAGE and command == IMAGE_UPLOAD and op == WRITE:
            return self.receive(body), None
        if group == GROUP_IMAGE and command == IMAGE_ERASE and op == WRITE:
            if self.secondary_in_use():
                return EBADSTATE, None
            self.secondary = None
            self.upload = None
            self.log("smp-erased")
            return {}, None
        return ENOTSUP, None

    def secondary_in_use(self):
        """The secondary slot may not be erased or overwritten while it is marked for test, or while the running image
        is on test and the secondary holds the image a revert goes back to (Zephyr's img_mgmt refuses both)."""
        return self.secondary is not None and (self.secondary.pending or not self.primary.confirmed)

    def state(self):
        images = []
        for slot, image in ((0, self.primary), (1, self.secondary)):
            if image is None:
                continue
            images.append({
                "image": 0, "slot": slot, "version": image.version, "hash": image.hash, "bootable": True,
                "pending": image.pending, "confirmed": image.confirmed, "active": slot == 0, "permanent": image.permanent,
            })
        return {"images": images, "splitStatus": 0}

    def set_state(self, body):
        wanted, confirm = body.get("hash"), bool(body.get("confirm", False))
        if confirm and (wanted is None or wanted == self.primary.hash):
            self.primary.confirmed = True
            self.log("smp-confirmed", version=self.primary.version, hash=self.primary.hash.hex())
            return self.state()
        target = self.secondary if self.secondary is not None and wanted == self.secondary.hash else None
        if target is None:
            return EINVAL if wanted != self.primary.hash else self.state()
        target.pending = True
        target.permanent = confirm
        self.log("smp-marked-for-test", version=target.version, hash=target.hash.hex(), permanent=confirm)
        return self.state()

    def receive(self, body):
        offset, data = body.get("off"), body.get("data")
        if not isinstance(offset, int) or not isinstance(data, bytes):
            return EINVAL
        if offset == 0:
            total, sha = body.get("len"), body.get("sha")
            if not isinstance(total, int) or not 32 <= total <= SLOT_SIZE:
                return EINVAL
            if self.secondary_in_use():
                return EBADSTATE
            if self.upload is not None and self.upload[1] == sha and sha is not None and self.upload[0] == total:
                return {"rc": 0, "off": len(self.upload[2])}  # the same image again: resume where it is
            self.secondary = None
            self.upload = (total, sha, bytearray())
            self.log("smp-upload-started", length=total)
        if self.upload is None:
            return EINVAL
        total, sha, received = self.upload
        if offset != len(received):
            return {"rc": 0, "off": len(received)}  # not where the device is: tell the client where
        received += data
        if len(received) > total:
            self.upload = None
            return EINVAL
        if len(received) == total:
            self.upload = None
            if sha is not None and hashlib.sha256(received).digest()[:len(sha)] != sha:
                self.log("smp-upload-refused", reason="sha mismatch")
                return EINVAL
            try:
                self.secondary = Slot(received)
            except ImageError as error:
                self.log("smp-upload-refused", reason=str(error))
                return EINVAL
            self.log("smp-upload-complete", version=self.secondary.version, hash=self.secondary.hash.hex(), length=total)
        return {"rc": 0, "off": len(received)}

    async def reset(self):
        """MCUboot at boot: a pending secondary is swapped in, unconfirmed unless marked permanent; an unconfirmed
        primary (the previous test) is reverted to the other slot."""
        if self.secondary is not None and self.secondary.pending:
            new, old = self.secondary, self.primary
            new.pending = False
            new.confirmed = new.permanent
            new.permanent = False
            old.confirmed = False  # the confirmed flag is the running image's (MCUboot's image_ok in its trailer)
            self.primary, self.secondary = new, old
            self.log("smp-swapped", running=new.version, hash=new.hash.hex())
        elif not self.primary.confirmed and self.secondary is not None:
            self.primary, self.secondary = self.secondary, self.primary
            self.primary.confirmed = True
            self.log("smp-reverted", running=self.primary.version)
        self.log("smp-booted", images=self.state_fact())
        # RAM does not survive a reboot: a partial request, and an upload in progress (its bytes are in the slot, but
        # the session that would resume it is gone; the client starts again from offset 0 with the image's sha).
        self.pending_request = b""
        self.upload = None
        # Zephyr answers the reset and reboots MCUMGR_GRP_OS_RESET_MS (250 ms by default) later.
        await asyncio.sleep(0.25)
        await self.reboot()

    def link_dropped(self):
        """A dropped link loses a request half written (Zephyr's reassembly buffer is per connection)."""
        self.pending_request = b""
