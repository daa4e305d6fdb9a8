import Testing
@testable import MCUbootImage

/// imgtool's images changed the ways a file is damaged or forged: every refusal must name what is wrong.
/// Offsets come from MCUboot's layout (docs/design.md "Image format") and the options make-images.sh gave imgtool:
/// ed25519-full-seccnt.img has a 0x20-byte header, a 1000-byte body, a 12-byte protected area (SEC_CNT 7), then
/// the unprotected area SHA256 (32), PUBKEY (44), ED25519 (64): 4 + 36 + 48 + 68 = 156 bytes; 1200 in all.
@Suite struct TamperedImageTests {
    static let bodyStart = 0x20
    static let bodyEnd = 0x20 + 1000
    static let protectedEnd = bodyEnd + 12
    static let imageEnd = protectedEnd + 156

    func seccnt() throws -> [UInt8] { try FixtureFiles.image("ed25519-full-seccnt") }

    @Test func theLayoutIsAsDescribed() throws {
        let parsed = try ParsedImage(seccnt())
        #expect(parsed.bodyRange == Self.bodyStart..<Self.bodyEnd)
        #expect(parsed.protectedAreaRange == Self.bodyEnd..<Self.protectedEnd)
        #expect(parsed.unprotectedAreaRange == Self.protectedEnd..<Self.imageEnd)
        #expect(parsed.hashedRange == 0..<Self.protectedEnd)
        #expect(parsed.protectedTLVs.map(\.type) == [.securityCounter])
        #expect(parsed.unprotectedTLVs.map(\.type) == [.sha256, .publicKey, .ed25519])
    }

    /// Every single byte of a signed image matters: no flipped copy verifies (a planted "skip the hash compare" or
    /// "skip the signature" fails here as well as below).
    @Test func noSingleByteFlipAnywhereVerifies() throws {
        for name in ["ed25519-full-seccnt", "ecdsa-p256-hash"] {
            let image = try FixtureFiles.image(name)
            let keys = try FixtureFiles.trustedKeys()
            for offset in image.indices {
                let verdict = ImageVerifier.inspect(ImageEditing.flip(image, at: offset), trustedKeys: keys)
                #expect(!verdict.isVerified && verdict.refusal != nil, "\(name): a flip at \(offset) verified")
            }
        }
    }

    @Test func aChangedHeaderFieldBodyOrProtectedTLVIsTampered() throws {
        let image = try seccnt()
        let stated = try #require(FixtureFiles.inspect(image).statedHash)
        // load address (4), version minor (21), _pad1 (28), header padding? none at 0x20; body; SEC_CNT's value.
        for offset in [4, 21, 28, Self.bodyStart, Self.bodyStart + 500, Self.bodyEnd - 1, Self.bodyEnd + 8, Self.protectedEnd - 1] {
            let verdict = try FixtureFiles.inspect(ImageEditing.flip(image, at: offset))
            guard case .tampered(let reportedStated, let computed) = verdict.refusal else {
                Issue.record("flip at \(offset): \(String(describing: verdict.refusal))")
                continue
            }
            #expect(reportedStated == stated)
            #expect(computed != stated)
        }
        // The header padding of a 0x200-byte header is hashed too.
        let padded = try FixtureFiles.image("ed25519-hash")
        guard case .tampered = try FixtureFiles.inspect(ImageEditing.flip(padded, at: 0x100)).refusal else {
            Issue.record("a flip in the header padding was not seen")
            return
        }
    }

    @Test func aChangedStatedHashIsTampered() throws {
        let image = try seccnt()
        let verdict = try FixtureFiles.inspect(ImageEditing.flip(image, at: Self.protectedEnd + 4 + 4))
        guard case .tampered(let stated, let computed) = verdict.refusal else {
            Issue.record("\(String(describing: verdict.refusal))")
            return
        }
        #expect(stated != computed)
        #expect(computed == verdict.computedHash)
    }

