#!/usr/bin/env bash
# Regenerates Tests/MCUbootImageTests/Fixtures: MCUboot images signed by imgtool 2.5.0 (PyPI, pinned in
# scripts/setup/imgtool-venv.sh), the keys that signed them, and the trusted-key directory the tests load.
# Run by developers when the fixtures must change, never by CI; commit what it writes. The keys are TEST KEYS,
# made fresh on every run: they sign nothing but these fixtures.
#
#   Tests/MCUbootImageTests/make-images.sh          # rewrites Fixtures/ (and Fuzz/seeds/mcuboot with --seeds)
#   Tests/MCUbootImageTests/make-images.sh --seeds  # also copies the images into Fuzz/seeds/mcuboot
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
imgtool="$("$root/scripts/setup/imgtool-venv.sh")"
out="$here/Fixtures"
rm -rf "$out"
mkdir -p "$out/keys" "$out/trusted"

# Keys: private keys (PKCS#8 PEM, imgtool keygen) in keys/, the trusted public keys in trusted/ in both encodings
# the loader reads (PEM from `getpub -e pem`, DER SubjectPublicKeyInfo from `getpub -e raw`).
"$imgtool" keygen -t ed25519 -k "$out/keys/ed25519.pem"
"$imgtool" keygen -t ecdsa-p256 -k "$out/keys/ecdsa-p256.pem"
"$imgtool" keygen -t ed25519 -k "$out/keys/untrusted-ed25519.pem"
"$imgtool" keygen -t rsa-2048 -k "$out/keys/rsa-2048.pem"
"$imgtool" getpub -k "$out/keys/ed25519.pem" -e pem -o "$out/trusted/ed25519.pem"
"$imgtool" getpub -k "$out/keys/ecdsa-p256.pem" -e raw -o "$out/trusted/ecdsa-p256.der"
"$imgtool" getpub -k "$out/keys/untrusted-ed25519.pem" -e pem -o "$out/untrusted-ed25519.pub.pem"

# The body: 1000 bytes of a fixed pattern (no header room: --pad-header adds it), and the same with 0x20 zero
# bytes in front for the image made without --pad-header (imgtool then writes the header over them).
python3 -c 'import sys; sys.stdout.buffer.write(bytes((i * 7 + 3) & 0xFF for i in range(1000)))' > "$out/body.bin"
{ head -c 32 /dev/zero; cat "$out/body.bin"; } > "$out/body-with-header-room.bin"

sign() { "$imgtool" sign --slot-size 0x10000 "$@" >/dev/null; }
# Ed25519, key hash (the default format), header 0x200.
sign -k "$out/keys/ed25519.pem" -H 0x200 --pad-header -v 1.2.3+4 "$out/body.bin" "$out/ed25519-hash.img"
# Ed25519, full public key, header 0x20, a security counter (a protected TLV).
sign -k "$out/keys/ed25519.pem" --public-key-format full -H 0x20 --pad-header -v 2.0.1+99 -s 7 \
    "$out/body.bin" "$out/ed25519-full-seccnt.img"
# ECDSA P-256, key hash, header 0x200, security counter from the version.
sign -k "$out/keys/ecdsa-p256.pem" -H 0x200 --pad-header -v 0.9.12+3 -s auto "$out/body.bin" "$out/ecdsa-p256-hash.img"
# ECDSA P-256, full key, header 0x20 written over the body's zeros (no --pad-header), signature padded to 72 bytes
# as imgtool did for MCUboot before 1.5 (--pad-sig).
sign -k "$out/keys/ecdsa-p256.pem" --public-key-format full -H 0x20 -v 3.1.0+0 --pad-sig \
    "$out/body-with-header-room.bin" "$out/ecdsa-p256-full-padsig.img"
# Signed by a key that is not in trusted/.
sign -k "$out/keys/untrusted-ed25519.pem" -H 0x20 --pad-header -v 1.0.0 "$out/body.bin" "$out/untrusted-ed25519.img"
# No key: a SHA256 TLV and nothing else.
sign -H 0x20 --pad-header -v 1.0.0+1 "$out/body.bin" "$out/unsigned.img"
# Signature types Tether does not verify: RSA-2048 PSS, and Ed25519 "pure" (signed over the image, no SHA256 TLV).
sign -k "$out/keys/rsa-2048.pem" -H 0x20 --pad-header -v 1.0.0 "$out/body.bin" "$out/rsa-2048.img"
sign -k "$out/keys/ed25519.pem" --pure -H 0x20 --pad-header -v 1.0.0 "$out/body.bin" "$out/ed25519-pure.img"
rm "$out/body-with-header-room.bin"

if [ "${1:-}" = --seeds ]; then
    seeds="$root/Fuzz/seeds/mcuboot"
    mkdir -p "$seeds"
    for image in ed25519-full-seccnt ecdsa-p256-full-padsig unsigned rsa-2048 ed25519-pure; do
        cp "$out/$image.img" "$seeds/$image.img"
    done
fi
ls -l "$out" "$out/trusted"
