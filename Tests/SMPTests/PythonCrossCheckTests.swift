import CBOR
import Foundation
import SMP
import Testing
import TetherTestSupport

/// Tether's SMP encodings against the independent `smp` package (PyPI 4.2.0, pinned by scripts/ci/smp-crosscheck.sh,
/// which runs Tests/SMPTests/smp_crosscheck.py): for every command Tether sends, smp's encoding of the same request
/// must equal Tether's byte for byte, and smp must read Tether's bytes back to the same fields; smp's encodings of
/// the answers must decode in Tether to the values smp was given.
///
/// Needs python3 with venv and, on the first run, PyPI. Skipped without python3 or with TETHER_SKIP_SMP_CROSSCHECK=1,
/// unless TETHER_REQUIRE_SMP_CROSSCHECK=1 (scripts/test.sh sets it): then a missing python3 or venv fails it.
@Suite struct PythonCrossCheckTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()
    static let python = ["/usr/bin/python3", "/usr/local/bin/python3"].first { FileManager.default.isExecutableFile(atPath: $0) }
    static let required = ProcessInfo.processInfo.environment["TETHER_REQUIRE_SMP_CROSSCHECK"] == "1"
    static let enabled = required || (python != nil && ProcessInfo.processInfo.environment["TETHER_SKIP_SMP_CROSSCHECK"] == nil)

    static let hash = (0..<32).map { UInt8($0) }
    static let sha = (100..<132).map { UInt8($0) }
    static let data = (0..<50).map { UInt8(truncatingIfNeeded: $0 * 7) }

    /// The same requests as smp_crosscheck.py's REQUESTS, built by Tether.
    static let requests: [String: SMPRequest] = [
        "echo": .echo("Hallo"),
        "reset": .reset(),
        "reset-force": .reset(force: true),
        "parameters": .parameters,
        "bootloader": .bootloaderInfo(),
        "bootloader-mode": .bootloaderInfo(query: "mode"),
        "state-read": .imageState,
        "state-test": .imageStateWrite(hash: hash, confirm: false),
        "state-confirm": .imageStateWrite(hash: nil, confirm: true),
        "upload-first": .imageUpload(SMPUploadChunk(offset: 0, data: data[...], first: .init(length: 100_000, sha: sha, upgrade: true))),
        "upload-first-image1": .imageUpload(SMPUploadChunk(offset: 0, data: data[...], first: .init(image: 1, length: 300, sha: sha))),
        "upload-next": .imageUpload(SMPUploadChunk(offset: 65536, data: data[...])),
        "erase": .imageErase(),
        "erase-slot": .imageErase(slot: 1),
    ]

    struct Answer: Decodable {
        struct Decoded: Decodable {
            var error: String?
            var header: [String: Int]?
            var fields: [String: JSONScalar]?
        }
        var requests: [String: String]
        var decoded: [String: Decoded]
        var responses: [String: String]
    }

    enum JSONScalar: Decodable, Equatable {
        case int(Int), bool(Bool), string(String), other
        init(from decoder: Decoder) throws {
            let container = try decoder.singleValueContainer()
            if let value = try? container.decode(Bool.self) { self = .bool(value) }
            else if let value = try? container.decode(Int.self) { self = .int(value) }
            else if let value = try? container.decode(String.self) { self = .string(value) }
            else { self = .other }
        }
    }

    @Test(.enabled(if: enabled), .timeLimit(.minutes(5)))
    func tetherAndTheSmpPackageAgree() async throws {
        try #require(Self.python != nil, "the smp cross-check is required (TETHER_REQUIRE_SMP_CROSSCHECK=1) but there is no python3")
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("smp-crosscheck-\(getpid())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let input = directory.appendingPathComponent("tether.json")
        let tether = Self.requests.mapValues { hexString($0.encoded(version: .v2, sequence: 42)) }
        try JSONEncoder().encode(tether).write(to: input)
        let result = try await ChildProcess.run(
            "/bin/bash", [Self.root.appendingPathComponent("scripts/ci/smp-crosscheck.sh").path, input.path], timeout: .seconds(280))
        try #require(result.status == 0, "smp-crosscheck.sh failed: \(result.standardError)")
        let answer = try JSONDecoder().decode(Answer.self, from: Data(result.standardOutput.utf8))

        // 1. smp encodes every request exactly as Tether does.
        #expect(Set(answer.requests.keys) == Set(Self.requests.keys))
        for (name, hex) in tether.sorted(by: { $0.key < $1.key }) {
            #expect(answer.requests[name] == hex, "\(name): smp \(answer.requests[name] ?? "-") vs Tether \(hex)")
        }

        // 2. smp reads Tether's bytes back.
        for (name, request) in Self.requests {
            let decoded = try #require(answer.decoded[name], "\(name)")
            #expect(decoded.error == nil, "\(name): \(decoded.error ?? "")")
            #expect(decoded.header?["group"] == Int(request.group) && decoded.header?["command"] == Int(request.command)
                && decoded.header?["op"] == Int(request.operation.rawValue) && decoded.header?["sequence"] == 42 && decoded.header?["version"] == 1)
        }
        #expect(answer.decoded["upload-first"]?.fields == [
            "off": .int(0), "len": .int(100_000), "sha": .string(hexString(Self.sha)), "data": .string(hexString(Self.data)), "upgrade": .bool(true),
        ])
        #expect(answer.decoded["upload-next"]?.fields == ["off": .int(65536), "data": .string(hexString(Self.data))])
        #expect(answer.decoded["state-test"]?.fields == ["hash": .string(hexString(Self.hash)), "confirm": .bool(false)])
        #expect(answer.decoded["reset-force"]?.fields == ["force": .int(1)])
        #expect(answer.decoded["erase-slot"]?.fields == ["slot": .int(1)])
        #expect(answer.decoded["echo"]?.fields == ["d": .string("Hallo")])

        // 3. Tether decodes smp's answers to the values smp was given.
        func response(_ name: String) throws -> SMPResponse {
            let response = try SMPResponse(message: hexBytes(try #require(answer.responses[name], "\(name)")))
            #expect(response.header.sequence == 42, "\(name)")
            return response
        }
        #expect(try SMPEchoResponse(body: response("echo").body).text == "Hallo")
        #expect(try SMPParameters(body: response("parameters").body) == SMPParameters(bufferSize: 2475, bufferCount: 4))
        #expect(try SMPBootloaderInfo(body: response("bootloader").body).bootloader == "MCUboot")
        var primary = SMPImageSlotState(slot: 0, version: "1.2.3", hash: Self.hash)
        primary.bootable = true
        primary.confirmed = true
        primary.active = true
        var secondary = SMPImageSlotState(slot: 1, version: "1.3.0+7", hash: Self.sha)
        secondary.bootable = true
        secondary.pending = true
        #expect(try SMPImageState(body: response("state").body).images == [primary, secondary])
        #expect(try SMPUploadResponse(body: response("upload").body) == SMPUploadResponse(offset: 1024))
        #expect(try SMPUploadResponse(body: response("upload-last").body) == SMPUploadResponse(offset: 100_000, match: true))
        let v2 = try response("error-v2")
        #expect(v2.header.version == .v2)
        #expect(try v2.deviceError() == SMPDeviceError(group: 1, rc: 9))
        let v1 = try response("error-v1")
        #expect(v1.header.version == .v1)
        #expect(try v1.deviceError() == SMPDeviceError(rc: 8, reason: "no"))
        #expect(try v1.deviceError()?.name == "MGMT_ERR_ENOTSUP")
    }
}