    @Test func aChangedSignatureIsABadSignature() throws {
        let ed25519 = try seccnt()
        #expect(try FixtureFiles.inspect(ImageEditing.flip(ed25519, at: Self.imageEnd - 1)).refusal == .badSignature(.ed25519, keyName: "ed25519.pem"))
        #expect(try FixtureFiles.inspect(ImageEditing.flip(ed25519, at: Self.imageEnd - 40)).refusal == .badSignature(.ed25519, keyName: "ed25519.pem"))
        // ECDSA: a byte of r, and the zero padding that --pad-sig added.
        let ecdsa = try FixtureFiles.image("ecdsa-p256-full-padsig")
        let signature = try #require(try ParsedImage(ecdsa).unprotectedTLVs.first { $0.type == .ecdsaSignature })
        for offset in [signature.valueOffset + 10, signature.valueOffset + 71] {
            #expect(try FixtureFiles.inspect(ImageEditing.flip(ecdsa, at: offset)).refusal == .badSignature(.ecdsaP256, keyName: "ecdsa-p256.der"))
        }
    }

    @Test func aChangedKeyIsUntrusted() throws {
        // The PUBKEY's last byte: another key, whose hash is not trusted.
        let image = ImageEditing.flip(try seccnt(), at: Self.protectedEnd + 4 + 36 + 47)
        guard case .untrustedKey = try FixtureFiles.inspect(image).refusal else {
            Issue.record("a changed PUBKEY was not refused as untrusted")
            return
        }
        let hashed = try FixtureFiles.image("ed25519-hash")
        let keyHash = try #require(try ParsedImage(hashed).unprotectedTLVs.first { $0.type == .keyHash })
        guard case .untrustedKey(let reported) = try FixtureFiles.inspect(ImageEditing.flip(hashed, at: keyHash.valueOffset)).refusal else {
            Issue.record("a changed KEYHASH was not refused as untrusted")
            return
        }
        #expect(reported == ImageEditing.flip(Array(keyHash.value), at: 0))
    }

    @Test func notAnImage() throws {
        let image = try seccnt()
        #expect(try FixtureFiles.inspect(ImageEditing.flip(image, at: 0)).refusal == .notAnImage(magic: 0x96F3_B83C))
        #expect(try FixtureFiles.inspect(Array("#!/bin/sh\necho hi\n".utf8)).refusal == .notAnImage(magic: 0x622F_2123))
        let swapped = [0x96, 0xF3, 0xB8, 0x3D] + image[4...]
        #expect(try FixtureFiles.inspect(Array(swapped)).refusal == .unsupported(.bigEndian))
    }

    /// Cut at every length: each prefix is refused as truncated in the region the cut falls in.
    @Test func truncatedAtEveryLengthNamesTheRegion() throws {
        let image = try seccnt()
        #expect(image.count == Self.imageEnd)
        for length in 0..<image.count {
            let expected: ImageRefusal
            switch length {
            case ..<32: expected = .truncated(.header, needed: 32, available: length)
            case ..<Self.bodyEnd: expected = .truncated(.body, needed: Self.bodyEnd, available: length)
            case ..<(Self.bodyEnd + 4): expected = .truncated(.protectedTLVInfo, needed: Self.bodyEnd + 4, available: length)
            case ..<Self.protectedEnd: expected = .truncated(.protectedTLVs, needed: Self.protectedEnd, available: length)
            case ..<(Self.protectedEnd + 4): expected = .truncated(.tlvInfo, needed: Self.protectedEnd + 4, available: length)
            default: expected = .truncated(.tlvs, needed: Self.imageEnd, available: length)
            }
            let verdict = try FixtureFiles.inspect(Array(image[..<length]))
            #expect(verdict.refusal == expected, "cut at \(length)")
        }
        // A 0x200-byte header cut inside its padding.
        let padded = try FixtureFiles.image("ed25519-hash")
        #expect(try FixtureFiles.inspect(Array(padded[..<0x100])).refusal == .truncated(.header, needed: 0x200 + 1000, available: 0x100))
    }

