import ArgumentParser
import Foundation

/// The `tether` executable's main: parses, runs, and turns every way out into a documented exit status.
///
/// argument-parser exits 64 (EX_USAGE) on a usage error; Tether's contract is 2 for usage (TetherRootCommand's
/// discussion), so parsing errors are mapped here rather than in each command.
public enum TetherMain {
    public static func run(_ arguments: [String]) async -> Int32 {
        do {
            var command = try TetherRootCommand.parseAsRoot(arguments)
            if var asyncCommand = command as? AsyncParsableCommand {
                try await asyncCommand.run()
            } else {
                try command.run()
            }
            return 0
        } catch {
            let code = TetherRootCommand.exitCode(for: error)
            let message = TetherRootCommand.fullMessage(for: error)
            if code == .validationFailure {
                standardError(message)
                return TetherExitCode.badInput.rawValue
            }
            if code.isSuccess {
                if !message.isEmpty { print(message) }
                return 0
            }
            if !message.isEmpty { standardError(message) }
            return code.rawValue
        }
    }
}
