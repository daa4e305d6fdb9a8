#!/usr/bin/env python3
"""Says whether a failed real-BlueZ VM run failed on a known emulation flake, from the run folder's logs.

    flake-signature.py RUN_FOLDER

Exit 0 and one line `flake: <name>: <evidence>` when the run matches a known signature of the emulated stack
(software-emulated controllers under TCG), exit 1 with what was checked when it does not. scripts/vm/ci-scenario.sh
retries the scenario only on exit 0 here: any other failure is Tether's, or unknown, and fails CI at once.

The signatures, each seen in earlier runs and each proved from the emulator's side, not from Tether's symptoms:
- btvirt-reset-window: btvirt's controllers missed the kernel's 2 s HCI_Reset bound on every one of stage 2's
  attempts ("Opcode 0x0c03 failed: -110"; stage2.sh gives up after 8).
- kernel-gpf-hci_chan_del: a general-protection fault in the kernel's Bluetooth stack with hci_chan_del in its trace
  (L2CAP socket release under TCG, Debian 6.1.0-56); bluetoothd dies with it. The same release has also stopped
  on the kernel's own list check instead ("kernel BUG at lib/list_debug.c", hci_chan_del from l2cap_sock_release in
  the trace): the same corrupted channel list, caught one step earlier. No user-space program can corrupt a kernel
  list, so either form is the kernel's failure, not Tether's.
- advertisement-lost: `tether scan` never listed the device, and the central controller's btmon trace holds no
  advertising report from the device's address at all (if it holds one, the scan missed a report it had: Tether's
  failure, not the emulator's).
- le-connection-never-completed: `tether pair` failed, the central controller was asked to create an LE connection
  and never reported one complete (the emulated link never came up; bluetoothd then cancels the bonding)."""
import re
import subprocess
import sys
from pathlib import Path

run = Path(sys.argv[1]) if len(sys.argv) == 2 else sys.exit("usage: flake-signature.py RUN_FOLDER")
checked = []


def read(name):
    path = run / name
    return path.read_text(errors="replace") if path.is_file() else None


def btmon_blocks():
    """The btmon trace as (controller, text) blocks, one per HCI packet; None without a readable trace."""
    if not (run / "btmon.snoop").is_file():
        return None
    try:
        decoded = subprocess.run(["btmon", "-r", str(run / "btmon.snoop")], capture_output=True, text=True, timeout=120,
                                 errors="replace")
    except (OSError, subprocess.TimeoutExpired):
        return None
    # Both btmon signatures rest on something being absent, which only a whole trace can show: btmon 5.66 has been
    # seen to crash (SIGSEGV) part-way through a trace, and a truncated decode proves nothing.
    if decoded.returncode != 0:
        checked.append(f"btmon -r exited {decoded.returncode}: the trace could not be read whole")
        return None
    text = decoded.stdout
    blocks, current = [], None
    for line in text.splitlines():
        header = re.match(r"^[<>@=] .*\[(hci\d+)\]", line)
        if header:
            current = [header.group(1), line]
            blocks.append(current)
        elif current is not None:
            current[1] += "\n" + line
    return [(controller, body) for controller, body in blocks]


def meta_event(block, subevent):
    """Whether a btmon block is an LE Meta Event of the given subevent (not, say, a Set Event Mask naming it)."""
    lines = block.splitlines()
    return len(lines) > 1 and "HCI Event: LE Meta Event" in lines[0] and re.match(rf"^\s+{subevent}", lines[1]) is not None


def flake(name, evidence):
    print(f"flake: {name}: {evidence}")
    sys.exit(0)


result = (read("result") or "").strip()

# btvirt-reset-window
checked.append("btvirt-reset-window (result)")
if result.startswith("FAIL btvirt never brought up two controllers"):
    misses = [l for l in (read("guest.log") or "").splitlines() if "failed: -110" in l]
    if misses:
        flake("btvirt-reset-window", f"{len(misses)} btvirt starts missed HCI_Reset's bound: {misses[-1].strip()}")

# kernel-gpf-hci_chan_del: in dmesg.txt (the guest survived) or console.log (it did not).
checked.append("kernel-gpf-hci_chan_del (dmesg.txt, console.log)")
for name in ("dmesg.txt", "console.log"):
    lines = (read(name) or "").splitlines()
    for index, line in enumerate(lines):
        kernel_fault = "general protection fault" in line or "kernel BUG at lib/list_debug.c" in line
        if kernel_fault and any("hci_chan_del" in l for l in lines[index:index + 80]):
            flake("kernel-gpf-hci_chan_del", f"{name}: {line.strip()} ... hci_chan_del in its trace")

scenario = read("scenario.log") or ""
address = (read("peripheral-address") or "").strip().upper()
central = "hci1"  # lib-tetherd.sh: tetherd on hci1, the device on hci0
blocks = None

# advertisement-lost
checked.append("advertisement-lost (scenario.log, btmon trace)")
if "tether scan did not list" in scenario and address:
    blocks = btmon_blocks()
    if blocks is not None:
        reports = [b for c, b in blocks if c == central and meta_event(b, r"LE (Extended )?Advertising Report \(0x(02|0d)\)")
                   and f"ADDRESS: {address}" in b.upper()]
        if not reports:
            flake("advertisement-lost", f"no advertising report from {address} reached {central} in btmon's trace")
        checked[-1] += f": {central} received {len(reports)} reports from {address}, so the scan missed them"

# le-connection-never-completed
checked.append("le-connection-never-completed (pair-status, btmon trace)")
pair_status = (read("pair-status") or "").strip()
if pair_status not in ("", "0"):
    blocks = blocks if blocks is not None else btmon_blocks()
    if blocks is not None:
        # btmon shortens long command names in its header lines ("LE Create Connec.."); the opcodes are exact:
        # LE Create Connection 0x08|0x000d, LE Extended Create Connection 0x08|0x0043.
        creates = [b for c, b in blocks if c == central and re.search(r"^< HCI Command: .*\(0x08\|0x00(0d|43)\)", b)]
        completes = [b for c, b in blocks if c == central
                     and meta_event(b, r"LE (Enhanced )?Connection Complete( v2)? \(0x(01|0a|29)\)") and "Status: Success" in b]
        if creates and not completes:
            flake("le-connection-never-completed",
                  f"tether pair exited {pair_status}; {central} was asked {len(creates)} times to connect and never connected")
        checked[-1] += f": {len(creates)} create-connection commands, {len(completes)} successful completions"

print(f"no known emulation-flake signature in {run} (result: {result or 'none'}); checked: " + "; ".join(checked))
sys.exit(1)
