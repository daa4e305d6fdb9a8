"""smpclient 7.3.0 and smpmgr 0.19.1 (PyPI; scripts/setup/smpclient-venv.sh) drive the simulated MCUmgr device over
UDP, as they would a Zephyr device: read the image state, upload IMAGE, mark it for test, reset, read the state,
confirm the running image with the smpmgr CLI, read the state again. Prints one JSON object: each step's image list
(hashes in hex), the offsets the upload saw, and IMAGE's SHA256 TLV as smpclient's own MCUboot parser reads it.

    python smpclient_udp.py HOST IMAGE BUF_SIZE      # smpclient's UDP transport always uses port 1337

smpclient sizes UDP requests by the link MTU (MTU - 28 bytes of IPv4 and UDP headers), not by the device's buf_size,
so the transport is given the MTU that makes a datagram exactly buf_size long, as a technician passes smpmgr `--mtu`
for a Zephyr device whose buffers are smaller than an Ethernet datagram.

Run by Tests/SMPDeviceModelTests/SmpclientOverUDPTests.swift.
"""
import asyncio
import json
import os
import subprocess
import sys

from smpclient import SMPClient
from smpclient.generics import error, success
from smpclient.mcuboot import IMAGE_TLV, ImageInfo
from smpclient.requests.image_management import ImageStatesRead, ImageStatesWrite
from smpclient.requests.os_management import EchoWrite, ResetWrite
from smpclient.transport.udp import SMPUDPTransport


def slots(response):
    if not success(response):
        raise SystemExit(f"image state read failed: {response}")
    return [
        {
            "slot": image.slot,
            "version": image.version,
            "hash": image.hash.hex() if image.hash else None,
            "active": bool(image.active),
            "confirmed": bool(image.confirmed),
            "pending": bool(image.pending),
            "permanent": bool(image.permanent),
        }
        for image in response.images
    ]


async def main(host, image_path, buf_size):
    mtu = buf_size + 28
    with open(image_path, "rb") as f:
        image = f.read()
    tlv_hash = ImageInfo.load_file(image_path).get_tlv(IMAGE_TLV.SHA256).value
    out = {"imageHash": tlv_hash.hex()}
    client = SMPClient(SMPUDPTransport(mtu=mtu), host, timeout_s=10.0)
    await client.connect()
    echo = await client.request(EchoWrite(d="tether"))
    out["echo"] = echo.r if success(echo) else str(echo)
    out["before"] = slots(await client.request(ImageStatesRead()))
    offsets = []
    async for offset in client.upload(image, first_timeout_s=20.0):
        offsets.append(offset)
    out["offsets"] = offsets
    out["uploaded"] = slots(await client.request(ImageStatesRead()))
    tested = await client.request(ImageStatesWrite(hash=tlv_hash, confirm=False))
    if error(tested):
        raise SystemExit(f"marking for test failed: {tested}")
    out["marked"] = slots(tested)
    reset = await client.request(ResetWrite())
    if error(reset):
        raise SystemExit(f"reset failed: {reset}")
    out["afterReset"] = slots(await client.request(ImageStatesRead()))
    await client.disconnect()
    # The smpmgr CLI confirms the running image, as its help tells a technician to.
    smpmgr = os.path.join(os.path.dirname(sys.executable), "smpmgr")
    confirm = subprocess.run(
        [smpmgr, "--ip", host, "--mtu", str(mtu), "--timeout", "10", "image", "state-write", "--confirm"], capture_output=True, text=True, timeout=120
    )
    out["smpmgrConfirm"] = {"status": confirm.returncode, "output": confirm.stdout + confirm.stderr}
    client = SMPClient(SMPUDPTransport(mtu=mtu), host, timeout_s=10.0)
    await client.connect()
    out["confirmed"] = slots(await client.request(ImageStatesRead()))
    await client.disconnect()
    print(json.dumps(out))


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2], int(sys.argv[3])))
