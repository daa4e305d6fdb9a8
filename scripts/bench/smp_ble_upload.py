"""One image upload with smpclient 7.3.0 (PyPI; its bleak-based SMPBLETransport) to a simulated MCUmgr device on the
private bus named by DBUS_SYSTEM_BUS_ADDRESS: connect (smpclient reads the MCUmgr parameters on connect), then time
the upload alone. Prints one JSON object: seconds, bytes, smpclient's write size (MTU - 3, from AcquireWrite) and its
request size (from buf_size), and the offsets it saw.

    DBUS_SYSTEM_BUS_ADDRESS=unix:path=... python smp_ble_upload.py ADDRESS IMAGE

Run by scripts/bench/smp-ble-throughput.sh: smpclient is the peer Tether's own transport is measured against.
"""
import asyncio
import json
import sys
import time

from smpclient import SMPClient
from smpclient.transport.ble import SMPBLETransport


async def main(address, image_path):
    with open(image_path, "rb") as f:
        image = f.read()
    transport = SMPBLETransport()
    client = SMPClient(transport, address, timeout_s=30.0)
    await client.connect()
    offsets = []
    started = time.monotonic()
    async for offset in client.upload(image, first_timeout_s=60.0):
        offsets.append(offset)
    seconds = time.monotonic() - started
    await client.disconnect()
    print(json.dumps({"seconds": seconds, "bytes": len(image), "writeSize": transport.mtu,
                      "requestSize": transport.max_unencoded_size, "requests": len(offsets)}))


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2]))
