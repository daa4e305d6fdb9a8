import Foundation
import Testing
@testable import TetherReplay

/// The committed transcripts are fixed records of what firmware sent. Each must still replay to its expected
/// outcome: a codec or session change that treats an old firmware's bytes differently fails here.
@Suite("Firmware-fixtures replay")
struct FixtureReplayTests {
    static let directory = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent("Firmware-fixtures").path

    static var transcripts: [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []).filter { $0.hasSuffix(".transcript") }.sorted()
    }

    @Test("there are fixtures for at least three firmware versions and every required situation")
    func coverage() throws {
        let names = Self.transcripts
        try #require(names.count >= 10)
        var firmwares = Set<String>()
        for name in names {
            let transcript = try Transcript(parsing: String(contentsOfFile: "\(Self.directory)/\(name)", encoding: .utf8), file: name)
            firmwares.insert(transcript.firmware)
        }
        #expect(firmwares.isSuperset(of: ["1.0.3", "1.4.2", "2.0.1"]))
        for situation in ["normal", "lost-ack", "duplicates", "reboot", "bad-crc", "truncated", "unknown-type", "mtu23", "mtu247", "asymmetric", "drift", "storage-full", "incompatible"] {
            #expect(names.contains { $0.contains(situation) }, "no fixture for \(situation)")
        }
    }

    /// A regression snapshot: `NAME.expected.json` is the replayer's own output, so it catches any change in what
    /// the gateway concludes (anchor values, rejection reasons) but proves nothing about correctness by itself;
    /// `FixtureSpecTests` holds the outcome against the hand-written spec files and the spec's independent reading.
    @Test("each transcript replays to its expected outcome", arguments: transcripts)
    func replay(name: String) throws {
        let text = try String(contentsOfFile: "\(Self.directory)/\(name)", encoding: .utf8)
        let transcript = try Transcript(parsing: text, file: name)
        let outcome = TranscriptReplayer(transcript: transcript, name: name).replay()
        let expectedPath = "\(Self.directory)/\(name.replacingOccurrences(of: ".transcript", with: ".expected.json"))"
        let expected = try String(contentsOfFile: expectedPath, encoding: .utf8)
        let diff = LineDiff.diff(expected: expected, actual: try outcome.json())
        #expect(diff == nil, "\(name) no longer replays to its expected outcome:\n\(diff ?? "")")
    }

    @Test("outcomes show what each situation is about")
    func situations() throws {
        func outcome(_ name: String) throws -> ReplayOutcome {
            try ReplayOutcome.decode(json: String(contentsOfFile: "\(Self.directory)/\(name).expected.json", encoding: .utf8))
        }
        let v2 = try outcome("fw2.0-normal-v2")
        #expect(v2.device?.negotiatedVersion == 2)
        #expect(v2.nacksSent.contains { $0.reason == "unknownType" })
        #expect(try outcome("fw1.0-normal-mtu23").device?.negotiatedVersion == 1)
        let lostAck = try outcome("fw1.4-lost-ack")
        #expect(lostAck.duplicateEvents > 0 || lostAck.repeatedFrames > 0)
        #expect(Set(lostAck.events.map { "\($0.boot)/\($0.sequence)" }).count == lostAck.events.count)
        #expect(try outcome("fw1.4-duplicates").repeatedFrames > 0)
        let reboot = try outcome("fw1.4-reboot-midstream")
        #expect(reboot.reboots.count == 1)
        #expect(Set(reboot.events.map(\.boot)) == [1, 2])
        #expect(reboot.events.count == 40)
        #expect(reboot.events.allSatisfy { $0.utc != nil })
        #expect(try outcome("fw1.0-bad-crc").nacksSent.contains { $0.reason == "badCRC" })
        #expect(try outcome("fw1.4-truncated").nacksSent.contains { $0.reason == "truncated" || $0.reason == "badCRC" })
        let storage = try outcome("fw1.0-storage-full")
        #expect(storage.nacksSent.contains { $0.reason == "storageFull" })
        #expect(storage.events.count == 30)
        let incompatible = try outcome("fw3.0-incompatible")
        #expect(incompatible.events.isEmpty)
        #expect(!incompatible.gatewayDisconnects.isEmpty)
        #expect(incompatible.gatewayDisconnects.allSatisfy { $0.contains("no common protocol version") })
        let drift = try outcome("fw1.4-clock-drift-4h")
        #expect(drift.anchors.count >= 20)
        #expect(drift.events.count == 80)
        #expect(drift.events.allSatisfy { ($0.uncertaintyMilliseconds ?? .infinity) < 100 })
        let asymmetric = try outcome("fw1.4-timesync-asymmetric")
        #expect(!asymmetric.anchors.isEmpty)
        #expect(asymmetric.anchors.allSatisfy { $0.uncertaintyMilliseconds >= 40 }, "RTT/2 must cover an 80/10 ms split")
    }

    @Test("replaying twice gives byte-identical outcomes")
    func deterministic() throws {
        try #require(Self.transcripts.count >= 4)
        for name in Self.transcripts.prefix(4) {
            let transcript = try Transcript(parsing: String(contentsOfFile: "\(Self.directory)/\(name)", encoding: .utf8), file: name)
            #expect(try TranscriptReplayer(transcript: transcript, name: name).replay().json() == TranscriptReplayer(transcript: transcript, name: name).replay().json())
        }
    }
}
