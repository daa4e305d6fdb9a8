#!/usr/bin/bash
# A standard health device on the real stack: a Glucose meter written on Bumble (glucose-meter.py, an independent
# BLE host: GLS v1.0.1 from the specification) behind Bumble's vhci controller, and the real tetherd + tether CLI on
# the guest's bluetoothd. `tether pair` bonds it (just-works LE Secure Connections: the meter has no display and no
# keyboard); tetherd's cold lane reads its 10 stored records over RACP (records as notifications, the control
# point's answers as indications); the meter takes one more reading while connected and `tether health backfill`
# must read exactly that one. Before that a person deletes reading 7 in the meter's menu: tetherd must find it gone by
# counting records within ranges on the next connection and tombstone its sample. check-tetherd-health.py then
# compares the meter's records with tetherd's database.
# needs: tetherd tether
# controllers: bumble
source /work/guest/lib-health.sh
