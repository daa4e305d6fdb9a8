import Foundation
import MCUbootImage

/// The images, keys and trusted-key directory under Fixtures/, made by make-images.sh with imgtool 2.5.0.
enum FixtureFiles {
    static let directory = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Fixtures")
    static let repositoryRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()

    static func bytes(_ name: String) throws -> [UInt8] {
        Array(try Data(contentsOf: directory.appendingPathComponent(name)))
    }

    static func image(_ name: String) throws -> [UInt8] { try bytes(name + ".img") }

    /// Fixtures/trusted: ed25519.pem (PEM, `imgtool getpub -e pem`) and ecdsa-p256.der (DER, `getpub -e raw`).
    static func trustedKeys() throws -> TrustedKeys {
        TrustedKeys([
            try TrustedKey(name: "ed25519.pem", contents: bytes("trusted/ed25519.pem")),
            try TrustedKey(name: "ecdsa-p256.der", contents: bytes("trusted/ecdsa-p256.der")),
        ])
    }

    static func inspect(_ image: [UInt8]) throws -> ImageVerdict {
        ImageVerifier.inspect(image, trustedKeys: try trustedKeys())
    }
}

/// Parses lower-case hex (test vectors copied from imgtool's output).
func bytes(hex text: String) -> [UInt8] {
    var result: [UInt8] = []
    var index = text.startIndex
    while index < text.endIndex {
        let next = text.index(index, offsetBy: 2)
        result.append(UInt8(text[index..<next], radix: 16) ?? 0)
        index = next
    }
    return result
}
