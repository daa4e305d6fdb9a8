#!/usr/bin/bash
# tetherd-health.sh with a firmware update in the middle, on the real stack: the Glucose meter on Bumble also serves
# MCUmgr's SMP service with MCUboot's two slots (mcumgr_device.py, written from Zephyr's SMP and MCUboot's design
# documents, CBOR by PyPI's cbor2), running an imgtool-signed factory image made on the host; after the cold lane has
# read the stored records, `tether firmware update` through tetherd installs the update image (upload, test, reset:
# the meter drops the link, swaps and comes back; 3 s proving itself; confirm). Then the backfill of step 6 shows the
# health session has the meter again. check-tetherd-health.py also compares the meter's slots with imgtool's hashes.
# Unlike tetherd-firmware.sh, bluetoothd plays only the gateway's role here: the device runs its own stack.
# needs: tetherd tether
# controllers: bumble
# firmware: imgtool
FIRMWARE=1
source /work/guest/lib-health.sh
