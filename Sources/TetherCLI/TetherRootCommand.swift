import ArgumentParser

/// `tether`: the field technician's tool. Later issues add scan, pair, devices, settings, status, outbox, ota
/// and health; each subcommand lives in its own file.
public struct TetherRootCommand: AsyncParsableCommand {
    public static let configuration = CommandConfiguration(
        commandName: "tether",
        abstract: "Tether gateway command-line tool.",
        discussion: "Exit status: 0 success, 1 a check failed (for example a replay that does not match --expect), 2 bad input (usage, unreadable or malformed files).",
        subcommands: [ReplayCommand.self]
    )

    public init() {}
}

/// Stable exit codes shared by every subcommand.
public enum TetherExitCode {
    /// A check the user asked for did not hold.
    public static let checkFailed = ExitCode(1)
    /// The input could not be used: a file is missing, malformed or of the wrong kind.
    public static let badInput = ExitCode(2)
}
