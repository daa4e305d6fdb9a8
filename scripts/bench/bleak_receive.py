"""bleak receiving tether-sim's benchmark stream: the comparison side of tether-gateway-bench.

Usage: bleak_receive.py EXPECTED_PER_DEVICE ADDRESS...   (DBUS_SYSTEM_BUS_ADDRESS = the simulator's bus)

Connects every device, subscribes to Tether's TX characteristic with bleak's default (StartNotify), prints READY
and then counts notifications until EXPECTED_PER_DEVICE arrived from every device or nothing came for 5 s.
Prints one JSON line: received, seconds (first notification to last), cpu_seconds (this process, user + system,
over the same span as getrusage measures it: READY to the end).
"""
import asyncio, json, resource, sys, time

from bleak import BleakClient, BleakScanner

TX = "54455448-0003-4c1e-8e5a-7a3d2f1b0c00"


def cpu():
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


async def main():
    expected = int(sys.argv[1])
    addresses = sys.argv[2:]
    clients = []
    for address in addresses:
        device = await BleakScanner.find_device_by_address(address, timeout=20)
        if device is None:
            raise SystemExit(f"{address} not found")
        client = BleakClient(device)
        await client.connect()
        clients.append(client)
    state = {"received": 0, "first": None, "last": None}

    def on_value(_sender, _data):
        now = time.perf_counter()
        if state["first"] is None:
            state["first"] = now
        state["last"] = now
        state["received"] += 1

    for client in clients:
        await client.start_notify(TX, on_value)
    cpu_start = cpu()
    print("READY", flush=True)
    total = expected * len(clients)
    idle_since = time.perf_counter()
    seen = 0
    while state["received"] < total:
        await asyncio.sleep(0.05)
        if state["received"] != seen:
            seen = state["received"]
            idle_since = time.perf_counter()
        elif time.perf_counter() - idle_since > 5:
            break
    cpu_used = cpu() - cpu_start
    seconds = (state["last"] - state["first"]) if state["first"] is not None else 0.0
    for client in clients:
        await client.stop_notify(TX)
        await client.disconnect()
    print(json.dumps({"received": state["received"], "seconds": seconds, "cpu_seconds": cpu_used}), flush=True)


asyncio.run(main())
