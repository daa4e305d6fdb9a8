#!/usr/bin/env python3
"""Fidelity check of tether-sim with a third-party BlueZ client (bleak).

Run with DBUS_SYSTEM_BUS_ADDRESS pointing at the bus tether-sim serves. Expects the generated configuration
(`tether-sim --devices 3`): Tether-0001 just works, Tether-0002 passkey 123456, Tether-0003 confirmation.

Every operation prints `PASS <name>`; the first failure prints `FAIL <name>: <reason>` and exits 1. The last
line is a JSON summary.
"""

import asyncio
import json
import sys
import time

from bleak import BleakClient, BleakScanner
from dbus_fast import BusType, Message, MessageType
from dbus_fast.aio import MessageBus
from dbus_fast.service import ServiceInterface, method

TETHER_SERVICE = "54455448-0001-4c1e-8e5a-7a3d2f1b0c00"
RX = "54455448-0002-4c1e-8e5a-7a3d2f1b0c00"
TX = "54455448-0003-4c1e-8e5a-7a3d2f1b0c00"
SERIAL_NUMBER = "00002a25-0000-1000-8000-00805f9b34fb"
ALERT_LEVEL = "00002a06-0000-1000-8000-00805f9b34fb"
CCCD = "00002902-0000-1000-8000-00805f9b34fb"
PASSKEY = 123456
AGENT_PATH = "/io/tether/test/agent"

passed = []


def check(name, condition, reason=""):
    if not condition:
        print(f"FAIL {name}: {reason}", flush=True)
        print(json.dumps({"passed": passed, "failed": name}), flush=True)
        sys.exit(1)
    passed.append(name)
    print(f"PASS {name}", flush=True)


# Link protocol §4.3: CRC-16/IBM-3740 (poly 0x1021, init 0xFFFF, no reflection, xorout 0).
def crc16(data):
    crc = 0xFFFF
    for byte in data:
        crc ^= byte << 8
        for _ in range(8):
            crc = ((crc << 1) ^ 0x1021) & 0xFFFF if crc & 0x8000 else (crc << 1) & 0xFFFF
    return crc


def frame(version, type_, seq, payload):
    # §4: magic, version, type, flags, seq LE, length, payload, CRC LE.
    body = bytes([0x54, version, type_, 0]) + seq.to_bytes(2, "little") + bytes([len(payload)]) + bytes(payload)
    return body + crc16(body).to_bytes(2, "little")


# §7.1 HELLO: minVersion 1, maxVersion 2, window 16.
HELLO = frame(1, 0x01, 0, [1, 2, 16])


class FrameCollector:
    """Reassembles the notification byte stream (§3.1) into frames."""

    def __init__(self):
        self.buffer = bytearray()
        self.frames = []
        self.event = asyncio.Event()

    def __call__(self, _sender, data):
        self.buffer += data
        while len(self.buffer) >= 9:
            if self.buffer[0] != 0x54:
                del self.buffer[0]
                continue
            length = self.buffer[6]
            if len(self.buffer) < 9 + length:
                break
            candidate = bytes(self.buffer[: 9 + length])
            if crc16(candidate[:-2]) != int.from_bytes(candidate[-2:], "little"):
                del self.buffer[0]
                continue
            del self.buffer[: 9 + length]
            self.frames.append(candidate)
            self.event.set()

    async def wait_for_type(self, type_, timeout=5.0):
        deadline = time.monotonic() + timeout
        while True:
            for candidate in self.frames:
                if candidate[2] == type_:
                    return candidate
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return None
            self.event.clear()
            try:
                await asyncio.wait_for(self.event.wait(), remaining)
            except asyncio.TimeoutError:
                pass


class Agent(ServiceInterface):
    """org.bluez.Agent1: answers passkey entry and numeric comparison."""

    def __init__(self):
        super().__init__("org.bluez.Agent1")
        self.calls = []

    @method()
    def RequestPasskey(self, device: "o") -> "u":  # noqa: F821
        self.calls.append("RequestPasskey")
        return PASSKEY

    @method()
    def RequestConfirmation(self, device: "o", passkey: "u"):  # noqa: F821
        self.calls.append(f"RequestConfirmation:{passkey}")

    @method()
    def DisplayPasskey(self, device: "o", passkey: "u", entered: "q"):  # noqa: F821
        self.calls.append("DisplayPasskey")

    @method()
    def Release(self):
        self.calls.append("Release")

    @method()
    def Cancel(self):
        self.calls.append("Cancel")


