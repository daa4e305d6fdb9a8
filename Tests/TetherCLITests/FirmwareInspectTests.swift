import Foundation
import Testing
@testable import TetherCLI

/// `tether firmware inspect` through the built `tether`, on the imgtool images of Tests/MCUbootImageTests/Fixtures:
/// exit 0 only for an image that verifies against a trusted key, 1 for a refused image, 2 for usage errors.
@Suite("tether firmware inspect")
struct FirmwareInspectTests {
    static let fixtures = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("MCUbootImageTests/Fixtures")
    static func fixture(_ name: String) -> String { fixtures.appendingPathComponent(name).path }
    static let keys = fixture("trusted")

    @Test func aVerifiedImageExitsZeroAndShowsItsParts() async throws {
        let result = try await TetherProcess.run(["firmware", "inspect", Self.fixture("ed25519-full-seccnt.img"), "--keys", Self.keys])
        #expect(result.status == 0, "\(result.standardError)")
        let text = result.standardOutput
        // Values from `imgtool verify` on this fixture (see MCUbootImageTests' ImgtoolFixtureTests).
        for expected in [
            "version           2.0.1+99", "security counter  7", "SHA-256           5e8b5a3b43d6c8c35e70086ca95619da8d6f59379ef0425d5423802e4317f3d3 (matches)",
            "signature         ED25519", "key               trusted: ed25519.pem (Ed25519", "verdict           VERIFIED",
            "protected TLVs    SEC_CNT", "TLVs              SHA256 PUBKEY ED25519",
        ] {
            #expect(text.contains(expected), "missing \(expected) in:\n\(text)")
        }
    }

    @Test func jsonOfAVerifiedImage() async throws {
        let result = try await TetherProcess.run(["firmware", "inspect", "--json", Self.fixture("ecdsa-p256-hash.img"), "--keys", Self.keys])
        #expect(result.status == 0, "\(result.standardError)")
        let object = try #require(try JSONSerialization.jsonObject(with: Data(result.standardOutput.utf8)) as? [String: Any])
        #expect(object["verified"] as? Bool == true)
        #expect(object["version"] as? String == "0.9.12+3")
        #expect(object["hash"] as? String == "88eccfea243544e110af5f8aa81558d4a76b96ce13a2715f9450a913b0bc6eae")
        #expect(object["signature"] as? String == "ECDSASIG")
        #expect(object["security_counter"] as? Int == 0x0009_000C)
        #expect(object["refusal"] is NSNull)
        let key = try #require(object["key"] as? [String: Any])
        #expect(key["status"] as? String == "trusted" && key["name"] as? String == "ecdsa-p256.der" && key["algorithm"] as? String == "ECDSA-P256")
        let header = try #require(object["header"] as? [String: Any])
        #expect(header["header_size"] as? Int == 0x200 && header["image_size"] as? Int == 1000 && header["protected_tlv_size"] as? Int == 12)
    }

    @Test(arguments: [
        ("unsigned.img", "unsigned"), ("untrusted-ed25519.img", "untrusted-key"), ("rsa-2048.img", "unsupported"),
        ("body.bin", "not-an-image"),
    ])
    func refusedImagesExitOneWithTheReason(file: String, code: String) async throws {
        let result = try await TetherProcess.run(["firmware", "inspect", "--json", Self.fixture(file), "--keys", Self.keys])
        #expect(result.status == 1, "\(file): \(result.standardOutput) \(result.standardError)")
        let object = try #require(try JSONSerialization.jsonObject(with: Data(result.standardOutput.utf8)) as? [String: Any])
        #expect(object["verified"] as? Bool == false)
        let refusal = try #require(object["refusal"] as? [String: Any])
        #expect(refusal["code"] as? String == code, "\(file)")
        let plain = try await TetherProcess.run(["firmware", "inspect", Self.fixture(file), "--keys", Self.keys])
        #expect(plain.status == 1)
        #expect(plain.standardOutput.contains("verdict") && plain.standardOutput.contains("REFUSED: "), "\(plain.standardOutput)")
    }

    @Test func aTamperedImageIsRefusedAsTampered() async throws {
        var image = Array(try Data(contentsOf: URL(fileURLWithPath: Self.fixture("ed25519-hash.img"))))
        image[0x200 + 10] ^= 0x40
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("tampered-\(getpid()).img")
        try Data(image).write(to: file)
        defer { try? FileManager.default.removeItem(at: file) }
        let result = try await TetherProcess.run(["firmware", "inspect", file.path, "--keys", Self.keys])
        #expect(result.status == 1)
        #expect(result.standardOutput.contains("REFUSED: tampered: the SHA-256 of header, body and protected TLVs is"), "\(result.standardOutput)")
    }

    @Test func usageErrorsExitTwo() async throws {
        // No such image.
        let missing = try await TetherProcess.run(["firmware", "inspect", "/nonexistent/image.img", "--keys", Self.keys])
        #expect(missing.status == 2 && missing.standardError.contains("cannot read /nonexistent/image.img"), "\(missing.standardError)")
        // No such key directory, and the default one named when --keys is left out.
        let noKeys = try await TetherProcess.run(["firmware", "inspect", Self.fixture("unsigned.img"), "--keys", "/nonexistent/keys"])
        #expect(noKeys.status == 2 && noKeys.standardError.contains("/nonexistent/keys does not exist"), "\(noKeys.standardError)")
        if !FileManager.default.fileExists(atPath: "/etc/tether/firmware-keys") {
            let noDefault = try await TetherProcess.run(["firmware", "inspect", Self.fixture("unsigned.img")])
            #expect(noDefault.status == 2 && noDefault.standardError.contains("/etc/tether/firmware-keys"), "\(noDefault.standardError)")
            #expect(noDefault.standardError.contains("--keys DIR"))
        }
        // A private key in the key directory is refused, naming the file.
        let privateKeys = try await TetherProcess.run(["firmware", "inspect", Self.fixture("unsigned.img"), "--keys", Self.fixture("keys")])
        #expect(privateKeys.status == 2, "\(privateKeys.standardError)")
        #expect(privateKeys.standardError.contains("keys/ecdsa-p256.pem is a private key, not a public one"), "\(privateKeys.standardError)")
        // No image named.
        let noImage = try await TetherProcess.run(["firmware", "inspect"])
        #expect(noImage.status == 2)
    }
}
