// libFuzzer target for the MCUboot image verifier (issue 16, items 1 and 7) and the trusted-key reader.
//
// Input layout: the whole input is an image file, as `tether firmware inspect` reads it; the same bytes are also
// read as a trusted-key file. The trusted keys are the two public keys of Tests/MCUbootImageTests/Fixtures/trusted,
// so the seeds (Fuzz/seeds/mcuboot, imgtool images signed by those keys) reach the signature checks.
//
// Traps (real bugs): any crash (a size read from the image used unchecked, an overflow, a slice out of range); a
// verified image whose SHA256 TLV differs from the computed hash or whose key is not trusted; a parsed image whose
// regions do not lie in order inside the file or whose TLV values lie outside their area.

import Foundation
import MCUbootImage

let trustedKeys: TrustedKeys = {
    let ed25519 = "-----BEGIN PUBLIC KEY-----\nMCowBQYDK2VwAyEAlgL7kcDAGnlsgR0JsR/gBYQ1/DzJyzbfLLSlo+Kj02M=\n-----END PUBLIC KEY-----\n"
    let p256 = "MFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAEqb9YSU861lLqCnffcjGTE/XpyS9IY+Q1F10y3z+hGg6gwp3ZZxQev46QE7Jymtmw41g0mqkrytnHP3UL75TAxQ=="
    do {
        return TrustedKeys([
            try TrustedKey(name: "ed25519.pem", contents: Array(ed25519.utf8)),
            try TrustedKey(name: "ecdsa-p256.der", contents: Array(Data(base64Encoded: p256) ?? Data())),
        ])
    } catch {
        fatalError("the fuzzer's trusted keys do not load: \(error)")
    }
}()

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ start: UnsafeRawPointer, _ count: Int) -> CInt {
    let bytes = Array(UnsafeRawBufferPointer(start: start, count: count))
    let verdict = ImageVerifier.inspect(bytes, trustedKeys: trustedKeys)
    _ = verdict.refusal.map { ($0.code, $0.description) }

    if let image = verdict.image {
        check(image.bodyRange.lowerBound >= ImageHeader.byteCount, "body starts inside the header")
        var end = image.bodyRange.upperBound
        if let protected = image.protectedAreaRange {
            check(protected.lowerBound == end, "protected area not right after the body")
            check(protected.count == Int(image.header.protectedTLVSize), "protected area size differs from the header's")
            end = protected.upperBound
        }
        check(image.unprotectedAreaRange.lowerBound == end, "TLV area not right after the protected area")
        check(image.unprotectedAreaRange.upperBound + image.trailingByteCount == bytes.count, "trailing bytes miscounted")
        check(image.hashedRange.upperBound <= bytes.count, "hashed range past the end")
        for tlv in image.tlvs {
            let area = tlv.isProtected ? image.protectedAreaRange : image.unprotectedAreaRange
            guard let area else { fatalError("a protected TLV without a protected area") }
            check(area.contains(tlv.valueOffset - 4) && tlv.valueOffset + tlv.value.count <= area.upperBound, "TLV outside its area")
            check(tlv.value.elementsEqual(bytes[tlv.valueOffset..<(tlv.valueOffset + tlv.value.count)]), "TLV value is not the file's bytes")
        }
    } else {
        check(verdict.refusal != nil, "no image and no refusal")
    }
    if verdict.isVerified {
        check(verdict.statedHash != nil && verdict.statedHash == verdict.computedHash, "verified with a hash that does not match")
        guard case .trusted = verdict.key else { fatalError("verified without a trusted key") }
    }

    if let key = try? TrustedKey(name: "fuzz", contents: bytes) {
        check(key.keyHash.count == 32, "a key hash that is not SHA-256")
        check(key.subjectPublicKeyInfo.count == (key.algorithm == .ed25519 ? 44 : 91), "an SPKI of the wrong size")
    }
    return 0
}

func check(_ condition: Bool, _ message: @autoclosure () -> String) {
    if !condition { fatalError(message()) }
}
