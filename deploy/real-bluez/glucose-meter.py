#!/usr/bin/env python3
"""A standard Glucose meter on Bumble (PyPI `bumble`, an independent BLE host), for the real-BlueZ VM scenario
`tetherd-health`: the device that keeps the gateway honest.

Written from the Bluetooth SIG's Glucose Service v1.0.1 (GLS) and the GATT Specification Supplement (GSS), not
from Tether's code:

- Glucose Service 0x1808 with Glucose Measurement 0x2A18 (notify), Glucose Feature 0x2A51 (read) and the Record
  Access Control Point 0x2A52 (write + indicate). GLS §2.4 / §3: the service requires an encrypted, bonded link;
  here every value and the RACP need encryption (the central must pair first).
- Glucose Measurement (GSS §3.106): Flags (bit 0 Time Offset present, bit 1 Concentration and Type-Sample Location
  present, bit 2 units 0 = kg/L / 1 = mol/L, bit 3 Sensor Status Annunciation present, bit 4 Context follows),
  Sequence Number uint16, Base Time (Date Time: year uint16, month, day, hours, minutes, seconds), Time Offset
  sint16 minutes, Concentration SFLOAT, Type (low nibble) and Sample Location (high nibble).
- RACP (GSS §3.178, GLS §3.3.x): op codes 0x01 Report Stored Records, 0x02 Delete (not supported here), 0x03 Abort,
  0x04 Report Number of Stored Records, 0x05 Number Response, 0x06 Response Code; operators 0x00 null, 0x01 all,
  0x02 <=, 0x03 >=, 0x04 within range, 0x05 first, 0x06 last; filter type 0x01 sequence number (uint16). Response
  codes 0x01 success, 0x02 op code not supported, 0x03 invalid operator, 0x04 operator not supported, 0x05 invalid
  operand, 0x06 no records found, 0x09 operand not supported. ATT errors 0xFE procedure already in progress, 0xFD
  CCCD improperly configured (RACP indications off).

The meter holds --records records with known values (sequence 1..N). SIGUSR1 takes one more reading (stored, not
sent: a glucose meter hands out its records over RACP). SIGUSR2 deletes reading --delete-on-usr2 from its memory,
as a person does in a meter's menu, without the gateway asking, and then drops the link (the meter's radio goes
quiet while its menu is open), so the gateway's next connection can look for readings that vanished. Every fact goes to --event-log as one JSON object per line,
with the truth the scenario's check compares the gateway's database against. --fault plants a defect on purpose
(the check must then fail): `wrong-value:SEQ` sends record SEQ with its concentration one unit off while logging
the true value; `skip:SEQ` never sends record SEQ although it reports it stored.

    python3 glucose-meter.py --transport tcp-client:127.0.0.1:9000 --address F3:A1:18:08:00:01 --records 10 \
        --event-log meter-events.jsonl

With --smp-image IMAGE the meter also serves MCUmgr's SMP service with MCUboot's two slots, running IMAGE (an
MCUboot image) confirmed (mcumgr_device.py). An SMP reset reboots it as a device does: the link drops, MCUboot
swaps or reverts, and after a moment it advertises again, its records, bond and attribute table kept.
"""
import argparse
import asyncio
import datetime
import json
import signal
import struct
import sys
import time

from bumble import att, gatt, hci, pairing
from bumble.core import AdvertisingData
from bumble.device import Device
from bumble.transport import open_transport

from mcumgr_device import SMPDevice

GLUCOSE_SERVICE = "1808"
GLUCOSE_MEASUREMENT = "2A18"
GLUCOSE_FEATURE = "2A51"
RACP = "2A52"

# RACP op codes, operators, filter types, response codes (GSS §3.178).
REPORT_STORED_RECORDS, DELETE_STORED_RECORDS, ABORT, REPORT_NUMBER, NUMBER_RESPONSE, RESPONSE_CODE = 1, 2, 3, 4, 5, 6
OP_NULL, OP_ALL, OP_LE, OP_GE, OP_RANGE, OP_FIRST, OP_LAST = 0, 1, 2, 3, 4, 5, 6
FILTER_SEQUENCE = 0x01
SUCCESS, OPCODE_NOT_SUPPORTED, INVALID_OPERATOR, OPERATOR_NOT_SUPPORTED, INVALID_OPERAND, NO_RECORDS = 1, 2, 3, 4, 5, 6
OPERAND_NOT_SUPPORTED = 9


def sfloat(mantissa, exponent):
    """IEEE 11073-20601 SFLOAT: 4-bit signed exponent above a 12-bit signed mantissa."""
    assert -2048 <= mantissa <= 2047 and -8 <= exponent <= 7
    return ((exponent & 0x0F) << 12) | (mantissa & 0x0FFF)


