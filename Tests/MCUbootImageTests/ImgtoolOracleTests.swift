import Foundation
import Testing
import TetherTestSupport
@testable import MCUbootImage

/// imgtool itself (PyPI 2.5.0, pinned in scripts/setup/imgtool-venv.sh) as the independent oracle: `imgtool verify`
/// must agree with Tether on the committed fixtures, on tampered copies, and on images imgtool signs now, so that a
/// change in imgtool's format is noticed here rather than in the field.
///
/// Needs python3 with venv and, on the first run, PyPI. Skipped without python3 or with TETHER_SKIP_IMGTOOL=1,
/// unless TETHER_REQUIRE_IMGTOOL=1 (scripts/test.sh sets it): then it always runs, and a venv that cannot be made
/// fails it.
@Suite(.serialized) struct ImgtoolOracleTests {
    static let python = ["/usr/bin/python3", "/usr/local/bin/python3"].first { FileManager.default.isExecutableFile(atPath: $0) }
    static let required = ProcessInfo.processInfo.environment["TETHER_REQUIRE_IMGTOOL"] == "1"
    static let enabled = required || (python != nil && ProcessInfo.processInfo.environment["TETHER_SKIP_IMGTOOL"] == nil)

    /// The venv's imgtool, made by scripts/setup/imgtool-venv.sh.
    static func imgtool() async throws -> String {
        let script = FixtureFiles.repositoryRoot.appendingPathComponent("scripts/setup/imgtool-venv.sh").path
        let result = try await ChildProcess.run("/bin/bash", [script], timeout: .seconds(300))
        try #require(result.status == 0, "imgtool-venv.sh failed: \(result.standardError)")
        return try #require(result.lines.last)
    }

    struct Verification {
        var validated: Bool
        var version: String?
        var digest: [UInt8]?
        var output: String
    }

    /// `imgtool verify [-k KEY] IMAGE`, its verdict read from what it prints (imgtool main.py `verify`).
    static func verify(_ imgtool: String, image: String, key: String?) async throws -> Verification {
        let arguments = ["verify"] + (key.map { ["-k", $0] } ?? []) + [image]
        let result = try await ChildProcess.run(imgtool, arguments, timeout: .seconds(60))
        let lines = result.lines
        func value(_ prefix: String) -> String? { lines.first { $0.hasPrefix(prefix) }.map { String($0.dropFirst(prefix.count)) } }
        let validated = result.status == 0 && lines.contains("Image was correctly validated")
        return Verification(
            validated: validated, version: value("Image version: "), digest: value("Image digest: ").map { bytes(hex: $0) },
            output: result.standardOutput + result.standardError)
    }

    static let committed: [(image: String, key: String?)] = [
        ("ed25519-hash", "trusted/ed25519.pem"), ("ed25519-full-seccnt", "trusted/ed25519.pem"),
        ("ecdsa-p256-hash", "keys/ecdsa-p256.pem"), ("ecdsa-p256-full-padsig", "keys/ecdsa-p256.pem"),
        ("unsigned", nil),
    ]

    @Test(.enabled(if: enabled), .timeLimit(.minutes(10)))
    func imgtoolAgreesOnTheCommittedFixtures() async throws {
        let imgtool = try await Self.imgtool()
        for (name, key) in Self.committed {
            let path = FixtureFiles.directory.appendingPathComponent(name + ".img").path
            let oracle = try await Self.verify(imgtool, image: path, key: key.map { FixtureFiles.directory.appendingPathComponent($0).path })
            let ours = try FixtureFiles.inspect(FixtureFiles.image(name))
            #expect(oracle.validated, "\(name): \(oracle.output)")
            #expect(oracle.digest == ours.statedHash && oracle.digest == ours.computedHash, "\(name)")
            #expect(oracle.version == ours.header?.version.description, "\(name)")
            #expect(ours.isVerified == (key != nil), "\(name): \(String(describing: ours.refusal))")
        }
    }

