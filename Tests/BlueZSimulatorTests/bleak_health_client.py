#!/usr/bin/env python3
"""Fidelity check of tether-sim's standard health devices with a third-party BlueZ client (bleak).

Run with DBUS_SYSTEM_BUS_ADDRESS pointing at the bus of `tether-sim --config health-devices.json` (this folder).
Decodes what it receives with its own small readers written from the specifications (GLS v1.0.1, BLS v1.1.1,
HRS v1.0, IEEE 11073-20601 Annex F.8), never with Tether's code.

Every operation prints `PASS <name>`; the first failure prints `FAIL <name>: <reason>` and exits 1.
"""

import asyncio
import json
import struct
import sys
import time

from bleak import BleakClient, BleakScanner
from bleak.exc import BleakDBusError
from dbus_fast import BusType, Message, MessageType, Variant
from dbus_fast.aio import MessageBus


def uuid16(short):
    return f"0000{short:04x}-0000-1000-8000-00805f9b34fb"


GLUCOSE_MEASUREMENT = uuid16(0x2A18)
GLUCOSE_CONTEXT = uuid16(0x2A34)
RACP = uuid16(0x2A52)
BP_MEASUREMENT = uuid16(0x2A35)
CUFF_PRESSURE = uuid16(0x2A36)
HEART_RATE = uuid16(0x2A37)
GLUCOSE_RECORDS = 12
FIRST_SEQUENCE = 65530

passed = []


def check(name, condition, reason=""):
    if not condition:
        print(f"FAIL {name}: {reason}", flush=True)
        print(json.dumps({"passed": passed, "failed": name}), flush=True)
        sys.exit(1)
    passed.append(name)
    print(f"PASS {name}", flush=True)


def sfloat(raw):
    """IEEE 11073-20601 Annex F.8: 4-bit exponent, 12-bit mantissa, both two's complement; specials by name."""
    specials = {0x07FF: "NaN", 0x0800: "NRes", 0x07FE: "+INF", 0x0802: "-INF", 0x0801: "reserved"}
    if raw in specials:
        return specials[raw]
    mantissa = raw & 0x0FFF
    exponent = raw >> 12
    if mantissa >= 0x800:
        mantissa -= 0x1000
    if exponent >= 0x8:
        exponent -= 0x10
    return mantissa * (10 ** exponent)


class Inbox:
    def __init__(self):
        self.values = []
        self.event = asyncio.Event()

    def __call__(self, sender, data):
        self.values.append((sender.uuid, bytes(data)))
        self.event.set()

    async def wait(self, predicate, timeout=15.0):
        deadline = time.monotonic() + timeout
        while not predicate(self.values):
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return False
            self.event.clear()
            try:
                await asyncio.wait_for(self.event.wait(), remaining)
            except asyncio.TimeoutError:
                pass
        return True


async def control(bus, member, signature, body):
    reply = await bus.call(Message(
        destination="org.bluez", path="/io/tether/simulator", interface="io.tether.Simulator1", member=member,
        signature=signature, body=body))
    if reply.message_type == MessageType.ERROR:
        raise RuntimeError(f"{member}: {reply.error_name} {reply.body}")
    return reply.body


async def glucose(device):
    async with BleakClient(device) as client:
        check("glucose: connect", client.is_connected)
        # GLS requires an encrypted link: the CCCD write is refused before pairing (NotPermitted "Not paired").
        try:
            await client.start_notify(RACP, lambda *_: None)
            refused = None
        except BleakDBusError as error:
            refused = error
        check("glucose: CCCD refused before pairing with NotPermitted",
              refused is not None and refused.dbus_error == "org.bluez.Error.NotPermitted", repr(refused))
        await client.pair()
        check("glucose: pair (just works)", True)
        inbox = Inbox()
        for uuid in (GLUCOSE_MEASUREMENT, GLUCOSE_CONTEXT, RACP):
            await client.start_notify(uuid, inbox)
        check("glucose: subscribed to 0x2A18, 0x2A34 and 0x2A52", True)
        # RACP "report stored records", operator "all records" (GLS v1.0.1 §3.9).
        await client.write_gatt_char(RACP, bytes([0x01, 0x01]), response=True)
        done = await inbox.wait(lambda values: any(uuid == RACP for uuid, _ in values))
        check("glucose: RACP response received", done, f"{len(inbox.values)} values")
        measurements = [value for uuid, value in inbox.values if uuid == GLUCOSE_MEASUREMENT]
        contexts = [value for uuid, value in inbox.values if uuid == GLUCOSE_CONTEXT]
        responses = [value for uuid, value in inbox.values if uuid == RACP]
        sequences = [struct.unpack_from("<H", value, 1)[0] for value in measurements]
        expected = [(FIRST_SEQUENCE + index) % 65536 for index in range(GLUCOSE_RECORDS)]
        check("glucose: every stored record, uint16 sequence wrapping", sequences == expected, str(sequences))
        check("glucose: RACP success 06 00 01 01", responses == [bytes([0x06, 0x00, 0x01, 0x01])], str(responses))
        # GLS: flags bit 4 announces a context; the context carries the same sequence number and follows it.
        announced = [s for s, value in zip(sequences, measurements) if value[0] & 0x10]
        context_sequences = [struct.unpack_from("<H", value, 1)[0] for value in contexts]
        check("glucose: contexts match announced sequence numbers", announced == context_sequences and announced,
              f"{announced} vs {context_sequences}")
        concentrations = []
        for value in measurements:
            flags = value[0]
            offset = 10 + (2 if flags & 0x01 else 0)
            concentrations.append(sfloat(struct.unpack_from("<H", value, offset)[0]))
        check("glucose: concentrations in kg/L within 70-250 mg/dL",
              all(isinstance(c, float) and 0.0007 - 1e-9 <= c <= 0.0025 + 1e-9 for c in concentrations),
              str(concentrations))
        # Report number with "≥ 2": keys compare as numbers, so 65530..65535 and 2..5 after the wrap, not 0 and 1.
        inbox.values.clear()
        await client.write_gatt_char(RACP, bytes([0x04, 0x03, 0x01]) + struct.pack("<H", 2), response=True)
        await inbox.wait(lambda values: any(uuid == RACP for uuid, _ in values))
        check("glucose: number of records >= 2 (numeric, across the wrap)", inbox.values[-1][1] == bytes([0x05, 0x00, 10, 0]),
              inbox.values[-1][1].hex())
    check("glucose: disconnect", not client.is_connected)


