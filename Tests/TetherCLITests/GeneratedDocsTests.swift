import Foundation
import Testing

/// The committed completions and the command-tree dump the man page is generated from must match what the built
/// `tether` produces (scripts/dev/generate-cli-docs.sh regenerates all of them, and `--check` compares the man page).
@Suite("tether generated docs are current")
struct GeneratedDocsTests {
    static let root = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    @Test(
        "completion scripts and the man page's source match the command tree",
        arguments: [
            (["--generate-completion-script", "bash"], "deploy/completions/tether.bash"),
            (["--generate-completion-script", "zsh"], "deploy/completions/_tether"),
            (["--generate-completion-script", "fish"], "deploy/completions/tether.fish"),
            (["--experimental-dump-help"], "docs/man/tether.help.json"),
        ])
    func current(arguments: [String], file: String) async throws {
        let result = try await TetherProcess.run(arguments)
        #expect(result.status == 0)
        let committed = try String(contentsOf: Self.root.appendingPathComponent(file), encoding: .utf8)
        var produced = result.standardOutput
        if file.hasSuffix(".json") {
            // The script stores the dump pretty-printed with sorted keys; compare the parsed values.
            let left = try JSONSerialization.jsonObject(with: Data(produced.utf8)) as? NSDictionary
            let right = try JSONSerialization.jsonObject(with: Data(committed.utf8)) as? NSDictionary
            #expect(left != nil && left == right, "\(file) is out of date: run scripts/dev/generate-cli-docs.sh")
            return
        }
        if !produced.hasSuffix("\n") { produced += "\n" }
        #expect(produced == committed, "\(file) is out of date: run scripts/dev/generate-cli-docs.sh")
    }

    @Test("the man page documents every subcommand and the exit status")
    func manPage() throws {
        let page = try String(contentsOf: Self.root.appendingPathComponent("docs/man/tether.1"), encoding: .utf8)
        for command in ["status", "devices", "scan", "pair", "forget", "settings", "outbox", "dead-letters", "conflicts", "sync", "replay", "health", "firmware"] {
            #expect(page.contains(".It Em \(command)"), "docs/man/tether.1 lacks \(command)")
        }
        #expect(page.contains("3  tetherd is not reachable"))
    }
}
