#!/usr/bin/env python3
"""Cross-check of Tether's SMP codec against the independent `smp` package (PyPI, pinned by
scripts/ci/smp-crosscheck.sh).

Reads a JSON object {case name: hex} of the requests Tether encoded (SMP v2, sequence 42) from the file named by
argv[1], and prints one JSON object:
  "requests":  {case: hex}     the same requests encoded by smp (Tether must match them byte for byte)
  "decoded":   {case: fields}  Tether's encodings read back by smp (`loads`), or {"error": ...}
  "responses": {case: hex}     responses encoded by smp, for Tether to decode
"""
import json
import sys

import smp.error as smperr
import smp.header as smphdr
import smp.image_management as smpimg
import smp.os_management as smpos

SEQ = 42
HASH = bytes(range(32))
SHA = bytes(range(100, 132))
DATA = bytes((i * 7) & 0xFF for i in range(50))

REQUESTS = {
    "echo": lambda: smpos.EchoWriteRequest(d="Hallo", sequence=SEQ),
    "reset": lambda: smpos.ResetWriteRequest(sequence=SEQ),
    "reset-force": lambda: smpos.ResetWriteRequest(force=1, sequence=SEQ),
    "parameters": lambda: smpos.MCUMgrParametersReadRequest(sequence=SEQ),
    "bootloader": lambda: smpos.BootloaderInformationReadRequest(sequence=SEQ),
    "bootloader-mode": lambda: smpos.BootloaderInformationReadRequest(query="mode", sequence=SEQ),
    "state-read": lambda: smpimg.ImageStatesReadRequest(sequence=SEQ),
    "state-test": lambda: smpimg.ImageStatesWriteRequest(hash=HASH, confirm=False, sequence=SEQ),
    "state-confirm": lambda: smpimg.ImageStatesWriteRequest(confirm=True, sequence=SEQ),
    "upload-first": lambda: smpimg.ImageUploadWriteRequest(off=0, data=DATA, len=100000, sha=SHA, upgrade=True, sequence=SEQ),
    "upload-first-image1": lambda: smpimg.ImageUploadWriteRequest(off=0, data=DATA, image=1, len=300, sha=SHA, sequence=SEQ),
    "upload-next": lambda: smpimg.ImageUploadWriteRequest(off=65536, data=DATA, sequence=SEQ),
    "erase": lambda: smpimg.ImageEraseRequest(sequence=SEQ),
    "erase-slot": lambda: smpimg.ImageEraseRequest(slot=1, sequence=SEQ),
}

CLASSES = {
    "echo": smpos.EchoWriteRequest, "reset": smpos.ResetWriteRequest, "reset-force": smpos.ResetWriteRequest,
    "parameters": smpos.MCUMgrParametersReadRequest, "bootloader": smpos.BootloaderInformationReadRequest,
    "bootloader-mode": smpos.BootloaderInformationReadRequest, "state-read": smpimg.ImageStatesReadRequest,
    "state-test": smpimg.ImageStatesWriteRequest, "state-confirm": smpimg.ImageStatesWriteRequest,
    "upload-first": smpimg.ImageUploadWriteRequest, "upload-first-image1": smpimg.ImageUploadWriteRequest,
    "upload-next": smpimg.ImageUploadWriteRequest, "erase": smpimg.ImageEraseRequest, "erase-slot": smpimg.ImageEraseRequest,
}

class UploadErrorV2(smpimg.ImageManagementErrorV2):
    """The package's error responses name no operation or command: an upload's answer, as a device sends it."""
    _OP = smphdr.OP.WRITE_RSP
    _COMMAND_ID = smphdr.CommandId.ImageManagement.UPLOAD


class UploadErrorV1(smpimg.ImageManagementErrorV1):
    _OP = smphdr.OP.WRITE_RSP
    _COMMAND_ID = smphdr.CommandId.ImageManagement.UPLOAD


RESPONSES = {
    "echo": lambda: smpos.EchoWriteResponse(r="Hallo", sequence=SEQ),
    "parameters": lambda: smpos.MCUMgrParametersReadResponse(buf_size=2475, buf_count=4, sequence=SEQ),
    "bootloader": lambda: smpos.BootloaderInformationReadResponse(bootloader="MCUboot", sequence=SEQ),
    "state": lambda: smpimg.ImageStatesReadResponse(images=[
        smpimg.ImageState(slot=0, version="1.2.3", hash=HASH, bootable=True, confirmed=True, active=True),
        smpimg.ImageState(image=0, slot=1, version="1.3.0+7", hash=SHA, bootable=True, pending=True),
    ], sequence=SEQ),
    "upload": lambda: smpimg.ImageUploadWriteResponse(off=1024, sequence=SEQ),
    "upload-last": lambda: smpimg.ImageUploadWriteResponse(off=100000, match=True, sequence=SEQ),
    "error-v2": lambda: UploadErrorV2(err={"group": 1, "rc": smpimg.IMG_MGMT_ERR.NO_FREE_SLOT}, sequence=SEQ),
    "error-v1": lambda: UploadErrorV1(rc=smperr.MGMT_ERR.ENOTSUP, rsn="no", version=smphdr.Version.V1, sequence=SEQ),
}


def plain(value):
    if isinstance(value, (bytes, bytearray)):
        return value.hex()
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    if hasattr(value, "value") and not isinstance(value, (bool, int, str)):
        return value.value
    return int(value) if isinstance(value, int) and not isinstance(value, bool) else value


def decode(name, hex_bytes):
    try:
        message = CLASSES[name].loads(bytes.fromhex(hex_bytes))
        header = message.header
        fields = message.model_dump(exclude={"header", "version", "sequence", "smp_data"}, exclude_none=True)
        return {"header": {"op": int(header.op), "version": int(header.version), "length": header.length,
                           "group": int(header.group_id), "sequence": header.sequence, "command": int(header.command_id)},
                "fields": plain(fields)}
    except Exception as error:  # reported to the Swift test, which fails on it
        return {"error": f"{type(error).__name__}: {error}"}


def main():
    with open(sys.argv[1]) as handle:
        tether = json.load(handle)
    out = {
        "requests": {name: bytes(make()).hex() for name, make in REQUESTS.items()},
        "decoded": {name: decode(name, value) for name, value in tether.items()},
        "responses": {name: bytes(make()).hex() for name, make in RESPONSES.items()},
    }
    json.dump(out, sys.stdout, indent=1, sort_keys=True)


if __name__ == "__main__":
    main()
