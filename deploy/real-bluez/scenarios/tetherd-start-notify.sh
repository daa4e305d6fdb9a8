#!/usr/bin/bash
# As tetherd.sh, with tetherd forced onto the StartNotify fallback (notify_method = "start-notify").
# needs: tether-peripheral tetherd tether tether-server
NOTIFY_METHOD=start-notify
source /work/guest/lib-tetherd.sh
