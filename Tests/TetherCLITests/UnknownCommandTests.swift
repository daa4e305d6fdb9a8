import ArgumentParser
import Foundation
import Testing
@testable import TetherCLI

/// Usage errors that argument-parser's help handling hid, and inputs that used to trap, through the parser and
/// through the built `tether` (issue 12).
@Suite("tether usage errors")
struct UnknownCommandTests {
    @Test("an unknown command is a usage error even with --help, at the root and one level down", arguments: [
        (["UNKNOWN", "--help"], "'UNKNOWN' is not a command of 'tether'"),
        (["UNKNOWN"], "'UNKNOWN' is not a command of 'tether'"),
        (["settings", "UNKNOWN", "--help"], "'UNKNOWN' is not a command of 'tether settings'; the commands are get, set"),
        (["dead-letters", "purge", "-h"], "'purge' is not a command of 'tether dead-letters'"),
    ])
    func unknownCommand(arguments: [String], message: String) {
        do {
            _ = try TetherRootCommand.parseAsRoot(arguments)
            Issue.record("\(arguments) parsed")
        } catch {
            #expect(TetherRootCommand.exitCode(for: error) == .validationFailure, "\(arguments)")
            #expect(TetherRootCommand.fullMessage(for: error).contains(message), "\(TetherRootCommand.fullMessage(for: error))")
        }
    }

    @Test("help for real commands still is help", arguments: [
        ["--help"], ["-h"], ["help"], ["help", "settings"], ["settings", "--help"], ["settings", "get", "--help"],
        ["replay", "--help"],
    ])
    func realHelp(arguments: [String]) throws {
        // argument-parser answers a help request with its built-in `help` command, which prints the help when run.
        let command = try TetherRootCommand.parseAsRoot(arguments)
        #expect(type(of: command)._commandName == "help", "\(arguments) parsed as \(type(of: command))")
    }

    @Test("the built tether exits 2 on an unknown command, with the message on stderr and no help")
    func builtBinary() async throws {
        let unknown = try await TetherProcess.run(["UNKNOWN", "--help"])
        #expect(unknown.status == 2)
        #expect(unknown.standardError.contains("'UNKNOWN' is not a command of 'tether'"), "\(unknown.standardError)")
        #expect(unknown.standardOutput.isEmpty)
        let help = try await TetherProcess.run(["--help"])
        #expect(help.status == 0)
        #expect(help.standardOutput.contains("Exit status:"))
    }

    @Test("tether replay on a transcript starting past 2262 exits 2 with the line, not a trap")
    func replayFarFuture() async throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("far-\(UUID().uuidString).transcript").path
        defer { try? FileManager.default.removeItem(atPath: path) }
        for start in ["2263-01-01T00:00:00Z", "9999-12-31T23:59:59Z"] {
            try "transcript 1\nfirmware 1.4.2\nstart \(start)\n0.000000 connect mtu=23\n1.000000 end\n"
                .write(toFile: path, atomically: true, encoding: .utf8)
            let result = try await TetherProcess.run(["replay", path])
            #expect(result.status == 2, "\(start): status \(result.status), \(result.standardError)")
            #expect(result.standardError.contains("tether replay: \(path):3: `start` \(start) is out of range"), "\(result.standardError)")
        }
    }
}
