#!/usr/bin/bash
# The real gateway on real BlueZ: tetherd + the tether CLI + tether-server sync (see lib-tetherd.sh). tetherd picks
# the subscription itself (notify_method = "auto": AcquireNotify, which bluetoothd 5.66 offers).
# needs: tether-peripheral tetherd tether tether-server
NOTIFY_METHOD=auto
source /work/guest/lib-tetherd.sh
