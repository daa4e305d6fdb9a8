import Crypto
import Foundation
import Testing
@testable import MCUbootImage

/// Loading trusted keys: imgtool's own public key files, in PEM and DER, and refusals for what is not one.
@Suite struct TrustedKeyTests {
    /// The KEYHASH TLV imgtool wrote into its image (image.py: SHA-256 of `get_public_bytes()`, the SPKI DER) equals
    /// the hash of the key file `imgtool getpub` wrote: the hash is over the SubjectPublicKeyInfo, for both types.
    @Test(arguments: [("ed25519-hash", "trusted/ed25519.pem", SignatureAlgorithm.ed25519), ("ecdsa-p256-hash", "trusted/ecdsa-p256.der", .ecdsaP256)])
    func keyHashIsTheHashOfTheSubjectPublicKeyInfo(image: String, keyFile: String, algorithm: SignatureAlgorithm) throws {
        let key = try TrustedKey(name: keyFile, contents: FixtureFiles.bytes(keyFile))
        #expect(key.algorithm == algorithm)
        let keyHash = try #require(try ParsedImage(FixtureFiles.image(image)).unprotectedTLVs.first { $0.type == .keyHash })
        #expect(Array(keyHash.value) == key.keyHash)
    }

    /// The PUBKEY TLV (`--public-key-format full`) is the very SPKI the key file holds.
    @Test func publicKeyTLVIsTheSubjectPublicKeyInfo() throws {
        let key = try TrustedKey(name: "p", contents: FixtureFiles.bytes("trusted/ecdsa-p256.der"))
        let tlv = try #require(try ParsedImage(FixtureFiles.image("ecdsa-p256-full-padsig")).unprotectedTLVs.first { $0.type == .publicKey })
        #expect(Array(tlv.value) == key.subjectPublicKeyInfo)
        #expect(key.subjectPublicKeyInfo == (try FixtureFiles.bytes("trusted/ecdsa-p256.der")))
    }

    @Test func pemAndDerOfOneKeyAreTheSameKey() throws {
        let pem = try TrustedKey(name: "a", contents: FixtureFiles.bytes("trusted/ed25519.pem"))
        let text = String(decoding: try FixtureFiles.bytes("trusted/ed25519.pem"), as: UTF8.self)
        let base64 = text.split(separator: "\n").filter { !$0.hasPrefix("-----") }.joined()
        let der = try TrustedKey(name: "b", contents: Array(try #require(Data(base64Encoded: base64))))
        #expect(pem.keyHash == der.keyHash && pem.algorithm == .ed25519 && der.subjectPublicKeyInfo.count == 44)
        // CRLF line ends and surrounding whitespace are fine.
        let crlf = try TrustedKey(name: "c", contents: Array(("\n" + text.replacingOccurrences(of: "\n", with: "\r\n")).utf8))
        #expect(crlf.keyHash == pem.keyHash)
    }

    /// A P-256 key given with a compressed point hashes as imgtool's uncompressed SPKI would.
    @Test func p256KeysAreHashedInImgtoolsEncoding() throws {
        let key = try TrustedKey(name: "p", contents: FixtureFiles.bytes("trusted/ecdsa-p256.der"))
        let point = try P256.Signing.PublicKey(derRepresentation: key.subjectPublicKeyInfo)
        // SPKI with the compressed point (RFC 5480 §2.2 allows it): 0x30 0x39 ... BIT STRING of 34 bytes.
        let compressed: [UInt8] = [0x30, 0x39, 0x30, 0x13, 0x06, 0x07, 0x2A, 0x86, 0x48, 0xCE, 0x3D, 0x02, 0x01, 0x06, 0x08, 0x2A, 0x86, 0x48, 0xCE, 0x3D, 0x03, 0x01, 0x07, 0x03, 0x22, 0x00]
            + Array(point.compressedRepresentation)
        let reencoded = try TrustedKey(name: "c", contents: compressed)
        #expect(reencoded.keyHash == key.keyHash)
    }

    @Test func privateKeysAreRefused() throws {
        for file in ["keys/ed25519.pem", "keys/ecdsa-p256.pem", "keys/rsa-2048.pem"] {
            #expect(throws: KeyLoadingError.privateKey, "\(file)") { try TrustedKey(name: file, contents: FixtureFiles.bytes(file)) }
        }
        // The same private key as DER (PKCS#8: SEQUENCE { INTEGER 0, ... }).
        let text = String(decoding: try FixtureFiles.bytes("keys/ed25519.pem"), as: UTF8.self)
        let der = Data(base64Encoded: text.split(separator: "\n").filter { !$0.hasPrefix("-----") }.joined())
        #expect(throws: KeyLoadingError.privateKey) { try TrustedKey(name: "der", contents: Array(try #require(der))) }
    }

    @Test func whatIsNotAPublicKeyIsRefusedWithTheReason() throws {
        let cases: [([UInt8], String)] = [
            ([], "the file is empty"),
            (Array("-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n".utf8), "a PEM \"CERTIFICATE\", not a \"PUBLIC KEY\""),
            (Array("-----BEGIN PUBLIC KEY-----\n!!!!\n-----END PUBLIC KEY-----\n".utf8), "the PEM block is not valid base64"),
            (Array("-----BEGIN PUBLIC KEY-----\nAAAA\n".utf8), "the PEM block has no END line"),
            (try FixtureFiles.bytes("trusted/ed25519.pem") + FixtureFiles.bytes("untrusted-ed25519.pub.pem"), "2 PEM blocks where one key is expected"),
            (try FixtureFiles.image("unsigned"), "neither an Ed25519 nor a P-256 SubjectPublicKeyInfo"),
        ]
        for (contents, reason) in cases {
            #expect(throws: KeyLoadingError.notAPublicKey(reason)) { try TrustedKey(name: "x", contents: contents) }
        }
    }
}
