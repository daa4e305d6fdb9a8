import Foundation
import LinkProtocol
import TetherReplay

/// Records scenarios into transcript files with their expected outcomes, and checks each recording against the
/// invariants before it is written: nothing ACKed before it was stored, and the replay of the written transcript
/// stores the same events as the live run did.
public struct FixtureGenerator {
    public let directory: String

    public init(directory: String) { self.directory = directory }

    public struct Inconsistency: Error, CustomStringConvertible {
        public var description: String
    }

    @discardableResult
    public func record(_ scenario: FixtureScenario) throws -> String {
        let (transcript, pair) = scenario.record()
        guard pair.ackedBeforeStored.isEmpty else {
            throw Inconsistency(description: "\(scenario.name): events ACKed before they were stored: \(pair.ackedBeforeStored)")
        }
        if scenario.expectsDelivery {
            guard pair.isSettled else {
                throw Inconsistency(description: "\(scenario.name): \(pair.firmware.eventStore.count) events still on the device at the end; lengthen the scenario")
            }
        }
        let text = transcript.formatted()
        let name = scenario.name + ".transcript"
        let reread = try Transcript(parsing: text, file: name)
        let outcome = TranscriptReplayer(transcript: reread, name: name).replay()
        let replayed = Set(outcome.events.map { "\($0.boot)/\($0.sequence)" })
        let live = Set(pair.store.events.keys.map { "\($0.bootCounter)/\($0.sequence)" })
        guard replayed == live else {
            throw Inconsistency(description: "\(scenario.name): the replay stored \(replayed.count) events, the live run \(live.count)")
        }
        try text.write(toFile: path(name), atomically: true, encoding: .utf8)
        try outcome.json().write(toFile: path(scenario.name + ".expected.json"), atomically: true, encoding: .utf8)
        return "\(scenario.name): \(transcript.entries.count) lines, \(outcome.events.count) events, \(outcome.nacksSent.count) NACKs sent, \(outcome.anchors.count) anchors"
    }

    /// Replays an existing transcript and writes its expected outcome anew.
    public func rewriteExpected(_ scenario: FixtureScenario) throws -> String {
        let name = scenario.name + ".transcript"
        let transcript = try Transcript(parsing: try String(contentsOfFile: path(name), encoding: .utf8), file: name)
        let outcome = TranscriptReplayer(transcript: transcript, name: name).replay()
        try outcome.json().write(toFile: path(scenario.name + ".expected.json"), atomically: true, encoding: .utf8)
        return "\(scenario.name): expected outcome rewritten (\(outcome.events.count) events)"
    }

    private func path(_ file: String) -> String { (directory as NSString).appendingPathComponent(file) }
}
