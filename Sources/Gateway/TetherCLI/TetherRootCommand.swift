import ArgumentParser

/// `tether`: the field technician's tool. Every command but `replay`, `health decode` and `firmware inspect` is a client of tetherd's control API
/// (docs/specs/control-api.md); each subcommand lives in its own file and stays thin: call, render, exit.
public struct TetherRootCommand: AsyncParsableCommand {
    public static let configuration = CommandConfiguration(
        commandName: "tether",
        abstract: "Tether gateway command-line tool.",
        discussion: """
            Most commands talk to tetherd over D-Bus (--bus, default $TETHER_BUS_ADDRESS, else the system bus); \
            'replay', 'health decode' and 'firmware inspect' work on their input alone, without tetherd. Read \
            commands take --json. Commands that change the gateway need root or the 'tether' group.

            Exit status:
              0  success
              1  the operation failed (refused by tetherd, pairing failed, check failed)
              2  usage: a bad argument or unreadable input
              3  tetherd is not reachable (no bus, not running, not answering)
              4  access denied by the bus policy
              5  no such device, dead letter or conflict
            """,
        subcommands: [
            StatusCommand.self, DevicesCommand.self, ScanCommand.self, PairCommand.self, ForgetCommand.self,
            SettingsCommand.self, OutboxCommand.self, DeadLettersCommand.self, ConflictsCommand.self,
            SyncCommand.self, ReplayCommand.self, HealthCommand.self, FirmwareCommand.self,
        ]
    )

    public init() {}
}

/// Stable exit codes shared by every subcommand (documented in the root command's help and the man page).
public enum TetherExitCode {
    /// The operation failed: tetherd refused it, pairing failed, or a check the user asked for did not hold.
    public static let checkFailed = ExitCode(1)
    public static let operationFailed = ExitCode(1)
    /// Usage: a bad argument, or input that is missing, malformed or of the wrong kind.
    public static let badInput = ExitCode(2)
    /// tetherd cannot be reached: no bus, nobody owns io.tether.Gateway, or no answer in time.
    public static let daemonUnreachable = ExitCode(3)
    /// The bus policy refused the call.
    public static let accessDenied = ExitCode(4)
    /// The device, dead letter or conflict named does not exist.
    public static let notFound = ExitCode(5)
    /// `firmware update`: the device came back on its old image (the new one did not boot or was not confirmed).
    public static let firmwareReverted = ExitCode(6)
}