class Record:
    """One stored reading, in kg/L (flag bit 2 clear): mantissa · 10^exponent kg/L; 1 mg/dL = 10^-5 kg/L."""

    def __init__(self, sequence, base_time, time_offset, mantissa, exponent, sample_type, location):
        self.sequence, self.base_time, self.time_offset = sequence, base_time, time_offset
        self.mantissa, self.exponent, self.sample_type, self.location = mantissa, exponent, sample_type, location

    def measurement(self, mantissa=None):
        """GSS §3.106: Flags, Sequence Number, Base Time, Time Offset, Concentration (kg/L), Type-Sample Location."""
        flags = 0x01 | 0x02  # Time Offset present; Concentration and Type-Sample Location present; kg/L
        t = self.base_time
        value = struct.pack("<BH", flags, self.sequence)
        value += struct.pack("<HBBBBB", t.year, t.month, t.day, t.hour, t.minute, t.second)
        value += struct.pack("<hH", self.time_offset, sfloat(self.mantissa if mantissa is None else mantissa, self.exponent))
        value += bytes([(self.location << 4) | self.sample_type])
        return value

    def fact(self):
        return {"sequence": self.sequence, "mantissa": self.mantissa, "exponent": self.exponent, "unit": "kg/L",
                "base_time": self.base_time.isoformat(), "time_offset_minutes": self.time_offset,
                "type": self.sample_type, "location": self.location}


def make_record(sequence):
    """Known values: 80 + 7·(n mod 13) mg/dL (mantissa in 10^-5 kg/L), one reading every three hours."""
    base = datetime.datetime(2026, 11, 20, 6, 0, 0) + datetime.timedelta(hours=3 * (sequence - 1))
    # Capillary whole blood (type 1), finger (location 1); a time offset on every other record.
    return Record(sequence, base, 0 if sequence % 2 else 15, 80 + 7 * (sequence % 13), -5, 1, 1)


