import ArgumentParser
import Foundation
import Testing
@testable import TetherCLI
@testable import TetherReplay
import TetherStore

@Suite("tether replay command")
struct ReplayCommandTests {
    static let fixtures = FixtureReplayTests.directory

    @Test("parses transcripts, --json and --expect")
    func parsing() throws {
        let command = try ReplayCommand.parse(["a.transcript", "b.transcript", "--json", "--expect", "dir"])
        #expect(command.transcripts == ["a.transcript", "b.transcript"])
        #expect(command.json)
        #expect(command.expect == "dir")
    }

    @Test("refuses to run without a transcript")
    func noTranscript() {
        #expect(throws: (any Error).self) { try ReplayCommand.parse([]) }
    }

    @Test("the help text names the flags and the exit codes")
    func help() {
        let help = TetherRootCommand.helpMessage(for: ReplayCommand.self)
        #expect(help.contains("--json"))
        #expect(help.contains("--expect"))
        #expect(TetherRootCommand.helpMessage().contains("Exit status:\n  0  success\n  1  the operation failed (refused by tetherd, pairing failed, check failed)"))
    }

    @Test("a matching --expect directory succeeds for every fixture")
    func expectMatches() throws {
        let transcripts = FixtureReplayTests.transcripts.map { "\(Self.fixtures)/\($0)" }
        var command = try ReplayCommand.parse(transcripts + ["--json", "--expect", Self.fixtures])
        try command.run()
    }

    @Test("a mismatch exits 1")
    func expectMismatch() throws {
        let name = "fw1.0-normal-mtu23"
        let temporary = FileManager.default.temporaryDirectory.appendingPathComponent("tether-replay-\(UUID().uuidString).json").path
        defer { try? FileManager.default.removeItem(atPath: temporary) }
        var expected = try String(contentsOfFile: "\(Self.fixtures)/\(name).expected.json", encoding: .utf8)
        expected = expected.replacingOccurrences(of: "\"acksSent\" : ", with: "\"acksSent\" : 9")
        try expected.write(toFile: temporary, atomically: true, encoding: .utf8)
        var command = try ReplayCommand.parse(["\(Self.fixtures)/\(name).transcript", "--expect", temporary])
        #expect(throws: ExitCode(1)) { try command.run() }
    }

    @Test("--db stores the replay in a real database file, and replaying again adds nothing")
    func replayIntoDatabase() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("tether-replay-db-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("gateway.sqlite").path
        let transcripts = ["fw1.4-reboot-midstream", "fw1.4-lost-ack", "fw2.0-normal-v2"].map { "\(Self.fixtures)/\($0).transcript" }
        func counts() throws -> [String: Int] {
            let contents = try GatewayDatabase(path: path).contents()
            return Dictionary(uniqueKeysWithValues: contents.counts.map { ($0.table, $0.rows) })
        }
        var first = try ReplayCommand.parse(transcripts + ["--json", "--db", path])
        try first.run()
        let once = try counts()
        var expectedEvents = 0
        for transcript in transcripts {
            let parsed = try Transcript(parsing: String(contentsOfFile: transcript, encoding: .utf8), file: transcript)
            expectedEvents += TranscriptReplayer(transcript: parsed, name: transcript).replay().events.count
        }
        #expect(once.values.reduce(0, +) > 0)
        let events = try GatewayDatabase(path: path).contents().events
        #expect(events.count == expectedEvents)
        var second = try ReplayCommand.parse(transcripts + ["--json", "--db", path])
        try second.run()
        #expect(try counts() == once, "a second replay must add nothing")
    }

    @Test("a malformed transcript exits 2 and a missing one too")
    func badInput() throws {
        let temporary = FileManager.default.temporaryDirectory.appendingPathComponent("bad-\(UUID().uuidString).transcript").path
        defer { try? FileManager.default.removeItem(atPath: temporary) }
        try "transcript 1\nfirmware 1\nstart 2026-11-01T08:00:00Z\n0.1 D>G zz\n".write(toFile: temporary, atomically: true, encoding: .utf8)
        var command = try ReplayCommand.parse([temporary])
        #expect(throws: ExitCode(2)) { try command.run() }
        var missing = try ReplayCommand.parse(["/nonexistent/x.transcript"])
        #expect(throws: ExitCode(2)) { try missing.run() }
    }
}
