import ArgumentParser
import Foundation
import Testing
@testable import TetherCLI

/// Every command's help text, compared with the committed copy in HelpSnapshots/. A change to a command, option or
/// help string fails here until the snapshots are updated on purpose:
/// `TETHER_UPDATE_HELP_SNAPSHOTS=1 swift test --filter HelpSnapshot`, then `scripts/dev/generate-cli-docs.sh`.
@Suite("tether help snapshots")
struct HelpSnapshotTests {
    static let commands: [(name: String, type: ParsableCommand.Type)] = [
        ("tether", TetherRootCommand.self),
        ("tether-status", StatusCommand.self),
        ("tether-devices", DevicesCommand.self),
        ("tether-scan", ScanCommand.self),
        ("tether-pair", PairCommand.self),
        ("tether-forget", ForgetCommand.self),
        ("tether-settings", SettingsCommand.self),
        ("tether-settings-get", SettingsCommand.Get.self),
        ("tether-settings-set", SettingsCommand.Set.self),
        ("tether-outbox", OutboxCommand.self),
        ("tether-outbox-list", OutboxCommand.List.self),
        ("tether-dead-letters", DeadLettersCommand.self),
        ("tether-dead-letters-list", DeadLettersCommand.List.self),
        ("tether-dead-letters-retry", DeadLettersCommand.Retry.self),
        ("tether-dead-letters-discard", DeadLettersCommand.Discard.self),
        ("tether-conflicts", ConflictsCommand.self),
        ("tether-conflicts-list", ConflictsCommand.List.self),
        ("tether-conflicts-resolve", ConflictsCommand.Resolve.self),
        ("tether-sync", SyncCommand.self),
        ("tether-replay", ReplayCommand.self),
        ("tether-health", HealthCommand.self),
        ("tether-health-decode", HealthCommand.Decode.self),
        ("tether-health-devices", HealthCommand.Devices.self),
        ("tether-health-samples", HealthCommand.Samples.self),
        ("tether-health-delete", HealthCommand.Delete.self),
        ("tether-health-correct", HealthCommand.Correct.self),
        ("tether-health-deletions", HealthCommand.Deletions.self),
        ("tether-health-projections", HealthCommand.Projections.self),
        ("tether-health-watch", HealthCommand.Watch.self),
        ("tether-health-backfill", HealthCommand.Backfill.self),
        ("tether-firmware", FirmwareCommand.self),
        ("tether-firmware-inspect", FirmwareCommand.Inspect.self),
        ("tether-firmware-update", FirmwareCommand.Update.self),
        ("tether-firmware-updates", FirmwareCommand.Updates.self),
        ("tether-firmware-list", FirmwareCommand.List.self),
        ("tether-firmware-echo", FirmwareCommand.Echo.self),
        ("tether-firmware-test", FirmwareCommand.Test.self),
        ("tether-firmware-confirm", FirmwareCommand.Confirm.self),
        ("tether-firmware-reset", FirmwareCommand.Reset.self),
        ("tether-firmware-erase", FirmwareCommand.Erase.self),
    ]

    static let directory = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("HelpSnapshots")

    @Test("each command's help matches its committed snapshot", arguments: commands.map(\.name))
    func snapshot(name: String) throws {
        let type = try #require(Self.commands.first { $0.name == name }?.type)
        let help = TetherRootCommand.helpMessage(for: type, columns: 100) + "\n"
        let file = Self.directory.appendingPathComponent(name + ".txt")
        if ProcessInfo.processInfo.environment["TETHER_UPDATE_HELP_SNAPSHOTS"] == "1" {
            try FileManager.default.createDirectory(at: Self.directory, withIntermediateDirectories: true)
            try help.write(to: file, atomically: true, encoding: .utf8)
            return
        }
        let committed = try String(contentsOf: file, encoding: .utf8)
        #expect(
            help == committed,
            "help of '\(name)' changed; if on purpose: TETHER_UPDATE_HELP_SNAPSHOTS=1 swift test --filter HelpSnapshot, then scripts/dev/generate-cli-docs.sh")
    }

    @Test("every subcommand in the tree has a snapshot")
    func everyCommandCovered() {
        func walk(_ type: ParsableCommand.Type) -> [ParsableCommand.Type] {
            [type] + type.configuration.subcommands.flatMap(walk)
        }
        let inTree = Set(walk(TetherRootCommand.self).map { ObjectIdentifier($0) })
        let covered = Set(Self.commands.map { ObjectIdentifier($0.type) })
        #expect(inTree == covered)
    }
}