async def notification_round(client, name, use_start_notify):
    collector = FrameCollector()
    await client.start_notify(TX, collector, bluez={"use_start_notify": use_start_notify})
    tx_path = client.services.get_characteristic(TX).obj[0]
    via_fd = tx_path in client._backend._notification_fds
    check(f"bleak chose {'StartNotify' if use_start_notify else 'AcquireNotify'}", via_fd != use_start_notify,
          f"fd path: {via_fd}")
    await client.write_gatt_char(RX, HELLO, response=False)
    check(f"write-without-response HELLO ({'StartNotify' if use_start_notify else 'AcquireNotify'} round)", True)
    info = await collector.wait_for_type(0x02)
    check(name, info is not None, f"no DEVICE_INFO frame; got {[f.hex() for f in collector.frames]}")
    await client.stop_notify(TX)
    return info


async def main():
    started = time.monotonic()
    devices = await BleakScanner.discover(timeout=2.0, return_adv=True)
    by_name = {adv.local_name: (device, adv) for device, adv in devices.values()}
    check("scan finds Tether-0001", "Tether-0001" in by_name, f"saw {sorted(filter(None, by_name))}")
    device, adv = by_name["Tether-0001"]
    check("advertised service UUID", TETHER_SERVICE in adv.service_uuids, str(adv.service_uuids))
    check("advertised RSSI and manufacturer data", adv.rssi is not None and 0xFFFF in adv.manufacturer_data,
          f"{adv.rssi} {adv.manufacturer_data}")

    async with BleakClient(device) as client:
        check("connect", client.is_connected)
        service = client.services.get_service(TETHER_SERVICE)
        check("service discovery: Tether service", service is not None)
        rx = service.get_characteristic(RX)
        tx = service.get_characteristic(TX)
        check("service discovery: RX write-without-response",
              rx is not None and "write-without-response" in rx.properties, str(rx and rx.properties))
        check("service discovery: TX notify + CCCD",
              tx is not None and "notify" in tx.properties and tx.get_descriptor(CCCD) is not None)
        # bleak's documented BlueZ way to learn the MTU: AcquireWrite on a write-without-response
        # characteristic, read the q, close the fd.
        await client._backend._acquire_mtu()
        check("mtu via AcquireWrite", client.mtu_size == 247, str(client.mtu_size))

        serial = await client.read_gatt_char(SERIAL_NUMBER)
        check("read (Device Information serial)", bytes(serial) == b"TS00000001", repr(serial))
        await client.write_gatt_char(ALERT_LEVEL, b"\x02", response=True)
        level = await client.read_gatt_char(ALERT_LEVEL)
        check("write with response + read back", bytes(level) == b"\x02", repr(level))
        # bleak itself refuses CCCD writes, so ask the simulator directly on bleak's own bus connection.
        reply = await client._backend._bus.call(Message(
            destination="org.bluez", path=tx.get_descriptor(CCCD).obj[0], interface="org.bluez.GattDescriptor1",
            member="WriteValue", signature="aya{sv}", body=[b"\x01\x00", {}]))
        check("CCCD write refused with NotPermitted",
              reply.message_type == MessageType.ERROR and reply.error_name == "org.bluez.Error.NotPermitted",
              f"{reply.message_type} {reply.error_name}")

        info = await notification_round(client, "notifications via StartNotify (DEVICE_INFO)", True)
        check("DEVICE_INFO header", info[0] == 0x54 and info[2] == 0x02)

    check("disconnect", not client.is_connected)

    # AcquireNotify on a fresh connection (the firmware waits for a new HELLO per connection).
    async with BleakClient(device) as client:
        await notification_round(client, "notifications via AcquireNotify (DEVICE_INFO)", False)
        await client.pair()
        check("pair (just works)", True)
    check("disconnect after pair", not client.is_connected)

    bus = await MessageBus(bus_type=BusType.SYSTEM).connect()
    agent = Agent()
    bus.export(AGENT_PATH, agent)
    introspection = await bus.introspect("org.bluez", "/org/bluez")
    manager = bus.get_proxy_object("org.bluez", "/org/bluez", introspection).get_interface("org.bluez.AgentManager1")
    await manager.call_register_agent(AGENT_PATH, "KeyboardDisplay")
    await manager.call_request_default_agent(AGENT_PATH)
    check("agent registered", True)

    for name, expected in (("Tether-0002", "RequestPasskey"), ("Tether-0003", f"RequestConfirmation:{PASSKEY}")):
        check(f"scan finds {name}", name in by_name)
        async with BleakClient(by_name[name][0]) as client:
            await client.pair()
            check(f"pair {name} via agent {expected.split(':')[0]}", expected in agent.calls, str(agent.calls))
        check(f"disconnect {name}", not client.is_connected)

    await manager.call_unregister_agent(AGENT_PATH)
    bus.disconnect()
    print(json.dumps({"passed": passed, "seconds": round(time.monotonic() - started, 2)}), flush=True)


if __name__ == "__main__":
    asyncio.run(main())
