import Foundation
import Testing
import LinkProtocol
import TetherPrimitives
@testable import TetherReplay
import TetherSettings
import TetherTestSupport

/// The fixtures against statements that do not come from the code they check (Firmware-fixtures/README.md):
/// `tools/linkspec.py` reads every transcript by docs/specs/link-protocol.md alone and holds it against the hand-written
/// `NAME.spec.json` and the pinned `SHA256SUMS`; here the gateway's replayed outcome is held against the same
/// spec files, and the gateway's replayed writes against the recording's `G>D` lines, byte for byte.
@Suite("Firmware-fixtures against their spec")
struct FixtureSpecTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    static let directory = root.appendingPathComponent("Firmware-fixtures").path

    static var transcripts: [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []).filter { $0.hasSuffix(".transcript") }.sorted()
    }

    @Test("the independent Python reading of the spec accepts every transcript, its spec file and its pinned hash")
    func independentReading() async throws {
        let result = try await ChildProcess.run("/usr/bin/env", ["python3", "\(Self.directory)/tools/linkspec.py", "check", Self.directory])
        let output = result.standardOutput + result.standardError
        #expect(result.status == 0, "linkspec.py check failed:\n\(output)")
        // It must have read the transcripts, not found an empty directory.
        #expect(output.contains("linkspec: \(Self.transcripts.count) transcripts, 0 failures"), "\(output)")
    }

    @Test("every transcript has a spec file, and there are transcripts")
    func everyTranscriptHasASpec() {
        #expect(Self.transcripts.count >= 15)
        for name in Self.transcripts {
            #expect(FileManager.default.fileExists(atPath: Self.specPath(name)), "\(name) has no spec file")
        }
    }

    @Test("the replayed outcome is what the spec file states", arguments: transcripts)
    func outcomeMatchesSpec(name: String) throws {
        let spec = try Self.spec(name)
        let transcript = try Self.transcript(name)
        let outcome = TranscriptReplayer(transcript: transcript, name: name).replay()

        #expect(outcome.connections == spec.connections)
        if let device = spec.device {
            let got = try #require(outcome.device, "no device negotiated")
            #expect(got.serial == device.serial)
            #expect(got.firmware == device.firmware)
            #expect(got.hardwareRevision == device.hardwareRevision)
            #expect(got.negotiatedVersion == device.negotiatedVersion)
            #expect(got.bootCounter == device.bootCounters.last)
        } else {
            #expect(outcome.device == nil)
        }

        // Every event the device's bytes carry, stored once with those fields (§7.5, §8.8).
        let stored = outcome.events.map { [Int64($0.boot), $0.sequence, $0.ticks, Int64($0.durationMilliseconds), Int64($0.intensity)] }
        #expect(stored == spec.events.list, "stored events differ from the spec's list")
        if spec.expectsDelivery {
            #expect(!stored.isEmpty)
            // The scenario's hits happened at known instants: each derived time must hold that instant within
            // its stated uncertainty (§9.2, §9.5), plus 2 ms for whole-millisecond ticks and rounded UTC.
            var byBoot: [Int: [Double]] = [:]
            for segment in spec.hitSchedule {
                byBoot[segment.boot, default: []] += (0..<segment.count).map { segment.fromSeconds + Double($0) * segment.everySeconds }
            }
            #expect(byBoot.values.reduce(0) { $0 + $1.count } == outcome.events.count)
            for boot in byBoot.keys.sorted() {
                let events = outcome.events.filter { $0.boot == boot }
                let times = byBoot[boot] ?? []
                try #require(events.count == times.count, "boot \(boot): \(events.count) events, \(times.count) scheduled hits")
                for (event, seconds) in zip(events, times) {
                    let utc = try #require(event.utc.flatMap(UTCFormat.parseISO8601), "event \(boot)/\(event.sequence) has no time (§9.7)")
                    let uncertainty = try #require(event.uncertaintyMilliseconds)
                    let truth = transcript.start.nanoseconds + Int64((seconds * 1e9).rounded())
                    let error = Double(abs(utc.nanoseconds - truth)) / 1e6
                    #expect(error <= uncertainty + 2, "event \(boot)/\(event.sequence): \(error) ms off, uncertainty \(uncertainty) ms")
                    if let bound = spec.eventUncertaintyBelowMs { #expect(uncertainty < bound) }
                }
            }
        }

        var anchors: [String: Int] = [:]
        for anchor in outcome.anchors { anchors[String(anchor.boot), default: 0] += 1 }
        #expect(anchors == spec.anchorsPerBoot)
        if let floor = spec.anchorUncertaintyAtLeastMs {
            #expect(!outcome.anchors.isEmpty)
            for anchor in outcome.anchors { #expect(anchor.uncertaintyMilliseconds >= floor, "RTT/2 must cover the asymmetric split (§9.2)") }
        }

        #expect(outcome.nacksSent.map { NackPair(seq: $0.sequence, reason: $0.reason) } == spec.gatewayNacks)
        #expect(outcome.nacksReceived.map { NackPair(seq: $0.sequence, reason: $0.reason) } == spec.deviceNacks)
        #expect(outcome.reboots.map { [$0.previousBoot ?? -1, $0.boot] } == spec.reboots)
        #expect(outcome.battery == spec.battery.last.map { "\($0.percent)% \($0.millivolts) mV\($0.charging ? " charging" : "")" })
        #expect(outcome.sleeps == spec.sleeps.map { "\($0.reason)" + ($0.wakeAfterSeconds.map { ", wake after \($0) s" } ?? "") })
        #expect(outcome.reportedConfigVersion == spec.reportedConfigVersion)
        if let reported = spec.configData.last {
            let settings = try #require(outcome.reportedSettings)
            #expect(settings.sensitivity.map(Int.init) == reported.settings["sensitivity"])
            #expect(settings.ledBrightness.map(Int.init) == reported.settings["ledBrightness"])
            #expect(settings.hapticFeedback.map { $0 ? 1 : 0 } == reported.settings["hapticFeedback"])
            #expect(settings.sleepTimeoutSeconds.map(Int.init) == reported.settings["sleepTimeoutSeconds"])
            #expect(settings.dailyLimit.map(Int.init) == reported.settings["dailyLimit"])
        }
        if spec.repeatsExpected == true { #expect(outcome.duplicateEvents + outcome.repeatedFrames > 0) }
        if spec.storageRefusalsExpected == true { #expect(outcome.storageRefusals > 0) }
        if let reason = spec.gatewayDisconnectsContain {
            #expect(!outcome.gatewayDisconnects.isEmpty)
            #expect(outcome.gatewayDisconnects.allSatisfy { $0.contains(reason) }, "\(outcome.gatewayDisconnects)")
        } else {
            #expect(outcome.gatewayDisconnects.isEmpty)
        }
    }

    /// The replay recomputes the gateway's answers; they must be the answers the recording's gateway gave (the
    /// `G>D` lines, which linkspec.py checks against the spec and the spec file's `gatewayFrames`). On each
    /// connection the recorded frames are the written ones in order; only writes still in flight when the link
    /// went down may be missing, except where the scenario loses writes on the way (`gatewayWritesLost`), where
    /// the recorded frames must be a subsequence of the written ones.
    @Test("the replayed gateway writes the recording's G>D bytes", arguments: transcripts)
    func gatewayWritesMatchRecording(name: String) throws {
        let spec = try Self.spec(name)
        let transcript = try Self.transcript(name)
        var replayer = TranscriptReplayer(transcript: transcript, name: name)
        replayer.desiredConfig = spec.gatewayDesiredConfig.map { desired in
            DeviceConfig(version: UInt32(desired.configVersion), settings: DeviceSettings(
                sensitivity: desired.settings["sensitivity"].map(UInt8.init), ledBrightness: desired.settings["ledBrightness"].map(UInt8.init),
                hapticFeedback: desired.settings["hapticFeedback"].map { $0 != 0 }, sleepTimeoutSeconds: desired.settings["sleepTimeoutSeconds"].map(UInt16.init),
                dailyLimit: desired.settings["dailyLimit"].map(UInt16.init)))
        }
        let (_, writes) = replayer.replayRecordingWrites()
        var recorded: [Int: [UInt8]] = [:]
        var ends: [Int: Timestamp] = [:]
        var connection = 0
        for entry in transcript.entries {
            switch entry.event {
            case .connected: connection += 1
            case .disconnected: ends[connection] = entry.at
            case .gatewayToDevice(let bytes): recorded[connection, default: []] += bytes
            default: break
            }
        }
        try #require(connection > 0)
        for number in 1...connection {
            let written = writes.filter { $0.connection == number }
            let writtenFrames = try Self.frames(written.flatMap(\.bytes), what: "connection \(number)'s writes")
            let recordedFrames = try Self.frames(recorded[number] ?? [], what: "connection \(number)'s G>D lines")
            try #require(!writtenFrames.isEmpty, "connection \(number): the replayed gateway wrote nothing")
            try #require(!recordedFrames.isEmpty, "connection \(number): the recording has no G>D lines")
            if spec.gatewayWritesLost {
                var rest = writtenFrames[...]
                for frame in recordedFrames {
                    guard let index = rest.firstIndex(of: frame) else {
                        Issue.record("connection \(number): recorded \(Hex.encode(frame, separator: " ")) was not written (in this order) by the replay")
                        break
                    }
                    rest = rest[(index + 1)...]
                }
            } else {
                let common = Array(writtenFrames.prefix(recordedFrames.count))
                #expect(common == recordedFrames, "connection \(number): the replayed writes differ from the recording's:\n\(Self.firstDifference(common, recordedFrames))")
                // What the recording lacks was written within 100 ms of the link's end: still in flight.
                let end = ends[number] ?? transcript.end
                let missingBytes = writtenFrames.dropFirst(recordedFrames.count).reduce(0) { $0 + $1.count }
                var tail = 0
                for write in written.reversed() where tail < missingBytes {
                    tail += write.bytes.count
                    guard write.at.nanoseconds >= end.nanoseconds - 100_000_000 else {
                        Issue.record("connection \(number): the replay wrote \(missingBytes) bytes the device never received, from \(write.at) on")
                        break
                    }
                }
            }
        }
    }

    // MARK: - Helpers

    /// Cuts a gateway byte stream into frames by the header's length byte alone (§4), without LinkProtocol's
    /// decoder: the gateway's writes carry no faults, so anything else is an error.
    static func frames(_ stream: [UInt8], what: String) throws -> [[UInt8]] {
        var frames: [[UInt8]] = []
        var index = 0
        while index < stream.count {
            guard stream[index] == 0x54, index + 7 <= stream.count, index + 9 + Int(stream[index + 6]) <= stream.count else {
                throw SpecFileError(description: "\(what): no whole frame at byte \(index)")
            }
            let size = 9 + Int(stream[index + 6])
            frames.append(Array(stream[index..<(index + size)]))
            index += size
        }
        return frames
    }

    static func firstDifference(_ a: [[UInt8]], _ b: [[UInt8]]) -> String {
        guard let index = a.indices.first(where: { $0 < b.count && a[$0] != b[$0] }) else { return "(lengths differ)" }
        return "frame \(index): replay \(Hex.encode(a[index], separator: " ")), recording \(Hex.encode(b[index], separator: " "))"
    }

    static func specPath(_ transcript: String) -> String {
        "\(directory)/\(transcript.replacingOccurrences(of: ".transcript", with: ".spec.json"))"
    }

    static func spec(_ name: String) throws -> FixtureSpec {
        try JSONDecoder().decode(FixtureSpec.self, from: Data(contentsOf: URL(fileURLWithPath: specPath(name))))
    }

    static func transcript(_ name: String) throws -> Transcript {
        try Transcript(parsing: String(contentsOfFile: "\(directory)/\(name)", encoding: .utf8), file: name)
    }
}

struct SpecFileError: Error, CustomStringConvertible {
    var description: String
}

/// `[seq, reason, …]` in a spec file.
struct NackPair: Decodable, Equatable, CustomStringConvertible {
    var seq: Int
    var reason: String

    init(seq: Int, reason: String) {
        self.seq = seq
        self.reason = reason
    }

    init(from decoder: any Decoder) throws {
        var container = try decoder.unkeyedContainer()
        seq = try container.decode(Int.self)
        reason = try container.decode(String.self)
    }

    var description: String { "\(seq) \(reason)" }
}

/// `Firmware-fixtures/NAME.spec.json` (its keys are described in Firmware-fixtures/README.md).
struct FixtureSpec: Decodable {
    struct HitSegment: Decodable {
        var boot: Int
        var count: Int
        var fromSeconds: Double
        var everySeconds: Double
    }
    struct Device: Decodable {
        var serial: String
        var firmware: String
        var hardwareRevision: Int
        var negotiatedVersion: Int
        var bootCounters: [Int]
    }
    struct Battery: Decodable {
        var millivolts: Int
        var percent: Int
        var charging: Bool
    }
    struct Sleep: Decodable {
        var reason: String
        var wakeAfterSeconds: Int?
    }
    struct Config: Decodable {
        var configVersion: Int
        var settings: [String: Int]
    }
    struct Events: Decodable {
        var list: [[Int64]]
    }

    var expectsDelivery: Bool
    var hitSchedule: [HitSegment]
    var battery: [Battery]
    var sleeps: [Sleep]
    var reboots: [[Int]]
    var gatewayWritesLost: Bool
    var reportedConfigVersion: Int?
    var connections: Int
    var device: Device?
    var anchorsPerBoot: [String: Int]
    var configData: [Config]
    var deviceNacks: [NackPair]
    var gatewayNacks: [NackPair]
    var events: Events
    var anchorUncertaintyAtLeastMs: Double?
    var eventUncertaintyBelowMs: Double?
    var repeatsExpected: Bool?
    var storageRefusalsExpected: Bool?
    var gatewayDisconnectsContain: String?
    /// The gateway's own input: the settings it wanted the device to take (§7.11), stated from the scenario.
    var gatewayDesiredConfig: Config?
}
