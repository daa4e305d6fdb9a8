#!/usr/bin/bash
# The stack alone: both controllers are powered LE adapters in bluetoothd. Proves the harness, not Tether.
# needs:
set -euo pipefail
for adapter in hci0 hci1; do
    dbus-send --system --print-reply --dest=org.bluez /org/bluez/$adapter org.freedesktop.DBus.Properties.Set \
        string:org.bluez.Adapter1 string:Powered variant:boolean:true
    dbus-send --system --print-reply --dest=org.bluez /org/bluez/$adapter org.freedesktop.DBus.Properties.GetAll \
        string:org.bluez.Adapter1 | tr -s ' \n' ' ' | grep -oE '"(Address|Powered|Roles)"[^"]*"?[^"]*"?' || true
    echo
done
echo "smoke: both adapters up" | tee /work/summary.txt