    /// Copies changed in the body, the protected TLVs and the signature: imgtool refuses each, and so does Tether.
    @Test(.enabled(if: enabled), .timeLimit(.minutes(10)))
    func imgtoolRefusesTheTamperedCopiesToo() async throws {
        let imgtool = try await Self.imgtool()
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let image = try FixtureFiles.image("ed25519-full-seccnt")
        let key = FixtureFiles.directory.appendingPathComponent("trusted/ed25519.pem").path
        for (offset, what) in [(0x20 + 10, "body"), (0x20 + 1000 + 9, "protected TLV"), (1199, "signature")] {
            let copy = directory.appendingPathComponent("flipped-\(offset).img")
            try Data(ImageEditing.flip(image, at: offset)).write(to: copy)
            let oracle = try await Self.verify(imgtool, image: copy.path, key: key)
            #expect(!oracle.validated, "imgtool accepted a changed \(what): \(oracle.output)")
            #expect(!(try FixtureFiles.inspect(ImageEditing.flip(image, at: offset))).isVerified, "\(what)")
        }
    }

    /// Keys and images made now by the installed imgtool, with the options make-images.sh uses and a few more.
    @Test(.enabled(if: enabled), .timeLimit(.minutes(10)))
    func freshlySignedImagesVerify() async throws {
        let imgtool = try await Self.imgtool()
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        func run(_ arguments: [String]) async throws {
            let result = try await ChildProcess.run(imgtool, arguments, timeout: .seconds(60))
            try #require(result.status == 0, "imgtool \(arguments.joined(separator: " ")): \(result.standardError)")
        }
        let body = directory.appendingPathComponent("body.bin")
        try Data((0..<3000).map { UInt8(truncatingIfNeeded: $0 * 13 + 1) }).write(to: body)
        var trusted: [TrustedKey] = []
        for type in ["ed25519", "ecdsa-p256"] {
            let key = directory.appendingPathComponent("\(type).pem").path
            let pub = directory.appendingPathComponent("\(type).pub.pem").path
            try await run(["keygen", "-t", type, "-k", key])
            try await run(["getpub", "-k", key, "-e", "pem", "-o", pub])
            trusted.append(try TrustedKey(name: "\(type).pub.pem", contents: Array(Data(contentsOf: URL(fileURLWithPath: pub)))))
        }
        let keys = TrustedKeys(trusted)
        let variants: [(key: String, options: [String], version: String)] = [
            ("ed25519", ["-H", "0x200", "--pad-header", "-v", "1.2.3+4"], "1.2.3+4"),
            ("ed25519", ["-H", "0x20", "--pad-header", "--public-key-format", "full", "-s", "42", "-v", "9.8.7+6"], "9.8.7+6"),
            ("ecdsa-p256", ["-H", "0x20", "--pad-header", "-s", "auto", "-v", "0.1.2"], "0.1.2+0"),
            ("ecdsa-p256", ["-H", "0x200", "--pad-header", "--public-key-format", "full", "--pad-sig", "-v", "255.255.65535+4294967295"],
             "255.255.65535+4294967295"),
            ("ecdsa-p256", ["-H", "0x20", "--pad-header", "--pad", "--confirm", "-v", "1.0.0"], "1.0.0+0"),
        ]
        for (index, variant) in variants.enumerated() {
            let image = directory.appendingPathComponent("fresh-\(index).img")
            let key = directory.appendingPathComponent("\(variant.key).pem").path
            try await run(["sign", "-k", key, "--slot-size", "0x10000"] + variant.options + [body.path, image.path])
            let oracle = try await Self.verify(imgtool, image: image.path, key: key)
            let verdict = ImageVerifier.inspect(Array(try Data(contentsOf: image)), trustedKeys: keys)
            let label = "\(variant.key) \(variant.options.joined(separator: " "))"
            #expect(oracle.validated, "\(label): \(oracle.output)")
            #expect(verdict.isVerified, "\(label): \(String(describing: verdict.refusal))")
            #expect(verdict.statedHash == oracle.digest, "\(label)")
            #expect(verdict.header?.version.description == variant.version, "\(label)")
            #expect(oracle.version == variant.version, "\(label)")
        }
    }

    func temporaryDirectory() throws -> URL {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("mcuboot-oracle-\(getpid())-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        return url
    }
}