    @Test func trailingBytesAreReportedNotRefused() throws {
        let image = try seccnt() + [UInt8](repeating: 0xFF, count: 100)
        let verdict = try FixtureFiles.inspect(image)
        #expect(verdict.isVerified)
        #expect(verdict.image?.trailingByteCount == 100)
    }

    @Test func headerSizesThatLie() throws {
        let image = try seccnt()
        // ih_hdr_size smaller than the header, and past the end of the file.
        #expect(try FixtureFiles.inspect(ImageEditing.setUInt16(image, at: 8, 0x10)).refusal == .inconsistent(.headerSizeTooSmall(0x10)))
        #expect(try FixtureFiles.inspect(ImageEditing.setUInt16(image, at: 8, 0xFFFF)).refusal == .truncated(.header, needed: 0xFFFF + 1000, available: 1200))
        // ih_img_size: as large as it goes (no overflow), and shorter (the TLV info is then looked for in the body).
        #expect(try FixtureFiles.inspect(ImageEditing.setUInt32(image, at: 12, .max)).refusal == .truncated(.body, needed: 0x20 + Int(UInt32.max), available: 1200))
        guard case .inconsistent(.protectedAreaMissing(12, _)) = try FixtureFiles.inspect(ImageEditing.setUInt32(image, at: 12, 999)).refusal else {
            Issue.record("a shorter ih_img_size was not refused")
            return
        }
        // ih_protect_tlv_size: one more than the area, and 0 although a protected area follows.
        #expect(try FixtureFiles.inspect(ImageEditing.setUInt16(image, at: 10, 13)).refusal == .inconsistent(.protectedAreaSizeMismatch(header: 13, area: 12)))
        #expect(try FixtureFiles.inspect(ImageEditing.setUInt16(image, at: 10, 0)).refusal == .inconsistent(.protectedAreaSizeMismatch(header: 0, area: 12)))
        // A protected size on an image without a protected area.
        let plain = try FixtureFiles.image("ecdsa-p256-full-padsig")
        #expect(try FixtureFiles.inspect(ImageEditing.setUInt16(plain, at: 10, 8)).refusal == .inconsistent(.protectedAreaMissing(protectedTLVSize: 8, foundMagic: 0x6907)))
    }

    @Test func tlvSizesThatLie() throws {
        let image = try seccnt()
        let info = Self.protectedEnd + 2
        // The unprotected area's total: one byte more than the file holds, one less than its records, below 4.
        #expect(try FixtureFiles.inspect(ImageEditing.setUInt16(image, at: info, 157)).refusal == .truncated(.tlvs, needed: 1201, available: 1200))
        #expect(try FixtureFiles.inspect(ImageEditing.setUInt16(image, at: info, 155)).refusal == .inconsistent(.recordOverrunsArea(protected: false, offset: Self.protectedEnd + 4 + 36 + 48)))
        #expect(try FixtureFiles.inspect(ImageEditing.setUInt16(image, at: info, 2)).refusal == .inconsistent(.areaSmallerThanItsInfo(protected: false, total: 2)))
        // A total that ends between two records leaves a record header cut short.
        #expect(try FixtureFiles.inspect(ImageEditing.setUInt16(image, at: info, 4 + 36 + 2)).refusal == .inconsistent(.recordOverrunsArea(protected: false, offset: Self.protectedEnd + 4 + 36)))
        // The signature record's length: one more, and 0xffff.
        let signatureLength = Self.protectedEnd + 4 + 36 + 48 + 2
        for length: UInt16 in [65, 0xFFFF] {
            #expect(try FixtureFiles.inspect(ImageEditing.setUInt16(image, at: signatureLength, length)).refusal == .inconsistent(.recordOverrunsArea(protected: false, offset: Self.protectedEnd + 4 + 36 + 48)))
        }
        // The SEC_CNT record's length inside the protected area.
        #expect(try FixtureFiles.inspect(ImageEditing.setUInt16(image, at: Self.bodyEnd + 6, 5)).refusal == .inconsistent(.recordOverrunsArea(protected: true, offset: Self.bodyEnd + 4)))
        // The unprotected info's magic.
        #expect(try FixtureFiles.inspect(ImageEditing.setUInt16(image, at: Self.protectedEnd, 0x6908)).refusal == .inconsistent(.tlvAreaMissing(offset: Self.protectedEnd, foundMagic: 0x6908)))
        // A shorter SHA256 record (the area rewritten to stay consistent).
        let shortHash = try ImageEditing.rewritingUnprotectedTLVs(image) { records in
            records.map { $0.type == 0x10 ? ($0.type, Array($0.value.dropLast())) : $0 }
        }
        #expect(try FixtureFiles.inspect(shortHash).refusal == .malformedTLV(.sha256, length: 31, expected: 32))
    }