class Meter:
    def __init__(self, args):
        self.args = args
        self.events = open(args.event_log, "a", buffering=1)
        self.records = [make_record(n) for n in range(1, args.records + 1)]
        self.fault = None
        if args.fault:
            kind, _, sequence = args.fault.partition(":")
            if kind not in ("wrong-value", "skip") or not sequence.isdigit():
                sys.exit(f"glucose-meter: --fault must be wrong-value:SEQ or skip:SEQ, not {args.fault!r}")
            self.fault = (kind, int(sequence))
        self.procedure = None  # the running RACP procedure's task
        self.connection = None
        self.smp = None
        if args.smp_image:
            with open(args.smp_image, "rb") as image:
                self.smp = SMPDevice(image.read(), self.log, self.reboot)

    def log(self, fact, **fields):
        fields = {"fact": fact, "at": round(time.time(), 3), **fields}
        self.events.write(json.dumps(fields, sort_keys=True) + "\n")

    # -- GATT --------------------------------------------------------------------------------------------------

    def services(self):
        encrypted = att.Attribute.Permissions
        self.measurement = gatt.Characteristic(
            GLUCOSE_MEASUREMENT, gatt.Characteristic.Properties.NOTIFY, encrypted.READ_REQUIRES_ENCRYPTION, b"")
        # Glucose Feature (GSS §3.103): no optional feature (no low-battery detection, no multiple bond, ...).
        self.feature = gatt.Characteristic(
            GLUCOSE_FEATURE, gatt.Characteristic.Properties.READ, encrypted.READ_REQUIRES_ENCRYPTION,
            struct.pack("<H", 0x0000))
        self.racp = gatt.Characteristic(
            RACP, gatt.Characteristic.Properties.WRITE | gatt.Characteristic.Properties.INDICATE,
            encrypted.WRITE_REQUIRES_ENCRYPTION | encrypted.READ_REQUIRES_ENCRYPTION,
            gatt.CharacteristicValue(write=self.racp_written))
        services = [gatt.Service(GLUCOSE_SERVICE, [self.measurement, self.feature, self.racp])]
        if self.smp:
            services.append(self.smp.service())
        return services

    def subscribed(self, connection, characteristic, bit):
        cccd = self.device.gatt_server.subscribers.get(connection, {}).get(characteristic.handle)
        if cccd is None:
            # Bumble keys the subscribers by ATT bearer; with one bearer it is the connection's.
            for bearer, cccds in self.device.gatt_server.subscribers.items():
                if getattr(bearer, "connection", None) is connection and characteristic.handle in cccds:
                    cccd = cccds[characteristic.handle]
        return bool(cccd) and len(cccd) == 2 and cccd[0] & bit != 0

    def racp_written(self, connection, value):
        value = bytes(value)
        self.log("racp-request", bytes=value.hex(), encrypted=bool(connection.is_encrypted))
        if not self.subscribed(connection, self.racp, 0x02):
            self.log("racp-refused", reason="cccd-improperly-configured")
            raise att.ATT_Error(att.ErrorCode.CCCD_IMPROPERLY_CONFIGURED)
        if len(value) >= 1 and value[0] == ABORT:
            if self.procedure and not self.procedure.done():
                self.procedure.cancel()
            self.procedure = asyncio.get_running_loop().create_task(self.respond(connection, ABORT, SUCCESS))
            return
        if self.procedure and not self.procedure.done():
            self.log("racp-refused", reason="procedure-already-in-progress")
            raise att.ATT_Error(att.ErrorCode.PROCEDURE_ALREADY_IN_PROGRESS)
        # The write is answered first; the procedure runs after it (notifications, then the indication).
        self.procedure = asyncio.get_running_loop().create_task(self.run_procedure(connection, value))

    def select(self, operator, operand):
        """The records an operator and operand name, or a response code."""
        if operator in (OP_ALL, OP_FIRST, OP_LAST):
            if operand:
                return INVALID_OPERAND
            if operator == OP_ALL or not self.records:
                return list(self.records)
            return [self.records[0]] if operator == OP_FIRST else [self.records[-1]]
        if operator in (OP_LE, OP_GE, OP_RANGE):
            if not operand:
                return INVALID_OPERAND
            if operand[0] != FILTER_SEQUENCE:
                return OPERAND_NOT_SUPPORTED  # user-facing time (0x02) is not supported by this meter
            keys = operand[1:]
            if len(keys) != (4 if operator == OP_RANGE else 2):
                return INVALID_OPERAND
            if operator == OP_RANGE:
                low, high = struct.unpack("<HH", keys)
                if low > high:
                    return INVALID_OPERAND
            else:
                (key,) = struct.unpack("<H", keys)
                low, high = (0, key) if operator == OP_LE else (key, 0xFFFF)
            return [r for r in self.records if low <= r.sequence <= high]
        if operator == OP_NULL:
            return INVALID_OPERATOR
        return OPERATOR_NOT_SUPPORTED

    async def run_procedure(self, connection, value):
        try:
            if len(value) < 2:
                await self.respond(connection, value[0] if value else 0, INVALID_OPERATOR)
                return
            op_code, operator, operand = value[0], value[1], value[2:]
            if op_code not in (REPORT_STORED_RECORDS, REPORT_NUMBER):
                await self.respond(connection, op_code, OPCODE_NOT_SUPPORTED)
                return
            selected = self.select(operator, operand)
            if isinstance(selected, int):
                await self.respond(connection, op_code, selected)
                return
            if op_code == REPORT_NUMBER:
                self.log("racp-number", count=len(selected), operator=operator)
                await self.device.indicate_subscriber(connection, self.racp, struct.pack("<BBH", NUMBER_RESPONSE, OP_NULL, len(selected)))
                return
            if not selected:
                await self.respond(connection, op_code, NO_RECORDS)
                return
            if not self.subscribed(connection, self.measurement, 0x01):
                self.log("measurement-not-subscribed")
            sent = []
            for record in selected:
                mantissa = record.mantissa
                if self.fault == ("skip", record.sequence):
                    self.log("fault-planted", kind="skip", sequence=record.sequence)
                    continue
                if self.fault == ("wrong-value", record.sequence):
                    mantissa = record.mantissa + 1
                    self.log("fault-planted", kind="wrong-value", sequence=record.sequence, sent_mantissa=mantissa)
                await self.device.notify_subscriber(connection, self.measurement, record.measurement(mantissa))
                sent.append(record.sequence)
            self.log("records-sent", sequences=sent)
            await self.respond(connection, op_code, SUCCESS)
        except asyncio.CancelledError:
            self.log("racp-aborted")
            raise
        except Exception as error:  # a link gone mid-procedure, say: logged, the meter keeps running
            self.log("racp-procedure-failed", error=repr(error))

    async def respond(self, connection, request, code):
        await self.device.indicate_subscriber(connection, self.racp, bytes([RESPONSE_CODE, OP_NULL, request, code]))
        self.log("racp-response", request=request, code=code)

    # -- Readings ----------------------------------------------------------------------------------------------

    def take_reading(self):
        record = make_record(self.records[-1].sequence + 1 if self.records else 1)
        self.records.append(record)
        self.log("reading-taken", **record.fact())

    async def delete_reading(self, sequence):
        """A person deletes one reading in the meter's menu; the link drops while the menu is open."""
        kept = [r for r in self.records if r.sequence != sequence]
        if len(kept) == len(self.records):
            self.log("reading-not-found", sequence=sequence)
            return
        self.records = kept
        self.log("reading-deleted", sequence=sequence)
        if self.connection is not None:
            try:
                await self.connection.disconnect()
                self.log("link-dropped-by-meter")
            except Exception as error:
                self.log("disconnect-failed", error=str(error))

    # -- Link --------------------------------------------------------------------------------------------------

    def on_connection(self, connection):
        self.connection = connection
        self.log("link-up", peer=str(connection.peer_address))
        connection.on("disconnection", lambda reason: self.on_disconnection(connection, reason))
        connection.on("pairing", lambda keys: self.log("paired", bonded=keys.ltk is not None or keys.ltk_peripheral is not None,
                                                       peer=str(connection.peer_address)))
        connection.on("pairing_failure", lambda reason: self.log("pairing-failed", reason=str(reason)))
        connection.on("connection_encryption_change", lambda *_: self.log("encryption", encrypted=bool(connection.is_encrypted)))

    async def reboot(self):
        """After an SMP reset: the radio goes quiet, the link drops, and the device comes back advertising."""
        self.log("power-off")
        if self.connection is not None:
            try:
                await self.connection.disconnect()
            except Exception as error:
                self.log("disconnect-failed", error=str(error))
        await asyncio.sleep(0.2)
        await self.device.stop_advertising()
        await asyncio.sleep(1.5)
        await self.device.start_advertising(auto_restart=True)
        self.log("power-on", images=self.smp.state_fact() if self.smp else [])

    def on_disconnection(self, connection, reason):
        self.log("link-down", reason=str(reason))
        if self.smp:
            self.smp.link_dropped()
        self.connection = None
        if self.procedure and not self.procedure.done():
            self.procedure.cancel()

    async def run(self):
        self.log("records", records=[r.fact() for r in self.records], fault=self.args.fault)
        async with await open_transport(self.args.transport) as transport:
            self.device = Device.with_hci("Tether VM Glucose", hci.Address(self.args.address), transport.source, transport.sink)
            # Just-works LE Secure Connections, bonded: a meter with no keyboard and no display. Its identity
            # address (SMP Identity Address Information) is the static random address it advertises from, so
            # BlueZ keeps one address for it before and after bonding.
            self.device.pairing_config_factory = lambda connection: pairing.PairingConfig(
                sc=True, mitm=False, bonding=True, identity_address_type=pairing.PairingConfig.AddressType.RANDOM,
                delegate=pairing.PairingDelegate(io_capability=pairing.PairingDelegate.IoCapability.NO_OUTPUT_NO_INPUT))
            self.device.add_services(self.services())
            if self.smp:
                self.smp.device = self.device
                self.log("smp-booted", images=self.smp.state_fact())
            self.device.on("connection", self.on_connection)
            await self.device.power_on()
            self.device.advertising_data = bytes(AdvertisingData([
                (AdvertisingData.FLAGS, bytes([0x06])),  # LE General Discoverable, BR/EDR not supported
                (AdvertisingData.COMPLETE_LIST_OF_16_BIT_SERVICE_CLASS_UUIDS, struct.pack("<H", 0x1808)),
                (AdvertisingData.COMPLETE_LOCAL_NAME, b"Tether VM Glucose"),
            ]))
            await self.device.start_advertising(auto_restart=True)
            self.log("advertising", address=self.args.address)
            loop = asyncio.get_running_loop()
            loop.add_signal_handler(signal.SIGUSR1, self.take_reading)
            if self.args.delete_on_usr2:
                loop.add_signal_handler(signal.SIGUSR2, lambda: loop.create_task(self.delete_reading(self.args.delete_on_usr2)))
            stop = loop.create_future()
            loop.add_signal_handler(signal.SIGTERM, lambda: stop.done() or stop.set_result(None))
            await stop
            self.log("stopped", records=len(self.records))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--transport", required=True, help="Bumble HCI transport, e.g. tcp-client:127.0.0.1:9000")
    parser.add_argument("--address", required=True, help="static random address, e.g. F3:A1:18:08:00:01")
    parser.add_argument("--records", type=int, default=10)
    parser.add_argument("--event-log", required=True)
    parser.add_argument("--fault", default="", help="wrong-value:SEQ or skip:SEQ (a planted defect)")
    parser.add_argument("--delete-on-usr2", type=int, default=0, help="the reading SIGUSR2 deletes (0: none)")
    parser.add_argument("--smp-image", default="", help="serve MCUmgr SMP, running this MCUboot image")
    asyncio.run(Meter(parser.parse_args()).run())


if __name__ == "__main__":
    main()
