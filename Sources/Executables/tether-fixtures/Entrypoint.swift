import ArgumentParser
import Foundation
import TetherFixtures
import TetherReplay

/// `tether-fixtures generate DIR`: records every scenario with the firmware model and writes NAME.transcript and
/// NAME.expected.json. Run once per new firmware behaviour; the files it writes are then fixed test inputs.
@main
struct TetherFixtures: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "tether-fixtures",
        abstract: "Record Firmware-fixtures/ transcripts from the firmware model.")

    @Argument(help: "Directory to write into.")
    var directory: String

    @Option(help: "Only scenarios whose name contains this.")
    var only: String?

    @Flag(help: "Rewrite only the expected outcomes of existing transcripts (after a deliberate gateway change).")
    var expectedOnly = false

    func run() throws {
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let generator = FixtureGenerator(directory: directory)
        for scenario in FixtureScenario.all where only.map({ scenario.name.contains($0) }) ?? true {
            let summary = expectedOnly ? try generator.rewriteExpected(scenario) : try generator.record(scenario)
            print(summary)
        }
        if !expectedOnly {
            // The transcripts are pinned (Firmware-fixtures/SHA256SUMS) and described by hand-written spec files.
            print("Transcripts rewritten: FixtureSpecTests fails until they pass `tools/linkspec.py check`, their NAME.spec.json files are reviewed and SHA256SUMS is re-pinned (Firmware-fixtures/README.md).")
        }
    }
}