    @Test func encryptedImagesAreUnsupported() throws {
        let image = ImageEditing.setUInt32(try seccnt(), at: 16, 0x04)
        #expect(try FixtureFiles.inspect(image).refusal == .unsupported(.encrypted))
    }

    @Test func duplicateConflictingAndMisplacedTLVs() throws {
        let image = try seccnt()
        let duplicated = try ImageEditing.rewritingUnprotectedTLVs(image) { $0 + [$0[0]] }
        #expect(try FixtureFiles.inspect(duplicated).refusal == .duplicateTLV(.sha256))
        let twoSignatures = try ImageEditing.rewritingUnprotectedTLVs(image) { $0 + [(0x22, [UInt8](repeating: 0, count: 70))] }
        #expect(try FixtureFiles.inspect(twoSignatures).refusal == .conflictingTLVs(.ed25519, .ecdsaSignature))
        let twoKeyForms = try ImageEditing.rewritingUnprotectedTLVs(image) { $0 + [(0x01, [UInt8](repeating: 0, count: 32))] }
        #expect(try FixtureFiles.inspect(twoKeyForms).refusal == .conflictingTLVs(.publicKey, .keyHash))
        // A security counter outside the protected area could be raised by anyone (MCUboot's allow list).
        let unprotectedCounter = try ImageEditing.rewritingUnprotectedTLVs(image) { [(0x50, [9, 0, 0, 0])] + $0 }
        #expect(try FixtureFiles.inspect(unprotectedCounter).refusal == .unprotectedTLVNotAllowed(.securityCounter, offset: Self.protectedEnd + 4))
        let vendor = try ImageEditing.rewritingUnprotectedTLVs(image) { $0 + [(0x00A0, [1, 2, 3])] }
        #expect(try FixtureFiles.inspect(vendor).refusal == .unprotectedTLVNotAllowed(ImageTLVType(0x00A0), offset: Self.imageEnd))
    }

    @Test func missingPieces() throws {
        let image = try seccnt()
        let noSignature = try ImageEditing.rewritingUnprotectedTLVs(image) { $0.filter { $0.type != 0x24 } }
        #expect(try FixtureFiles.inspect(noSignature).refusal == .unsigned)
        let noKey = try ImageEditing.rewritingUnprotectedTLVs(image) { $0.filter { $0.type != 0x02 } }
        #expect(try FixtureFiles.inspect(noKey).refusal == .signatureWithoutKey)
        let noHash = try ImageEditing.rewritingUnprotectedTLVs(image) { $0.filter { $0.type != 0x10 } }
        #expect(try FixtureFiles.inspect(noHash).refusal == .noHash)
        let sha512 = try ImageEditing.rewritingUnprotectedTLVs(image) { $0.map { $0.type == 0x10 ? (0x12, $0.value + $0.value) : $0 } }
        #expect(try FixtureFiles.inspect(sha512).refusal == .unsupported(.hash(.sha512)))
        let empty = try ImageEditing.rewritingUnprotectedTLVs(image) { _ in [] }
        #expect(try FixtureFiles.inspect(empty).refusal == .noHash)
    }
}
