#!/usr/bin/env bash
# Makes the firmware a scenario with a "# firmware: imgtool" line updates its peripheral with, on the host before
# the VM boots (imgtool is not in the guest): a fresh Ed25519 TEST key (it signs nothing else), two MCUboot images of
# one body signed by imgtool 2.5.0 (PyPI, pinned: scripts/setup/imgtool-venv.sh), the trusted-key directory tetherd
# reads, and each image's SHA256 TLV hash as imgtool's own dumpinfo prints it, for check-tetherd.py to compare with
# what the device runs (never Tether's image parser on both sides).
#
#   deploy/real-bluez/make-firmware-images.sh OUT
#     OUT/factory.img   version 1.0.0+1, what tether-peripheral runs (confirmed) at start
#     OUT/update.img    version 1.1.0+2, what the scenario installs with `tether firmware update`
#     OUT/trusted/      the public key (PEM), tetherd's [firmware] trusted_keys
#     OUT/*.sha256      the images' SHA256 TLV hashes, lowercase hex
set -euo pipefail
out=${1:?usage: make-firmware-images.sh OUT}
root="$(cd "$(dirname "$0")/../.." && pwd)"
imgtool="$("$root/scripts/setup/imgtool-venv.sh")"
rm -rf "$out" && mkdir -p "$out/trusted"
key=$(mktemp) && trap 'rm -f "$key"' EXIT
"$imgtool" keygen -t ed25519 -k "$key"
"$imgtool" getpub -k "$key" -e pem -o "$out/trusted/vm-test-ed25519.pem"
# 24 KiB of a fixed pattern: several upload chunks at any MTU, small enough for the emulated radio.
python3 -c 'import sys; sys.stdout.buffer.write(bytes((i * 31 + 7) & 0xFF for i in range(24 * 1024)))' > "$out/body.bin"
sign() { "$imgtool" sign -k "$key" --slot-size 0x60000 -H 0x200 --pad-header -v "$1" "$out/body.bin" "$out/$2" > /dev/null; }
sign 1.0.0+1 factory.img
sign 1.1.0+2 update.img
rm "$out/body.bin"
for image in factory update; do
    "$imgtool" verify -k "$key" "$out/$image.img" > /dev/null
    # dumpinfo prints each TLV as "type: SHA256 (0x10)", "len:", then "data: 0x.. 0x.." over four lines.
    "$imgtool" dumpinfo "$out/$image.img" | python3 -c '
import re, sys
lines = sys.stdin.read().splitlines()
at = next(i for i, l in enumerate(lines) if "type: SHA256" in l)
digits = []
for line in lines[at + 2:]:
    found = re.findall(r"0x([0-9a-f]{2})", line)
    if not found or (digits and "data:" in line): break
    digits += found
    if len(digits) >= 32: break
assert len(digits) == 32, digits
print("".join(digits))' > "$out/$image.sha256"
done
