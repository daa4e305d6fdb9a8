import Foundation
import Testing
@testable import MCUbootImage

/// The committed images made by imgtool 2.5.0 (make-images.sh). Expected digests and versions are what
/// `imgtool verify -k Fixtures/keys/<key>.pem <image>` printed for them ("Image digest: ...", "Image version: ..."),
/// not anything Tether computed; the header fields are the options make-images.sh passed to `imgtool sign`.
@Suite struct ImgtoolFixtureTests {
    struct Expected: Sendable, CustomTestStringConvertible {
        var name: String
        var headerSize: UInt16
        var protectedTLVSize: UInt16
        var version: String
        var digest: String
        var signature: ImageTLVType
        var key: String
        var securityCounter: UInt32?
        var testDescription: String { name }
    }

    static let verified: [Expected] = [
        Expected(
            name: "ed25519-hash", headerSize: 0x200, protectedTLVSize: 0, version: "1.2.3+4",
            digest: "c6c3ac9b529c7ad4f180093e982ec6e3f692c31cf42c1f9b83a6c1f3548fc1a4", signature: .ed25519,
            key: "ed25519.pem"),
        // -s 7: a SEC_CNT TLV (4 + 4 bytes) in a protected area with its 4-byte info: 12 bytes.
        Expected(
            name: "ed25519-full-seccnt", headerSize: 0x20, protectedTLVSize: 12, version: "2.0.1+99",
            digest: "5e8b5a3b43d6c8c35e70086ca95619da8d6f59379ef0425d5423802e4317f3d3", signature: .ed25519,
            key: "ed25519.pem", securityCounter: 7),
        // -s auto: (major << 24) + (minor << 16) + revision (imgtool image.py `Image.__init__`) = 0x0009000c.
        Expected(
            name: "ecdsa-p256-hash", headerSize: 0x200, protectedTLVSize: 12, version: "0.9.12+3",
            digest: "88eccfea243544e110af5f8aa81558d4a76b96ce13a2715f9450a913b0bc6eae", signature: .ecdsaSignature,
            key: "ecdsa-p256.der", securityCounter: 0x0009_000C),
        Expected(
            name: "ecdsa-p256-full-padsig", headerSize: 0x20, protectedTLVSize: 0, version: "3.1.0+0",
            digest: "89ec53a9a6beebf8b5c5c604443650e6f6a8d29a8ddcf6ab2412f6848fa3985a", signature: .ecdsaSignature,
            key: "ecdsa-p256.der"),
    ]

    @Test(arguments: verified)
    func imgtoolImagesVerifyAgainstTheTrustedKeys(_ expected: Expected) throws {
        let verdict = try FixtureFiles.inspect(FixtureFiles.image(expected.name))
        #expect(verdict.refusal == nil, "\(verdict.refusal.map(String.init(describing:)) ?? "")")
        #expect(verdict.isVerified)
        let header = try #require(verdict.header)
        #expect(header.headerSize == expected.headerSize)
        #expect(header.protectedTLVSize == expected.protectedTLVSize)
        #expect(header.imageSize == 1000)  // make-images.sh's body
        #expect(header.version.description == expected.version)
        #expect(verdict.statedHash == bytes(hex: expected.digest))
        #expect(verdict.computedHash == bytes(hex: expected.digest))
        #expect(verdict.signatureType == expected.signature)
        #expect(verdict.securityCounter == expected.securityCounter)
        guard case .trusted(let key) = verdict.key else {
            Issue.record("key verdict \(verdict.key)")
            return
        }
        #expect(key.name == expected.key)
    }

    @Test func theBodyIsTheBytesImgtoolWasGiven() throws {
        let image = try FixtureFiles.image("ed25519-hash")
        let parsed = try ParsedImage(image)
        #expect(Array(image[parsed.bodyRange]) == (try FixtureFiles.bytes("body.bin")))
        #expect(parsed.trailingByteCount == 0)
    }

    /// imgtool --pad-sig pads the DER signature with zeros to 72 bytes (keys/ecdsa.py `sign`).
    @Test func paddedECDSASignatureIsSeventyTwoBytes() throws {
        let parsed = try ParsedImage(FixtureFiles.image("ecdsa-p256-full-padsig"))
        let signature = try #require(parsed.unprotectedTLVs.first { $0.type == .ecdsaSignature })
        #expect(signature.value.count == 72)
        #expect(signature.value.last == 0)
    }

    @Test func signedByAnotherKeyIsUntrusted() throws {
        let verdict = try FixtureFiles.inspect(FixtureFiles.image("untrusted-ed25519"))
        let other = try TrustedKey(name: "other", contents: FixtureFiles.bytes("untrusted-ed25519.pub.pem"))
        #expect(verdict.refusal == .untrustedKey(keyHash: other.keyHash))
        #expect(verdict.key == .untrusted(keyHash: other.keyHash))
        #expect(!verdict.isVerified)
        // The same image verifies once that key is trusted: the refusal was about trust, not the image.
        let trustingIt = ImageVerifier.inspect(try FixtureFiles.image("untrusted-ed25519"), trustedKeys: TrustedKeys([other]))
        #expect(trustingIt.isVerified)
    }

    @Test func unsignedImageIsRefused() throws {
        let verdict = try FixtureFiles.inspect(FixtureFiles.image("unsigned"))
        #expect(verdict.refusal == .unsigned)
        #expect(verdict.key == .none)
        // It is intact: its hash is imgtool's ("Image digest:" of `imgtool verify unsigned.img`).
        #expect(verdict.statedHash == bytes(hex: "41537795f97e972ac7307340dd510c92d70cf3bc94236f97b60a182652770f38"))
        #expect(verdict.computedHash == verdict.statedHash)
    }

    @Test func rsaAndPureSignaturesAreRefusedAsUnsupported() throws {
        #expect(try FixtureFiles.inspect(FixtureFiles.image("rsa-2048")).refusal == .unsupported(.signature(.rsa2048PSS)))
        #expect(try FixtureFiles.inspect(FixtureFiles.image("ed25519-pure")).refusal == .unsupported(.pureSignature))
    }

    @Test func noTrustedKeysTrustsNothing() throws {
        let verdict = ImageVerifier.inspect(try FixtureFiles.image("ed25519-hash"), trustedKeys: TrustedKeys([]))
        guard case .untrustedKey = verdict.refusal else {
            Issue.record("\(String(describing: verdict.refusal))")
            return
        }
    }

    /// A trusted Ed25519 key whose KEYHASH an ECDSA signature follows: refused before any verification.
    @Test func keyOfTheWrongAlgorithmIsRefused() throws {
        var image = try FixtureFiles.image("ecdsa-p256-hash")
        let parsed = try ParsedImage(image)
        let keyHash = try #require(parsed.unprotectedTLVs.first { $0.type == .keyHash })
        let ed25519 = try TrustedKey(name: "ed25519.pem", contents: FixtureFiles.bytes("trusted/ed25519.pem"))
        image.replaceSubrange(keyHash.valueOffset..<(keyHash.valueOffset + 32), with: ed25519.keyHash)
        let verdict = try FixtureFiles.inspect(image)
        #expect(verdict.refusal == .keyTypeMismatch(key: "ed25519.pem", signature: .ecdsaP256))
    }
}
