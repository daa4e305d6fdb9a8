#!/usr/bin/bash
# As tetherd.sh, and then a firmware update of the device through tetherd over the real stack (lib-tetherd.sh, step 8):
# the peripheral serves MCUmgr's SMP service with an imgtool-signed factory image, and `tether firmware update`
# installs another one (upload, test, reset, back on the new image, confirm). Not in CI: bluetoothd 5.66, serving
# both adapters, crashed after the update's reset in 2 of the 3 runs that got that far, before tether-peripheral
# kept its GATT application across a reboot; one pass since (deploy/real-bluez/README.md). tetherd-health-firmware
# carries the update in CI.
# needs: tether-peripheral tetherd tether tether-server
# firmware: imgtool
NOTIFY_METHOD=auto
FIRMWARE=1
source /work/guest/lib-tetherd.sh