async def cuff(device, bus, path):
    async with BleakClient(device) as client:
        await client.pair()
        inbox = Inbox()
        await client.start_notify(CUFF_PRESSURE, inbox)
        await client.start_notify(BP_MEASUREMENT, inbox)
        check("cuff: indications enabled on 0x2A35 (StartNotify)", True)
        got = await inbox.wait(lambda values: sum(uuid == BP_MEASUREMENT for uuid, _ in values) >= 3)
        stored = [value for uuid, value in inbox.values if uuid == BP_MEASUREMENT]
        check("cuff: 3 stored readings indicated on connect", got and len(stored) == 3, f"{len(stored)}")
        pressures = [tuple(sfloat(struct.unpack_from("<H", value, 1 + 2 * i)[0]) for i in range(3)) for value in stored]
        check("cuff: reading 2 failed (NaN in all three pressures), 1 and 3 are numbers",
              pressures[1] == ("NaN", "NaN", "NaN") and all(isinstance(p, int) for p in pressures[0] + pressures[2]),
              str(pressures))
        check("cuff: mmHg, time stamp, pulse, user, status flags", all(value[0] == 0x1E for value in stored),
              str([value[0] for value in stored]))
        inbox.values.clear()
        taken = await control(bus, "TakeMeasurement", "oa{sv}", [path, {"user": Variant("y", 2)}])
        check("cuff: TakeMeasurement", taken == [True], str(taken))
        got = await inbox.wait(lambda values: any(uuid == BP_MEASUREMENT for uuid, _ in values))
        live = [uuid for uuid, _ in inbox.values]
        check("cuff: intermediate cuff pressures (notify) then the measurement (indicate)",
              got and live[-1] == BP_MEASUREMENT and live[:-1] and all(u == CUFF_PRESSURE for u in live[:-1]), str(live))
        intermediate = inbox.values[0][1]
        check("cuff: intermediate diastolic and MAP are NaN",
              sfloat(struct.unpack_from("<H", intermediate, 3)[0]) == "NaN"
              and sfloat(struct.unpack_from("<H", intermediate, 5)[0]) == "NaN", intermediate.hex())
        check("cuff: user 2 in the live reading", inbox.values[-1][1][16] == 2, inbox.values[-1][1].hex())


async def heart_rate(device):
    async with BleakClient(device) as client:
        inbox = Inbox()
        await client.start_notify(HEART_RATE, inbox)  # notify: bleak takes AcquireNotify
        got = await inbox.wait(lambda values: len(values) >= 3)
        rates = [value[1] if not value[0] & 0x01 else struct.unpack_from("<H", value, 1)[0] for _, value in inbox.values]
        check("heart rate: notifications via AcquireNotify, 60-100 bpm",
              got and all(60 <= rate <= 100 for rate in rates), str(rates))
        await client.stop_notify(HEART_RATE)


async def main():
    started = time.monotonic()
    devices = await BleakScanner.discover(timeout=2.0, return_adv=True)
    by_name = {adv.local_name: (device, adv) for device, adv in devices.values()}
    for name, service in (("Sim-Glucose", 0x1808), ("Sim-Cuff", 0x1810), ("Sim-HeartRate", 0x180D)):
        check(f"scan finds {name} advertising 0x{service:04X}",
              name in by_name and uuid16(service) in by_name[name][1].service_uuids,
              str(by_name.get(name, (None, None))[1]))
    bus = await MessageBus(bus_type=BusType.SYSTEM).connect()
    await glucose(by_name["Sim-Glucose"][0])
    await cuff(by_name["Sim-Cuff"][0], bus, "/org/bluez/hci0/dev_C0_48_45_00_00_02")
    await heart_rate(by_name["Sim-HeartRate"][0])
    bus.disconnect()
    print(json.dumps({"passed": passed, "seconds": round(time.monotonic() - started, 2)}), flush=True)


if __name__ == "__main__":
    asyncio.run(main())
