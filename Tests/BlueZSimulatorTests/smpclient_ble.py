"""smpclient 7.3.0 (PyPI; scripts/setup/smpclient-venv.sh) drives a simulated MCUmgr device over BLE, through its
bleak-based SMPBLETransport and tether-sim on the private bus named by DBUS_SYSTEM_BUS_ADDRESS, as it would a Zephyr
device through bluetoothd: scan for ADDRESS, connect, read MCUmgr parameters (smpclient does on connect), echo, read
the image state, upload IMAGE, read the state again. Prints one JSON object: each step's result, the offsets the
upload saw, the MTU smpclient took from BlueZ, and IMAGE's SHA256 TLV as smpclient's own MCUboot parser reads it.

    DBUS_SYSTEM_BUS_ADDRESS=unix:path=... python smpclient_ble.py ADDRESS IMAGE

Run by Tests/BlueZSimulatorTests/SmpclientOverBLETests.swift.
"""
import asyncio
import json
import sys

from smpclient import SMPClient
from smpclient.generics import success
from smpclient.mcuboot import IMAGE_TLV, ImageInfo
from smpclient.requests.image_management import ImageStatesRead
from smpclient.requests.os_management import EchoWrite
from smpclient.transport.ble import SMPBLETransport


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


async def main(address, image_path):
    with open(image_path, "rb") as f:
        image = f.read()
    out = {"imageHash": ImageInfo.load_file(image_path).get_tlv(IMAGE_TLV.SHA256).value.hex()}
    transport = SMPBLETransport()
    client = SMPClient(transport, address, timeout_s=20.0)
    await client.connect()
    # What smpclient made of BlueZ's MTU (AcquireWrite) and of the device's buf_size (MCUmgr parameters).
    out["writeSize"] = transport.mtu
    out["maxRequest"] = transport.max_unencoded_size
    long_text = "tether " * 60  # a request and an answer of several packets each
    echo = await client.request(EchoWrite(d=long_text))
    out["echoMatches"] = success(echo) and echo.r == long_text
    out["before"] = slots(await client.request(ImageStatesRead()))
    offsets = []
    async for offset in client.upload(image, first_timeout_s=30.0):
        offsets.append(offset)
    out["offsets"] = offsets
    out["uploaded"] = slots(await client.request(ImageStatesRead()))
    await client.disconnect()
    print(json.dumps(out))


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2]))
