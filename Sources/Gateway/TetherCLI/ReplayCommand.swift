import ArgumentParser
import Foundation
import TetherReplay
import TetherStore

/// `tether replay TRANSCRIPT...`: run recorded firmware transcripts through the real gateway session.
public struct ReplayCommand: ParsableCommand {
    public static let configuration = CommandConfiguration(
        commandName: "replay",
        abstract: "Replay firmware transcripts through the gateway's link session and print the outcome.",
        discussion: """
            Each transcript's device-to-gateway values are fed to a real link session at their recorded times; \
            the gateway's answers are recomputed. The outcome lists stored events with derived UTC and \
            uncertainty, ACKs and NACKs sent, anchors, duplicates and rejected frames. The transcript format is \
            described in Firmware-fixtures/README.md.
            """
    )

    @Argument(help: "Transcript files (.transcript).")
    var transcripts: [String]

    @Flag(help: "Print JSON instead of tables.")
    var json = false

    @Option(help: ArgumentHelp("Also store what the gateway stored in this SQLite database (created if missing) and print the rows that resulted. Replaying a transcript again into the same database adds nothing.", valueName: "path"))
    var db: String?

    @Option(help: "Compare with an expected-outcome JSON file and exit 1 with a diff on a mismatch. With several transcripts, a directory holding NAME.expected.json for each NAME.transcript.")
    var expect: String?

    public init() {}

    public func validate() throws {
        guard !transcripts.isEmpty else { throw ValidationError("Name at least one transcript file.") }
    }

    public func run() throws {
        var mismatches = 0
        var outcomes: [ReplayOutcome] = []
        let database = try db.map(openDatabase)
        var storeFailures: [String] = []
        for path in transcripts {
            let name = (path as NSString).lastPathComponent
            let transcript = try load(path)
            let replayer = TranscriptReplayer(transcript: transcript, name: name)
            let outcome: ReplayOutcome
            if let database {
                let store = ReplayStore(database: database, start: transcript.start)  // system randomness: ids must differ across replays
                outcome = replayer.replay(sink: store.store)
                storeFailures += store.failures.map { "\(name): \($0)" }
            } else {
                outcome = replayer.replay()
            }
            outcomes.append(outcome)
            if let expectedPath = expectedFile(for: path) {
                guard let expected = try? String(contentsOfFile: expectedPath, encoding: .utf8) else {
                    throw failure("cannot read expected outcome \(expectedPath)", TetherExitCode.badInput)
                }
                if let diff = LineDiff.diff(expected: expected, actual: try outcome.json()) {
                    mismatches += 1
                    standardError("MISMATCH \(name) against \(expectedPath):\n\(diff)")
                }
            }
        }
        if json {
            print(outcomes.count == 1 ? try outcomes[0].json() : try ReplayOutcome.json(outcomes), terminator: "")
        } else {
            print(outcomes.map { $0.table() }.joined(separator: "\n"), terminator: "")
        }
        if let database, let path = db {
            let contents: StoreContents
            do {
                contents = try database.contents()
            } catch {
                throw failure("cannot read back \(path): \(error)", TetherExitCode.badInput)
            }
            if json {
                standardError("database \(path): " + contents.counts.map { "\($0.table) \($0.rows)" }.joined(separator: ", "))
            } else {
                print("\n== database \(path)")
                print(contents.rendered(), terminator: "")
            }
            for failure in storeFailures { standardError("store refused a batch: \(failure)") }
        }
        if expect != nil {
            standardError("\(transcripts.count - mismatches) matched, \(mismatches) mismatched")
        }
        if mismatches > 0 { throw TetherExitCode.checkFailed }
    }

    private func load(_ path: String) throws -> Transcript {
        let text: String
        do {
            text = try String(contentsOfFile: path, encoding: .utf8)
        } catch {
            throw failure("cannot read \(path): \((error as NSError).localizedDescription)", TetherExitCode.badInput)
        }
        do {
            return try Transcript(parsing: text, file: path)
        } catch {
            throw failure("\(error)", TetherExitCode.badInput)
        }
    }

    private func openDatabase(_ path: String) throws -> GatewayDatabase {
        do {
            return try GatewayDatabase(path: path)
        } catch {
            throw failure("cannot open database \(path): \(error)", TetherExitCode.badInput)
        }
    }

    private func expectedFile(for transcriptPath: String) -> String? {
        guard let expect else { return nil }
        var isDirectory: ObjCBool = false
        if FileManager.default.fileExists(atPath: expect, isDirectory: &isDirectory), isDirectory.boolValue {
            let base = ((transcriptPath as NSString).lastPathComponent as NSString).deletingPathExtension
            return (expect as NSString).appendingPathComponent(base + ".expected.json")
        }
        return expect
    }
}

/// Prints `tether replay: message` on standard error and gives the exit code to throw.
func failure(_ message: String, _ code: ExitCode) -> ExitCode {
    standardError("tether replay: \(message)")
    return code
}

func standardError(_ line: String) {
    FileHandle.standardError.write(Data((line + "\n").utf8))
}
